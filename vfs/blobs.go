package vfs

import (
	"context"
	"errors"
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

// FetchingBlobStore is implemented by blob stores some of whose blobs are
// elsewhere until first read (a repository with a remote). A session reads
// such a store with OpenLocal while it holds its lock, and fetches what is
// missing with Fetch after letting go of it, so that a slow remote holds up
// only the reads that need it: never a write, nor a read of local content.
type FetchingBlobStore interface {
	BlobStore
	// OpenLocal opens blob h if it is stored here, at once; otherwise it
	// fails with an error matching ErrNotLocal (or ErrNotFound when no
	// such blob exists anywhere it knows to look).
	OpenLocal(ctx context.Context, h Hash) (Blob, error)
	// Fetch brings blob h here, waiting as long as ctx allows.
	Fetch(ctx context.Context, h Hash) error
}

// ErrNotLocal is the error FetchingBlobStore.OpenLocal's matches when the
// blob must be fetched first.
var ErrNotLocal = errors.New("blob is not local yet")

// notLocalError says that content a locked attempt needed is blob, which
// must be fetched with the lock released (fetchThen).
type notLocalError struct{ blob Hash }

func (e *notLocalError) Error() string { return "blob " + e.blob.Short() + " is not local yet" }
func (e *notLocalError) Unwrap() error { return ErrNotLocal }

// FileBlobStore is implemented by blob stores that can store a local
// file's content without copying it through the process: by taking the
// file itself (a hard link) when nobody writes it any more, by a clone
// where the filesystem shares extents, and by a copy only otherwise.
// Sessions seal their upper files through it.
type FileBlobStore interface {
	BlobStore
	// PutFile stores the content of f, an open regular file, and returns
	// its hash and size; the blob is durable and pinned as Put's.
	PutFile(ctx context.Context, f *os.File, opts PutFileOptions) (h Hash, size int64, unpin func(), err error)
}

// PutFileOptions tune FileBlobStore.PutFile.
type PutFileOptions struct {
	// Frozen says nobody writes the file any more, nor ever will, through
	// any descriptor (a sealed upper file): the store may then take the
	// file itself as the blob. It becomes read-only, and none of its names
	// may be written, truncated or chmodded afterwards.
	Frozen bool
	// Deferred defers durability to the next Sync, as Put's deferred.
	Deferred bool
	// Observe, when set, is written the content as it is hashed, in order
	// (holes as zeros), so that the caller can sniff it in the same pass.
	Observe io.Writer
}
