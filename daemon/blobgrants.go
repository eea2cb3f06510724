package daemon

import (
	"context"
	"io"
	"sync"

	"github.com/vfsd/vfsd/vfs"
)

// Bounds of the blob grant sets: the oldest grants are forgotten first.
const (
	maxSessionBlobGrants = 8192
	maxSharedBlobGrants  = 1 << 16
)

// blobGrants is a bounded set of blobs a reader was given: for a session,
// those its token uploaded and those its tools returned; for the daemon,
// those the admin uploaded, which any session may read. Knowing a blob's
// hash is not enough to read it with a session token: a hash names content
// that may be another session's, and answering for it would confirm a
// guess of that content. Grants live in memory: after a restart a session
// asks its tool again for a blob it needs.
type blobGrants struct {
	mu    sync.Mutex
	max   int
	set   map[vfs.Hash]struct{}
	order []vfs.Hash // oldest first
}

// add grants h.
func (g *blobGrants) add(h vfs.Hash) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.set[h]; ok {
		return
	}
	if g.set == nil {
		g.set = make(map[vfs.Hash]struct{})
	}
	limit := g.max
	if limit <= 0 {
		limit = maxSessionBlobGrants
	}
	for len(g.order) >= limit {
		delete(g.set, g.order[0])
		g.order = g.order[1:]
	}
	g.set[h] = struct{}{}
	g.order = append(g.order, h)
}

// has reports whether h is granted.
func (g *blobGrants) has(h vfs.Hash) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.set[h]
	return ok
}

// callerEntry returns the open session a session token acts for; nil
// for the admin, or when that session is closed.
func (d *Daemon) callerEntry(p Caller) *entry {
	if p.Admin {
		return nil
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if e := d.sessions[p.Session]; e != nil && (e.s != nil || e.stored) {
		return e
	}
	return nil
}

// mayReadBlob reports whether session e's token may read blob h.
func (d *Daemon) mayReadBlob(e *entry, h vfs.Hash) bool {
	return e.blobs.has(h) || d.sharedBlobs.has(h)
}

// sessionBlobs is the blob store a session's tools see: what they store is
// granted to the session; a blob they open (a blob_ref) must be granted to
// it or shared by the admin, and any other answers as one that does not
// exist.
type sessionBlobs struct {
	vfs.BlobStore
	d *Daemon
	e *entry
}

// Put stores the blob and grants it to the session.
func (b sessionBlobs) Put(ctx context.Context, r io.Reader, deferred bool) (vfs.Hash, int64, func(), error) {
	h, n, unpin, err := b.BlobStore.Put(ctx, r, deferred)
	if err == nil {
		b.e.blobs.add(h)
	}
	return h, n, unpin, err
}

// Open opens a blob the session may read.
func (b sessionBlobs) Open(ctx context.Context, h vfs.Hash) (vfs.Blob, error) {
	if !b.d.mayReadBlob(b.e, h) {
		return nil, &vfs.Error{Op: "open blob", Path: h.String(), Code: vfs.CodeNotFound, Msg: "no such blob"}
	}
	return b.BlobStore.Open(ctx, h)
}
