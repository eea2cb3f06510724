package snapshot

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/vfsd/vfsd/vfs"
)

// Reading packed blobs.
//
// A blob the remote holds in a pack is fetched with the blobs after it: a
// ranged GET of a window of the pack (packFirstWindowBytes, then
// packWindowBytes reading ahead, or the whole pack for a prefetch), each
// blob in it checked against its hash. What checks out is kept in the
// pack cache — one file per window in StateDir ("pack-cache/NAME.N") —
// rather than as a file per blob: fifty thousand small files cost more to
// create on many file systems than to download. The local store's reads look there after
// the store itself (openLocalObject); what must be a file of the local
// store (an overlay mount's blobs, HoldLocal) is copied out of it.
//
// Reading a pack in order reads ahead: once a reader is halfway through
// the last window fetched of a pack, the next window is fetched in the
// background. Concurrent fetches of one window share it.
//
// The pack cache counts against RemoteOptions.CacheBytes with the fetched
// blobs, in the same LRU; eviction removes a window's file whole (a reader
// that has it open keeps reading it), never the one just fetched, so the
// cache passes its bound by at most one window, and a window is at most a
// sixteenth of the cache. It does not survive a restart: the directory is
// emptied when the remote is set.

// How much of a pack a read fetches at once: a read that is not reading
// ahead fetches packFirstWindowBytes (its caller waits for the whole
// window: the first call after a fork should not wait for 4 MiB), reading
// ahead fetches packWindowBytes.
const (
	packFirstWindowBytes = 256 << 10
	packWindowBytes      = 4 << 20
)

// cachedWindow is a window's file in the pack cache: the verified blobs
// of a window of a pack, at their offsets from the window's start. Readers
// and writers use its descriptor, never its path: once evicted, the file
// is unlinked at once and closed when the last of them is done. Its fields
// are guarded by remoteLink.cacheMu.
type cachedWindow struct {
	pack    *remotePack // fetched from
	path    string
	f       *os.File
	start   int64 // the pack offset of the file's first byte
	refs    int   // readers using f
	evicted bool  // unlinked: f is closed when refs drops to 0
	bytes   int64
	blobs   []vfs.Hash
	elem    *list.Element // in remoteLink.lru
}

// cachedBlob is where a verified blob is in the pack cache: in which
// window's file, at which entry of its pack.
type cachedBlob struct {
	win       *cachedWindow
	i         int
	off, size int64 // in the pack
}

// readingAhead is where reading a pack in order stands: the window after
// the last one fetched in order starts at entry nextFrom; a read at entry
// aheadAt or later starts it (-1: none due).
type readingAhead struct {
	nextFrom, aheadAt int
}

// packWindow is a fetch of entries [from, to) of a pack in flight.
type packWindow struct {
	pack     *remotePack
	from, to int
	done     chan struct{}
	err      error
	// wrong lists the blobs of the window that did not match their hash;
	// set before done is closed.
	wrong map[vfs.Hash]bool
}

// packCache is the remote link's cache of packed blobs; its maps are
// guarded by remoteLink.cacheMu, its windows by winMu.
type packCache struct {
	dir   string
	blobs map[vfs.Hash]cachedBlob
	files map[*cachedWindow]struct{}
	reads map[vfs.Hash]*readingAhead // by pack name
	seq   int                        // names the files

	winMu   sync.Mutex
	windows map[vfs.Hash][]*packWindow // by pack name

	ahead     sync.WaitGroup // read-aheads running
	stopped   bool           // guarded by winMu: no read-ahead starts
	aheadCtx  context.Context
	stopAhead context.CancelFunc // at close: a stalled remote holds up no shutdown
}

// openPackCache empties and opens the pack cache in dir.
func openPackCache(dir string) (*packCache, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("pack cache: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pack cache: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &packCache{dir: dir, blobs: map[vfs.Hash]cachedBlob{}, files: map[*cachedWindow]struct{}{},
		reads: map[vfs.Hash]*readingAhead{}, windows: map[vfs.Hash][]*packWindow{},
		aheadCtx: ctx, stopAhead: cancel}, nil
}

