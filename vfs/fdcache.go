package vfs

import (
	"container/list"
	"os"
	"sync"

	"github.com/vfsd/vfsd/internal/osfile"
)

// fdCache bounds how many upper files keep a descriptor open at once,
// process-wide: a session may have far more files written through handles
// than the process may open. Descriptors are opened on demand and the least
// recently used idle ones closed. A descriptor is never closed while in use:
// users hold the upper file's mu, and eviction only takes upper files whose
// mu it can lock at once.
type fdCache struct {
	mu  sync.Mutex
	lru list.List // *upperFile, most recently used first
	max int
}

var upperFDs = newFDCache()

// newFDCache sizes the cache to a quarter of the descriptor limit, at most
// 4096: the rest is for journals, blobs, sockets and FUSE.
func newFDCache() *fdCache {
	limit := 4096
	if n := fdLimit(); n > 0 {
		limit = min(limit, max(int(n/4), 16))
	}
	return &fdCache{max: limit}
}

// file returns uf's descriptor, opening it if needed. The caller holds uf.mu
// (shared or exclusive), which keeps the descriptor open until released.
func (uf *upperFile) file() (*os.File, error) {
	uf.fmu.Lock()
	defer uf.fmu.Unlock()
	if uf.f != nil {
		upperFDs.touch(uf)
		return uf.f, nil
	}
	// A frozen file is never written again, and may be read-only by now
	// (a blob's other name: see Session.sealOne).
	flag := os.O_RDWR
	if uf.frozen {
		flag = os.O_RDONLY
	}
	f, err := osfile.OpenFile(uf.path, flag, 0)
	if err != nil {
		return nil, err
	}
	uf.f = f
	upperFDs.add(uf)
	return f, nil
}

func (c *fdCache) touch(uf *upperFile) {
	c.mu.Lock()
	if uf.elem != nil {
		c.lru.MoveToFront(uf.elem)
	}
	c.mu.Unlock()
}

// add records a newly opened descriptor and closes idle ones beyond the
// limit.
func (c *fdCache) add(uf *upperFile) {
	c.mu.Lock()
	uf.elem = c.lru.PushFront(uf)
	var victims []*upperFile
	for e := c.lru.Back(); e != nil && c.lru.Len()-len(victims) > c.max; {
		prev := e.Prev()
		v := e.Value.(*upperFile)
		if v != uf && v.mu.TryLock() {
			if v.fmu.TryLock() {
				c.lru.Remove(e)
				v.elem = nil
				victims = append(victims, v)
			} else {
				v.mu.Unlock()
			}
		}
		e = prev
	}
	c.mu.Unlock()
	for _, v := range victims {
		v.f.Close()
		v.f = nil
		v.fmu.Unlock()
		v.mu.Unlock()
	}
}

// remove forgets uf's descriptor; the caller closes it.
func (c *fdCache) remove(uf *upperFile) {
	c.mu.Lock()
	if uf.elem != nil {
		c.lru.Remove(uf.elem)
		uf.elem = nil
	}
	c.mu.Unlock()
}

// SetUpperFDLimit sets how many upper files may keep a descriptor open and
// returns the previous limit. The default is a quarter of the process's
// descriptor limit, at most 4096.
func SetUpperFDLimit(n int) int {
	upperFDs.mu.Lock()
	defer upperFDs.mu.Unlock()
	old := upperFDs.max
	upperFDs.max = max(n, 1)
	return old
}
