package snapshot

import (
	"context"
	"io"

	"github.com/vfsd/vfsd/vfs"
)

// PackStore is implemented by remote stores that hold blob packs (see
// blobpack.go) beside their objects: a repository whose remote is one
// pushes small blobs in packs and reads them back by range. Pack names are
// the hashes of their headers, not of their whole content, so packs are
// kept apart from the content-addressed namespaces.
type PackStore interface {
	// PutPack stores a pack of size bytes read from r under name, over
	// whatever the name held. A reader that fails fails PutPack, and no
	// pack is stored.
	PutPack(ctx context.Context, name vfs.Hash, size int64, r io.Reader) (ObjectInfo, error)
	// ReadPack returns n bytes of pack name from off, read whole, and the
	// ETag of the object they were read from. A missing pack is an error
	// matching vfs.ErrNotFound; a pack shorter than off+n, one matching
	// io.ErrUnexpectedEOF.
	ReadPack(ctx context.Context, name vfs.Hash, off, n int64) ([]byte, string, error)
	// ListPacks calls fn for every pack, in no particular order, until fn
	// returns an error, which ListPacks returns.
	ListPacks(ctx context.Context, fn func(ObjectInfo) error) error
	// DeletePack removes a pack; a missing one is not an error.
	DeletePack(ctx context.Context, name vfs.Hash) error
}
