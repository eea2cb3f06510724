package snapshot

import (
	"context"
	"io"

	"github.com/vfsd/vfsd/vfs"
)

// Namespace separates the kinds of objects a Store holds. Every object is
// named by the hash of its content.
type Namespace string

// The store's namespaces.
const (
	// Blobs holds file contents and directory manifests.
	Blobs Namespace = "blobs"
	// Records holds snapshot records, whose hashes are snapshot IDs.
	Records Namespace = "snapshots"
)

// Namespaces lists every namespace, in a fixed order.
var Namespaces = []Namespace{Blobs, Records}

// PutOptions tune one Put.
type PutOptions struct {
	// Deferred skips the per-object fsync; the object is durable only after
	// the next Sync. Bulk writers (imports, snapshots) defer and Sync once.
	Deferred bool
	// Absent says the caller has just seen that the store lacks the
	// object (a push that listed the remote), so a store may skip its own
	// check for it, one request per object on S3. Storing an object that
	// is there after all must stay harmless: it is the same content.
	Absent bool
}

// Store is a content-addressed object store. Objects are immutable: Put
// names content by its hash, never overwrites a different content under a
// name, and a stored object is never written again. Implementations are safe
// for concurrent use.
type Store interface {
	// Put stores r's content in ns and returns its hash and size. Storing
	// content that is already present succeeds and changes nothing.
	Put(ctx context.Context, ns Namespace, r io.Reader, opts PutOptions) (vfs.Hash, int64, error)
	// Open returns a reader for an object. A missing object is an error
	// matching vfs.ErrNotFound.
	Open(ctx context.Context, ns Namespace, h vfs.Hash) (vfs.Blob, error)
	// Stat returns an object's size, or an error matching vfs.ErrNotFound.
	Stat(ctx context.Context, ns Namespace, h vfs.Hash) (int64, error)
	// Delete removes an object. Deleting a missing object is not an error.
	Delete(ctx context.Context, ns Namespace, h vfs.Hash) error
	// List calls fn for every object in ns, in no particular order, until fn
	// returns an error, which List returns.
	List(ctx context.Context, ns Namespace, fn func(h vfs.Hash, size int64) error) error
	// Sync makes every object stored so far durable.
	Sync(ctx context.Context) error
	// Close releases the store's resources.
	Close() error
}