// close stops the read-aheads, waits for them, and closes the files.
func (pc *packCache) close() {
	pc.winMu.Lock()
	pc.stopped = true
	pc.winMu.Unlock()
	pc.stopAhead()
	pc.ahead.Wait()
	for cw := range pc.files {
		cw.f.Close()
	}
}

// openCached opens blob h from the pack cache, if it is there; a read far
// enough into the last window fetched starts the next.
func (r *Repo) openCached(h vfs.Hash) (vfs.Blob, bool) {
	l := r.remote
	pc := l.pcache
	l.cacheMu.Lock()
	cb, ok := pc.blobs[h]
	from := -1
	if ok {
		cb.win.refs++
		l.lru.MoveToFront(cb.win.elem)
		if ra := pc.reads[cb.win.pack.name]; ra != nil && ra.aheadAt >= 0 && cb.i >= ra.aheadAt {
			ra.aheadAt = -1
			from = ra.nextFrom
		}
	}
	l.cacheMu.Unlock()
	if !ok {
		return nil, false
	}
	if from >= 0 && from < len(cb.win.pack.blobs) {
		r.readAhead(cb.win.pack, from)
	}
	cw := cb.win
	return &fileSection{SectionReader: io.NewSectionReader(cw.f, cb.off-cw.start, cb.size), release: func() { l.release(cw) }}, true
}

// release ends a use of cw's descriptor, closing it if cw was evicted and
// this was the last.
func (l *remoteLink) release(cw *cachedWindow) {
	l.cacheMu.Lock()
	cw.refs--
	last := cw.evicted && cw.refs == 0
	l.cacheMu.Unlock()
	if last {
		cw.f.Close()
	}
}

// readAhead fetches the window of p from entry from in the background.
func (r *Repo) readAhead(p *remotePack, from int) {
	pc := r.remote.pcache
	pc.winMu.Lock()
	if pc.stopped {
		pc.winMu.Unlock()
		return
	}
	pc.ahead.Add(1)
	pc.winMu.Unlock()
	go func() {
		defer pc.ahead.Done()
		ctx, cancel := context.WithTimeout(pc.aheadCtx, 10*time.Minute)
		defer cancel()
		_ = r.fetchPacked(ctx, packLoc{p, from}, packWindowBytes)
	}()
}

// fileSection is a blob kept at an offset of a pack cache's file; Close
// ends its use of the file.
type fileSection struct {
	*io.SectionReader
	release func() // called once, at Close
	once    sync.Once
}

func (s *fileSection) Close() error {
	s.once.Do(s.release)
	return nil
}

// errPackGone is the error of a fetch from a pack the remote no longer
// has (a garbage collection repacked or deleted it): the caller lists the
// packs again.
var errPackGone = errors.New("the pack is gone from the remote")

// fetchPacked makes the blob at loc readable from the pack cache,
// fetching a window of its pack of up to limit bytes from it, unless a
// fetch in flight covers it.
func (r *Repo) fetchPacked(ctx context.Context, loc packLoc, limit int64) error {
	l := r.remote
	pc := l.pcache
	h := loc.blob().hash
	for range 3 {
		if l.hasCached(h) {
			return nil
		}
		w, run := pc.window(l, loc, limit)
		if run {
			go func() {
				wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Minute)
				w.err = r.runWindow(wctx, w)
				cancel()
				pc.winMu.Lock()
				if ws := slices.DeleteFunc(pc.windows[w.pack.name], func(x *packWindow) bool { return x == w }); len(ws) > 0 {
					pc.windows[w.pack.name] = ws
				} else {
					delete(pc.windows, w.pack.name)
				}
				pc.winMu.Unlock()
				close(w.done)
			}()
		}
		select {
		case <-w.done:
		case <-ctx.Done():
			return fmt.Errorf("fetch blob %s: %w", h.Short(), ctx.Err())
		}
		if w.err != nil {
			return w.err
		}
		if l.hasCached(h) {
			return nil
		}
		if w.wrong[h] {
			return fmt.Errorf("blob %s in pack %s: %w", h.Short(), loc.pack.name.Short(), ErrCorruptObject)
		}
		// Fetched and evicted before this reader got to it: again.
	}
	return fmt.Errorf("blob %s in pack %s: fetched, then evicted before it was read; the cache (--remote-cache-bytes) is too small for the reads in flight", h.Short(), loc.pack.name.Short())
}

