package vfs

import (
	"context"
	"io"
	"os"
)

// BlobStore is what a session needs from the content-addressed store: put
// new content, read existing content. The snapshot package provides it.
type BlobStore interface {
	// Put stores r's content and returns its hash and size. The blob is
	// durable when Put returns, unless deferred: then only after the next
	// Sync. It is pinned against garbage collection until unpin is called;
	// callers unpin once a tree references the blob, or once they no longer
	// need it.
	Put(ctx context.Context, r io.Reader, deferred bool) (h Hash, size int64, unpin func(), err error)
	// Sync makes every blob put so far durable.
	Sync(ctx context.Context) error
	// Open returns a reader for the blob with hash h. Its error matches
	// ErrNotFound when no such blob exists.
	Open(ctx context.Context, h Hash) (Blob, error)
}

// Blob is an open, immutable blob.
type Blob interface {
	io.ReaderAt
	io.Closer
	Size() int64
}

// FileBlob is implemented by blobs backed by a local file; the engine uses
// the file for in-kernel copies (reflink, copy_file_range) and the FUSE
// mount for passthrough. The file must not be written to.
type FileBlob interface {
	Blob
	File() *os.File
}

// LocalBlobStore is implemented by blob stores that keep each blob in a
// local file; tools that run external programs over content (ripgrep) read
// the files in place instead of copying them out.
type LocalBlobStore interface {
	BlobStore
	// BlobPath returns the path of the file holding blob h, and false when
	// the store keeps h elsewhere or not at all. The file must not be
	// written to.
	BlobPath(h Hash) (string, bool)
}
