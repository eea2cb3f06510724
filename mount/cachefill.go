//go:build linux

package mount

import (
	"sync"

	gofs "github.com/hanwen/go-fuse/v2/fs"
)

// maxCacheFill is the largest file a read-only open hands the kernel whole
// (fillCache): source files, package.json, node modules. Larger files are
// read on demand, as the reader asks.
const maxCacheFill = 64 << 10

// fillBufs recycles the buffers fillCache reads content into.
var fillBufs = sync.Pool{New: func() any { b := make([]byte, maxCacheFill); return &b }}

// fillState tracks, per node, whether the kernel's page cache may be handed
// the node's content without a READ round trip (FUSE_NOTIFY_STORE), and
// keeps that from racing with anything that changes the content.
//
// A file written through the mount without the writeback cache leaves its
// last, partial page out of the kernel's cache, so the first read(2) after
// a clone, an untar or an npm install costs a READ round trip per file:
// for node's require() of a freshly unpacked node_modules that is one in
// four of all requests. A read-only open of a small file whose content the
// kernel was not handed since it last changed reads it (the open has the
// reader anyway) and stores it in the kernel's cache before replying, so
// the reads that follow hit the cache.
//
// Storing is only safe while nothing can change the content behind it:
//   - no open for writing through the mount (the kernel copies written
//     data into its cache itself; a write open waits for stores in
//     progress, and a store is skipped while one is open);
//   - every other change bumps gen before it is applied (a truncate by
//     path) or before its cache invalidation is sent (tool writes, other
//     mounts, restores), under mu: a store whose content was read at an
//     older gen is dropped, and one that went in first is invalidated.
type fillState struct {
	mu      sync.Mutex
	cond    sync.Cond // signalled when filling drops to zero; L is mu
	gen     uint64    // bumped by every change of the content
	filled  uint64    // gen+1 once the kernel was handed the content at gen
	writers int       // opens for writing through the mount
	filling int       // stores in progress
}

// fillStates are the mount's fill states by inode number: go-fuse keeps
// one kernel inode per number, but a node made for a create may be
// dropped for one it already had.
type fillStates struct {
	mu sync.Mutex
	m  map[uint64]*fillState
}

// get returns the fill state of inode ino, made if create; nil if there
// is none and !create.
func (fs *fillStates) get(ino uint64, create bool) *fillState {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.getLocked(ino, create)
}

func (fs *fillStates) getLocked(ino uint64, create bool) *fillState {
	f := fs.m[ino]
	if f == nil && create {
		if fs.m == nil {
			fs.m = make(map[uint64]*fillState)
		}
		f = &fillState{}
		f.cond.L = &f.mu
		fs.m[ino] = f
	}
	return f
}

// start begins a store into the cache of inode ino, unless the file is
// open for writing through the mount or the kernel was handed its content
// since it last changed: the state, and the generation of the content
// the store must read.
func (fs *fillStates) start(ino uint64) (*fillState, uint64, bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f := fs.getLocked(ino, true)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.writers > 0 || f.filled == f.gen+1 {
		return nil, 0, false
	}
	f.filling++
	return f, f.gen, true
}

// forget drops the state of inode ino once the kernel forgot the inode
// (it then caches none of its content) and nothing uses it.
func (fs *fillStates) forget(ino uint64) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if f := fs.m[ino]; f != nil {
		f.mu.Lock()
		if f.writers == 0 && f.filling == 0 {
			delete(fs.m, ino)
		}
		f.mu.Unlock()
	}
}

// contentChanging records that the node's content is about to change, or
// has changed and its cache invalidation is about to be sent.
func (n *node) contentChanging() {
	if f := n.m.fills.get(n.StableAttr().Ino, false); f != nil {
		f.mu.Lock()
		f.gen++
		f.mu.Unlock()
	}
}

// notifyContent invalidates the kernel's cached content and attributes of
// in, after recording the change for fillCache.
func notifyContent(in *gofs.Inode) {
	if n, ok := in.Operations().(*node); ok {
		n.contentChanging()
	}
	in.NotifyContent(0, 0)
}

// beginWrite records an open for writing of inode ino through the mount;
// it waits for stores in progress, so none lands after the kernel caches a
// write.
func (m *Mount) beginWrite(ino uint64) {
	f := m.fills.get(ino, true)
	f.mu.Lock()
	for f.filling > 0 {
		f.cond.Wait()
	}
	f.writers++
	f.gen++
	f.mu.Unlock()
}

// endWrite records that an open for writing of inode ino was released.
// The kernel's cache may now hold the written content less its partial
// last page: a later read-only open hands it the whole content again.
func (m *Mount) endWrite(ino uint64) {
	f := m.fills.get(ino, true)
	f.mu.Lock()
	f.writers--
	f.gen++
	f.mu.Unlock()
}

// OnForget drops the node's fill state: the kernel forgot the inode.
func (n *node) OnForget() { n.m.fills.forget(n.StableAttr().Ino) }

// fillCache hands the kernel the whole content r reads, when it is small,
// the kernel was not handed it since it last changed, and nobody has the
// file open for writing through the mount. Failures are ignored: the
// kernel then asks with READ as it would have.
func (n *node) fillCache(r *roFile) {
	size := r.r.Size()
	if size <= 0 || size > maxCacheFill || r.passthrough || n.m.opts.NoCacheFill {
		return
	}
	f, gen, ok := n.m.fills.start(n.StableAttr().Ino)
	if !ok {
		return
	}

	bp := fillBufs.Get().(*[]byte)
	buf := (*bp)[:size]
	nr, err := r.r.ReadAt(buf, 0)
	f.mu.Lock()
	if int64(nr) == size && (err == nil || isEOF(err)) && f.gen == gen && f.writers == 0 {
		if n.WriteCache(0, buf) == 0 {
			f.filled = gen + 1
		}
	}
	f.filling--
	if f.filling == 0 {
		f.cond.Broadcast()
	}
	f.mu.Unlock()
	fillBufs.Put(bp)
}