// hasCached reports whether the pack cache holds blob h.
func (l *remoteLink) hasCached(h vfs.Hash) bool {
	l.cacheMu.Lock()
	defer l.cacheMu.Unlock()
	_, ok := l.pcache.blobs[h]
	return ok
}

// window returns the fetch in flight covering loc, or registers a new one
// from loc on (run: the caller runs it): up to limit bytes, stopping
// before a blob cached or covered by another fetch.
func (pc *packCache) window(l *remoteLink, loc packLoc, limit int64) (w *packWindow, run bool) {
	pc.winMu.Lock()
	defer pc.winMu.Unlock()
	p := loc.pack
	covered := func(i int) *packWindow {
		for _, w := range pc.windows[p.name] {
			if i >= w.from && i < w.to {
				return w
			}
		}
		return nil
	}
	if w := covered(loc.i); w != nil {
		return w, false
	}
	// A window is at most a sixteenth of the cache, so that the reads in
	// flight do not evict each other's blobs before they are read.
	limit = min(limit, l.opts.CacheBytes/16)
	l.cacheMu.Lock()
	to, bytes := loc.i, int64(0)
	for to < len(p.blobs) {
		b := p.blobs[to]
		if to > loc.i {
			if _, ok := pc.blobs[b.hash]; ok || bytes+b.size > limit || covered(to) != nil {
				break
			}
		}
		bytes += b.size
		to++
	}
	l.cacheMu.Unlock()
	w = &packWindow{pack: p, from: loc.i, to: to, done: make(chan struct{})}
	pc.windows[p.name] = append(pc.windows[p.name], w)
	return w, true
}

// runWindow fetches window w with one ranged GET and keeps each blob in it
// that matches its hash.
func (r *Repo) runWindow(ctx context.Context, w *packWindow) error {
	l := r.remote
	ps, isPS := l.packStore()
	if !isPS {
		return errors.New("the remote keeps no packs")
	}
	p := w.pack
	first, last := p.blobs[w.from], p.blobs[w.to-1]
	start, end := first.off, last.off+last.size
	data, tag, err := ps.ReadPack(ctx, p.name, start, end-start)
	if errors.Is(err, vfs.ErrNotFound) {
		l.dropPack(p.name)
		return fmt.Errorf("read pack %s: %w", p.name.Short(), errPackGone)
	}
	if err != nil {
		return fmt.Errorf("read pack %s from %v: %w", p.name.Short(), l.store, err)
	}
	type good struct {
		i int
		b packBlob
	}
	var ok []good
	bad := false
	for i := w.from; i < w.to; i++ {
		b := p.blobs[i]
		if vfs.HashOf(data[b.off-start:b.off-start+b.size]) == b.hash {
			ok = append(ok, good{i, b})
		} else {
			bad = true
			l.dropGood(objKey{Blobs, b.hash})
			if w.wrong == nil {
				w.wrong = map[vfs.Hash]bool{}
			}
			w.wrong[b.hash] = true
		}
	}
	if bad {
		l.markBad(p)
	}
	if len(ok) == 0 {
		return nil
	}
	pc := l.pcache
	l.cacheMu.Lock()
	pc.seq++
	seq := pc.seq
	l.cacheMu.Unlock()
	path := filepath.Join(pc.dir, fmt.Sprintf("%s.%d", p.name, seq))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("pack cache: %w", err)
	}
	if !bad {
		_, err = f.WriteAt(data, 0)
	} else {
		for _, g := range ok {
			if _, err = f.WriteAt(data[g.b.off-start:g.b.off-start+g.b.size], g.b.off-start); err != nil {
				break
			}
		}
	}
	if err != nil {
		f.Close()
		_ = os.Remove(path)
		return fmt.Errorf("pack cache: %w", err)
	}
	cw := &cachedWindow{pack: p, path: path, f: f, start: start}
	l.cacheMu.Lock()
	for _, g := range ok {
		if _, dup := pc.blobs[g.b.hash]; dup {
			continue
		}
		pc.blobs[g.b.hash] = cachedBlob{win: cw, i: g.i, off: g.b.off, size: g.b.size}
		cw.blobs = append(cw.blobs, g.b.hash)
		cw.bytes += g.b.size
	}
	pc.files[cw] = struct{}{}
	cw.elem = l.lru.PushFront(cacheEntry{h: first.hash, size: cw.bytes, win: cw})
	l.bytes += cw.bytes
	ra := pc.reads[p.name]
	if ra == nil {
		ra = &readingAhead{aheadAt: -1}
		pc.reads[p.name] = ra
	}
	if w.from == ra.nextFrom || w.from == 0 {
		ra.nextFrom, ra.aheadAt = w.to, w.from+(w.to-w.from)/2
	}
	l.cacheMu.Unlock()
	l.fetched.Add(1)
	t := etagOf(tag)
	for _, g := range ok {
		l.markGoodIn(objKey{Blobs, g.b.hash}, g.b.size, t, false, p)
	}
	r.evict(ctx, first.hash, cw)
	return nil
}

// dropWindowLocked removes a window's file from the pack cache; cacheMu
// is held.
func (l *remoteLink) dropWindowLocked(cw *cachedWindow) {
	pc := l.pcache
	for _, h := range cw.blobs {
		if cb, ok := pc.blobs[h]; ok && cb.win == cw {
			delete(pc.blobs, h)
		}
	}
	delete(pc.files, cw)
	l.lru.Remove(cw.elem)
	l.bytes -= cw.bytes
	cw.evicted = true
	if cw.refs == 0 {
		cw.f.Close()
	}
	if err := os.Remove(cw.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		l.log.Warn("remote cache: could not remove a window's cached file", "path", cw.path, "err", err)
	}
}

// openPacked opens blob h from the pack cache, fetching a window of the
// pack that holds it first. packed is false when no pack this daemon knows
// of holds h; with list, it lists the packs again first unless a listing
// began after asked. A blob whose packs all hold something else fails
// with an error matching ErrCorruptObject.
func (r *Repo) openPacked(ctx context.Context, h vfs.Hash, list bool, asked time.Time) (b vfs.Blob, packed bool, err error) {
	l := r.remote
	if _, ok := l.packStore(); !ok {
		return nil, false, nil
	}
	var last *remotePack
	for range 3 {
		loc, ok := l.locate(h)
		if !ok && list {
			if err := l.refreshPacks(ctx, asked); err != nil {
				return nil, false, err
			}
			list = false
			loc, ok = l.locate(h)
		}
		if !ok {
			return nil, last != nil, nil
		}
		if loc.pack == last {
			break // marked bad, and no other copy
		}
		last = loc.pack
		err := r.fetchPacked(ctx, loc, packFirstWindowBytes)
		switch {
		case errors.Is(err, errPackGone):
			list, asked, last = true, time.Time{}, nil
			continue
		case errors.Is(err, ErrCorruptObject):
			continue
		case err != nil:
			return nil, true, err
		}
		if b, ok := r.openCached(h); ok {
			return b, true, nil
		}
	}
	return nil, true, fmt.Errorf("blob %s: every pack holding it holds something else: %w", h.Short(), ErrCorruptObject)
}
