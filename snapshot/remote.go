package snapshot

import (
	"bufio"
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vfsd/vfsd/vfs"
)

// A repository with a remote keeps everything it writes in its local store
// (sessions, their journals and upper files stay local too) and shares
// snapshots through the remote, a Store that several daemons use (S3: see
// package s3store):
//
//   - Push uploads a snapshot: its blobs, the records holding its
//     manifests, then its record last, so that a record in the remote
//     means everything it needs is there. Only what the remote lacks is
//     sent (a set difference of hashes), by RemoteOptions.Parallel workers.
//   - A snapshot, manifest or blob missing locally is fetched from the
//     remote on first use, verified against its hash, and kept in the
//     local store. Fetched blobs are a cache: bounded by CacheBytes, the
//     least recently used go first, never one that is pinned (a write in
//     flight uses it) and never one this daemon stored itself.
//   - Local content never waits for the remote: only a miss asks it.
//
// Remote garbage collection (RemoteGC) is a mark with a grace period; see
// its documentation.

// RemoteOptions configure a repository's remote.
type RemoteOptions struct {
	// CacheBytes bounds the blobs fetched from the remote that are kept
	// locally; DefaultRemoteCacheBytes when zero.
	CacheBytes int64
	// MaxObjectBytes is the largest object fetched from the remote: a
	// bucket object over it, whatever its name, is refused before it
	// reaches the disk. The larger of CacheBytes and 1 GiB when zero.
	MaxObjectBytes int64
	// Parallel is how many objects are uploaded or prefetched at once;
	// 16 when zero.
	Parallel int
	// Grace is the remote garbage collection's grace period: an object
	// younger than it is never deleted, and a push relies on the remote
	// holding an object only if it saw it there less than Grace/2 ago.
	// DefaultRemoteGrace when zero.
	Grace time.Duration
	// GCMaxEntries bounds the hashes remote garbage collection holds in
	// memory at once — the manifests it indexes, the blobs they reference,
	// the snapshots and the records it read — and GCMaxSpoolBytes the
	// manifests it copies to a temporary file (in StateDir, else the
	// system's) while it marks. Past either it stops before deleting
	// anything, with an error matching ErrRemoteGCRefused that names the
	// option. DefaultRemoteGCEntries (about 100 bytes each) and
	// DefaultRemoteGCSpoolBytes when zero.
	GCMaxEntries    int
	GCMaxSpoolBytes int64
	// StateDir, when set, keeps the queue of snapshots to push, so that a
	// push interrupted by a crash resumes when the repository is opened
	// again.
	StateDir string
	// Logger receives background push failures; slog.Default when nil.
	Logger *slog.Logger
	// OnPushed, when set, is called after each background push of a
	// snapshot succeeds, with the push loop's context: the daemon moves
	// the session's head in the fleet there.
	OnPushed func(ctx context.Context, id string)
}

// Remote defaults.
const (
	DefaultRemoteCacheBytes = 8 << 30
	DefaultRemoteGrace      = 24 * time.Hour
	// DefaultRemoteGCEntries: some 400 MB of memory at most.
	DefaultRemoteGCEntries    = 4_000_000
	DefaultRemoteGCSpoolBytes = 16 << 30
	defaultRemoteParallel     = 16
)

// remoteLink is a repository's remote and its local bookkeeping.
type remoteLink struct {
	store Store
	opts  RemoteOptions
	log   *slog.Logger

	fetchMu  sync.Mutex
	fetching map[objKey]*fetchCall

	cacheMu sync.Mutex
	lru     *list.List // of cacheEntry, most recently used first
	cached  map[vfs.Hash]*list.Element
	bytes   int64
	pcache  *packCache // packed blobs fetched (remote_packfetch.go)

	packs *packIndex // the remote's packs (remote_packs.go)

	gcMu    sync.Mutex // one remote garbage collection at a time: its memory is bounded per run
	listMu  sync.Mutex // one listing of the remote at a time (knownSet)
	knownMu sync.Mutex // known, knownAt, good and goodNew; never held while the remote is asked
	known   map[objKey]remoteObj
	knownAt time.Time // when the remote was last listed
	// good holds the objects of the remote whose content this daemon
	// knows is right (see remote_verify.go); goodNew, those marked since
	// the list in StateDir was last written.
	good    map[objKey]goodMark
	goodNew []objKey

	tempCache string // the pack cache's directory, removed at close, without a StateDir

	fetched  atomic.Int64 // objects fetched, for reports
	uploaded atomic.Int64 // objects uploaded

	queueMu sync.Mutex
	queue   []string // snapshot IDs waiting to be pushed
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	status  PushStatus
}

type objKey struct {
	ns Namespace
	h  vfs.Hash
}

type fetchCall struct {
	done chan struct{}
	err  error
}

type cacheEntry struct {
	h    vfs.Hash
	size int64
	win  *cachedWindow // a window's file in the pack cache, of size bytes, not a blob
}

// PushStatus tells how the background pushes stand.
type PushStatus struct {
	Pending   []string  `json:"pending"`              // snapshots waiting to be pushed
	LastError string    `json:"last_error,omitempty"` // why the last attempt failed
	LastPush  string    `json:"last_push,omitempty"`  // the last snapshot pushed
	LastTry   time.Time `json:"last_try,omitzero"`
	// LastReport is what the last successful background push did; nil
	// before the first.
	LastReport *PushReport `json:"last_report,omitempty"`
}

// SetRemote links the repository to a remote store. It resumes the pushes
// queued in opts.StateDir in the background. Call it once, before the
// repository is used.
func (r *Repo) SetRemote(remote Store, opts RemoteOptions) error {
	if opts.CacheBytes <= 0 {
		opts.CacheBytes = DefaultRemoteCacheBytes
	}
	if opts.Parallel <= 0 {
		opts.Parallel = defaultRemoteParallel
	}
	if opts.Grace <= 0 {
		opts.Grace = DefaultRemoteGrace
	}
	if opts.GCMaxEntries <= 0 {
		opts.GCMaxEntries = DefaultRemoteGCEntries
	}
	if opts.GCMaxSpoolBytes <= 0 {
		opts.GCMaxSpoolBytes = DefaultRemoteGCSpoolBytes
	}
	l := &remoteLink{
		store: remote, opts: opts, log: opts.Logger,
		fetching: make(map[objKey]*fetchCall),
		lru:      list.New(), cached: make(map[vfs.Hash]*list.Element),
		good: make(map[objKey]goodMark), packs: newPackIndex(),
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	if l.log == nil {
		l.log = slog.Default()
	}
	if opts.StateDir != "" {
		if err := os.MkdirAll(opts.StateDir, 0o700); err != nil {
			return fmt.Errorf("remote state: %w", err)
		}
		q, err := readQueue(l.queuePath())
		if err != nil {
			return err
		}
		l.queue = q
		if err := l.loadCache(r); err != nil {
			return err
		}
		if err := l.loadGood(); err != nil {
			return err
		}
	}
	cacheDir := filepath.Join(opts.StateDir, "pack-cache")
	if opts.StateDir == "" {
		d, err := os.MkdirTemp("", "vfsd-pack-cache-")
		if err != nil {
			return fmt.Errorf("pack cache: %w", err)
		}
		cacheDir, l.tempCache = d, d
	}
	pc, err := openPackCache(cacheDir)
	if err != nil {
		return err
	}
	l.pcache = pc
	r.remote = l
	pending := len(l.queue) > 0 // read before pushLoop may change the queue
	go r.pushLoop()
	if pending {
		l.kick()
	}
	return nil
}

// Remote returns the repository's remote store, or nil.
func (r *Repo) Remote() Store {
	if r.remote == nil {
		return nil
	}
	return r.remote.store
}

// closeRemote stops the background pushes and saves the cache's list.
func (r *Repo) closeRemote() {
	l := r.remote
	if l == nil {
		return
	}
	select {
	case <-l.stop:
		return
	default:
	}
	close(l.stop)
	<-l.done
	l.pcache.close()
	if l.tempCache != "" {
		_ = os.RemoveAll(l.tempCache)
	}
	if l.opts.StateDir != "" {
		if err := l.saveCache(); err != nil {
			l.log.Warn("remote: could not save the cache list; its blobs stay local until garbage collection", "err", err)
		}
		if err := l.saveGood(); err != nil {
			l.log.Warn("remote: could not save the list of verified remote objects; the next pushes check them again", "err", err)
		}
	}
}

// CappedOpener is implemented by stores that can refuse an object larger
// than a bound before reading it: a remote's, where an object may be any
// size, whatever its name promises.
type CappedOpener interface {
	// OpenCapped is Open, except that an object larger than max fails
	// with an error matching vfs.ErrTooLarge, having read at most max+1
	// bytes of it.
	OpenCapped(ctx context.Context, ns Namespace, h vfs.Hash, max int64) (vfs.Blob, error)
}

// minFetchCap is the least default fetchCap: with a cache smaller than
// this, a single object may still be up to this size (it is evicted after
// use).
const minFetchCap = 1 << 30

// fetchCap is the largest object fetched from the remote
// (RemoteOptions.MaxObjectBytes).
func (l *remoteLink) fetchCap() int64 {
	if l.opts.MaxObjectBytes > 0 {
		return l.opts.MaxObjectBytes
	}
	return max(l.opts.CacheBytes, minFetchCap)
}

// openCapped opens an object of the remote no larger than fetchCap: a
// bucket object bigger than that, whatever its name, must not fill the
// local disk (or memory) before its hash shows it is not what it claims to
// be.
func (l *remoteLink) openCapped(ctx context.Context, ns Namespace, h vfs.Hash) (vfs.Blob, error) {
	limit := l.fetchCap()
	if co, ok := l.store.(CappedOpener); ok {
		return co.OpenCapped(ctx, ns, h, limit)
	}
	b, err := l.store.Open(ctx, ns, h)
	if err == nil && b.Size() > limit {
		b.Close()
		return nil, fmt.Errorf("%s %s is %d bytes, over %d: %w", objectNoun(ns), h.Short(), b.Size(), limit, vfs.ErrTooLarge)
	}
	return b, err
}

// errRemote wraps a failure of the remote for an object that is not local.
func (l *remoteLink) errRemote(ns Namespace, h vfs.Hash, err error) error {
	if errors.Is(err, vfs.ErrTooLarge) {
		return &vfs.Error{Op: "fetch " + objectNoun(ns), Path: h.String(), Code: vfs.CodeTooLarge,
			Msg: fmt.Sprintf("the remote's copy is larger than this daemon fetches (%d bytes: the larger of --remote-cache-bytes and 1 GiB); raise --remote-cache-bytes to read it", l.fetchCap()), Err: err}
	}
	if errors.Is(err, vfs.ErrNotFound) {
		return &vfs.Error{Op: "open " + objectNoun(ns), Path: h.String(), Code: vfs.CodeNotFound,
			Msg: "no such object, neither local nor in the remote " + fmt.Sprint(l.store)}
	}
	if errors.Is(err, ErrCorruptObject) {
		return &vfs.Error{Op: "fetch " + objectNoun(ns), Path: h.String(), Code: vfs.CodeIO,
			Msg: "the remote's copy does not match its hash (someone else wrote under its name); it was not used. A daemon that has the content repairs it by pushing the snapshot again (vfsd snapshot push ID)", Err: err}
	}
	return &vfs.Error{Op: "fetch " + objectNoun(ns), Path: h.String(), Code: vfs.CodeIO,
		Msg: "not in the local store, and the remote " + fmt.Sprint(l.store) + " failed; retry once it is reachable", Err: err}
}

// openLocalObject opens an object in the local store. With a remote, an
// object missing there fails with an error matching vfs.ErrNotLocal: the
// remote may have it.
func (r *Repo) openLocalObject(ctx context.Context, ns Namespace, h vfs.Hash) (vfs.Blob, error) {
	b, err := r.store.Open(ctx, ns, h)
	l := r.remote
	switch {
	case l == nil:
	case err == nil && ns == Blobs:
		l.touch(h)
	case errors.Is(err, vfs.ErrNotFound):
		if ns == Blobs {
			if b, ok := r.openCached(h); ok {
				return b, nil
			}
		}
		return nil, fmt.Errorf("open %s %s: %w", objectNoun(ns), h.Short(), vfs.ErrNotLocal)
	}
	return b, err
}

// openObject opens an object in the local store, fetching it from the
// remote first if it is missing there.
func (r *Repo) openObject(ctx context.Context, ns Namespace, h vfs.Hash) (vfs.Blob, error) {
	b, err := r.openLocalObject(ctx, ns, h)
	if !errors.Is(err, vfs.ErrNotLocal) {
		return b, err
	}
	for range 3 { // an eviction may race the open after a fetch
		if ns == Blobs {
			err = r.fetchBlob(ctx, h)
		} else {
			err = r.fetch(ctx, ns, h)
		}
		if err != nil {
			return nil, err
		}
		b, err = r.openLocalObject(ctx, ns, h)
		if !errors.Is(err, vfs.ErrNotLocal) {
			return b, err
		}
	}
	return nil, err
}

// fetchBlob makes blob h readable here: a packed blob lands in the pack
// cache (openLocalObject reads it there), any other in the local store.
func (r *Repo) fetchBlob(ctx context.Context, h vfs.Hash) error {
	l := r.remote
	b, packed, err := r.openPacked(ctx, h, l.neverListedPacks(), time.Now())
	switch {
	case err == nil && packed:
		return b.Close()
	case err != nil && !errors.Is(err, ErrCorruptObject):
		return l.errRemote(Blobs, h, err)
	}
	return r.fetch(ctx, Blobs, h)
}

// openRemoteBlob opens blob h from the remote, verified: out of a pack
// (through the pack cache) or as an object of its own. Packs are looked
// at first, and listed again when neither holds h.
func (r *Repo) openRemoteBlob(ctx context.Context, h vfs.Hash) (vfs.Blob, error) {
	l := r.remote
	asked := time.Now()
	b, packed, packErr := r.openPacked(ctx, h, l.neverListedPacks(), asked)
	switch {
	case packErr == nil && packed:
		return b, nil
	case packErr != nil && !errors.Is(packErr, ErrCorruptObject):
		return nil, packErr
	}
	ob, err := l.openCapped(ctx, Blobs, h)
	if !errors.Is(err, vfs.ErrNotFound) {
		return ob, err
	}
	if packErr != nil {
		return nil, packErr // packed, wrong, and no object of its own
	}
	// Packed since this daemon last listed the packs?
	b, packed, perr := r.openPacked(ctx, h, true, asked)
	switch {
	case perr != nil:
		return nil, perr
	case packed:
		return b, nil
	}
	return nil, err
}

// fetch copies an object from the remote into the local store, verified;
// concurrent fetches of one object share the work.
func (r *Repo) fetch(ctx context.Context, ns Namespace, h vfs.Hash) error {
	l := r.remote
	k := objKey{ns, h}
	l.fetchMu.Lock()
	c := l.fetching[k]
	if c == nil {
		c = &fetchCall{done: make(chan struct{})}
		l.fetching[k] = c
		l.fetchMu.Unlock()
		go func() {
			// Detached, so that one waiter giving up does not fail the
			// others; bounded, so that a stuck remote does not pile up.
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Minute)
			c.err = r.fetchNow(fctx, ns, h)
			cancel()
			l.fetchMu.Lock()
			delete(l.fetching, k)
			l.fetchMu.Unlock()
			close(c.done)
		}()
	} else {
		l.fetchMu.Unlock()
	}
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		return fmt.Errorf("fetch %s %s: %w", objectNoun(ns), h.Short(), ctx.Err())
	}
}

func (r *Repo) fetchNow(ctx context.Context, ns Namespace, h vfs.Hash) error {
	l := r.remote
	var rb vfs.Blob
	var err error
	if ns == Blobs {
		rb, err = r.openRemoteBlob(ctx, h) // a packed one is copied out of the pack cache
	} else {
		rb, err = l.openCapped(ctx, ns, h)
	}
	if err != nil {
		return l.errRemote(ns, h, err)
	}
	defer rb.Close()
	r.gc.RLock()
	got, n, err := r.store.Put(ctx, ns, io.NewSectionReader(rb, 0, rb.Size()), PutOptions{Deferred: true})
	if err == nil && got != h {
		// The remote store did not verify it: the local one found out.
		err = fmt.Errorf("%w (content hashes to %s)", ErrCorruptObject, got)
		_ = r.store.Delete(ctx, ns, got)
	}
	if err == nil && ns == Blobs {
		l.add(h, n)
	}
	r.gc.RUnlock()
	if err != nil {
		return l.errRemote(ns, h, err)
	}
	l.fetched.Add(1)
	if _, fromPack := rb.(*fileSection); !fromPack { // marked with its pack's ETag
		l.markGood(objKey{ns, h}, n, blobETag(rb), false)
	}
	if ns == Blobs {
		r.evict(ctx, h, nil)
	}
	return nil
}

// touch marks a cached blob used.
func (l *remoteLink) touch(h vfs.Hash) {
	l.cacheMu.Lock()
	if e := l.cached[h]; e != nil {
		l.lru.MoveToFront(e)
	}
	l.cacheMu.Unlock()
}

// add records a fetched blob in the cache.
func (l *remoteLink) add(h vfs.Hash, size int64) {
	l.cacheMu.Lock()
	defer l.cacheMu.Unlock()
	if e := l.cached[h]; e != nil {
		l.lru.MoveToFront(e)
		return
	}
	l.cached[h] = l.lru.PushFront(cacheEntry{h: h, size: size})
	l.bytes += size
}

// own takes a blob out of the cache: this daemon stored it itself, so it
// stays local.
func (l *remoteLink) own(h vfs.Hash) {
	l.cacheMu.Lock()
	if e := l.cached[h]; e != nil {
		l.bytes -= e.Value.(cacheEntry).size
		l.lru.Remove(e)
		delete(l.cached, h)
	}
	l.cacheMu.Unlock()
}

// CacheStats tells what the local cache of remote blobs holds.
type CacheStats struct {
	Blobs    int   `json:"blobs"`
	Bytes    int64 `json:"bytes"`
	Limit    int64 `json:"limit"`
	Fetched  int64 `json:"fetched"`  // objects fetched since the repository opened
	Uploaded int64 `json:"uploaded"` // objects uploaded since the repository opened
}

// RemoteCache reports the cache of fetched blobs; zero without a remote.
func (r *Repo) RemoteCache() CacheStats {
	l := r.remote
	if l == nil {
		return CacheStats{}
	}
	l.cacheMu.Lock()
	defer l.cacheMu.Unlock()
	return CacheStats{Blobs: len(l.cached), Bytes: l.bytes, Limit: l.opts.CacheBytes,
		Fetched: l.fetched.Load(), Uploaded: l.uploaded.Load()}
}

// evict deletes least recently used fetched blobs until the cache fits its
// bound, skipping pinned ones and keep, the blob just fetched for a reader
// that has not opened it yet (deleted, its reader would fail; kept, the
// cache is over its bound by at most that blob until the next fetch). It
// holds the gc lock exclusively while it deletes, as garbage collection
// does, so no Put relies on a blob being deleted.
func (r *Repo) evict(ctx context.Context, keep vfs.Hash, keepWin *cachedWindow) {
	l := r.remote
	l.cacheMu.Lock()
	over := l.bytes > l.opts.CacheBytes
	l.cacheMu.Unlock()
	if !over {
		return
	}
	r.gc.Lock()
	defer r.gc.Unlock()
	r.pins.mu.Lock()
	defer r.pins.mu.Unlock()
	l.cacheMu.Lock()
	defer l.cacheMu.Unlock()
	for e := l.lru.Back(); e != nil && l.bytes > l.opts.CacheBytes; {
		prev := e.Prev()
		ce := e.Value.(cacheEntry)
		if ce.win != nil {
			// A window's file: readers that have it open keep it.
			if ce.win != keepWin {
				l.dropWindowLocked(ce.win)
			}
			e = prev
			continue
		}
		_, fresh := r.pins.fresh[ce.h]
		if r.pins.counts[ce.h] == 0 && !fresh && ce.h != vfs.EmptyHash && ce.h != keep {
			if err := r.store.Delete(ctx, Blobs, ce.h); err != nil {
				l.log.Warn("remote cache: evict", "blob", ce.h.Short(), "err", err)
				return
			}
			l.bytes -= ce.size
			l.lru.Remove(e)
			delete(l.cached, ce.h)
		}
		e = prev
	}
}

// cachePath lists the fetched blobs, so that they stay a cache (and not
// this daemon's own) across restarts.
func (l *remoteLink) cachePath() string { return filepath.Join(l.opts.StateDir, "cache") }
func (l *remoteLink) queuePath() string { return filepath.Join(l.opts.StateDir, "push-queue") }

func (l *remoteLink) saveCache() error {
	l.cacheMu.Lock()
	var b strings.Builder
	for e := l.lru.Back(); e != nil; e = e.Prev() {
		ce := e.Value.(cacheEntry)
		if ce.win != nil {
			continue // the pack cache starts empty
		}
		fmt.Fprintf(&b, "%s %d\n", ce.h, ce.size)
	}
	l.cacheMu.Unlock()
	return writeFileAtomic(l.cachePath(), []byte(b.String()), 0o600)
}

func (l *remoteLink) loadCache(r *Repo) error {
	f, err := os.Open(l.cachePath())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remote cache list: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var hex string
		var size int64
		if _, err := fmt.Sscanf(sc.Text(), "%s %d", &hex, &size); err != nil {
			continue
		}
		h, err := vfs.ParseHash(hex)
		if err != nil {
			continue
		}
		if _, err := r.store.Stat(context.Background(), Blobs, h); err == nil {
			l.add(h, size) // oldest first, so the newest ends in front
		}
	}
	return sc.Err()
}

// touchedKnown records that the remote's object k has just been touched
// (its time renewed).
func (l *remoteLink) touchedKnown(k objKey) {
	l.knownMu.Lock()
	if e, ok := l.known[k]; ok {
		e.mod = time.Now()
		l.known[k] = e
	}
	l.knownMu.Unlock()
}

// markChecked records that the remote's object k, not local, has the size
// the snapshot being pushed says (see remote_verify.go).
func (l *remoteLink) markChecked(k objKey) {
	l.knownMu.Lock()
	if e, ok := l.known[k]; ok {
		e.checked = true
		l.known[k] = e
	}
	l.knownMu.Unlock()
}

// knownSet returns what the remote holds, listing it again when relist is
// set or the last listing is older than half the grace period (past that,
// a remote garbage collection may have removed an object this daemon saw).
//
// The listing runs without knownMu, so that uploads and fetches finishing
// meanwhile (markGood) do not wait for a slow remote's listing; what they
// mark known after the listing started is kept. Callers read the map under
// knownMu.
func (r *Repo) knownSet(ctx context.Context, relist bool) (map[objKey]remoteObj, error) {
	l := r.remote
	l.listMu.Lock()
	defer l.listMu.Unlock()
	l.knownMu.Lock()
	if l.known != nil && !relist && time.Since(l.knownAt) < l.opts.Grace/2 {
		known := l.known
		l.knownMu.Unlock()
		return known, nil
	}
	l.knownMu.Unlock()
	start := time.Now()
	known := make(map[objKey]remoteObj)
	for _, ns := range Namespaces {
		var err error
		if il, ok := l.store.(InfoLister); ok {
			err = il.ListInfo(ctx, ns, func(o ObjectInfo) error {
				known[objKey{ns, o.Hash}] = remoteObj{mod: o.Modified, size: o.Size, tag: etagOf(o.ETag)}
				return nil
			})
		} else { // no times: no remote GC either, so present is present
			err = l.store.List(ctx, ns, func(h vfs.Hash, size int64) error {
				known[objKey{ns, h}] = remoteObj{mod: start, size: size}
				return nil
			})
		}
		if err != nil {
			return nil, fmt.Errorf("list the remote %v: %w", l.store, err)
		}
	}
	// Packed blobs, where the remote has no object of their own.
	if err := l.refreshPacks(ctx, time.Time{}); err != nil {
		return nil, err
	}
	var bad []objKey
	x := l.packs
	x.mu.Lock()
	for h, loc := range x.locs {
		k := objKey{Blobs, h}
		if _, ok := known[k]; ok {
			continue
		}
		p := loc.pack
		known[k] = remoteObj{mod: p.mod, size: loc.blob().size, tag: p.tag, pack: p, wrong: p.bad}
		if p.bad {
			bad = append(bad, k)
		}
	}
	x.mu.Unlock()
	l.knownMu.Lock()
	defer l.knownMu.Unlock()
	for _, k := range bad {
		delete(l.good, k)
	}
	for k, e := range l.known {
		if _, ok := known[k]; !ok && e.mod.After(start) {
			known[k] = e // uploaded or fetched while the listing ran
		}
	}
	l.known, l.knownAt = known, start
	return known, nil
}

// PushReport tells what a push did.
type PushReport struct {
	Snapshot      string `json:"snapshot"`
	Blobs         int    `json:"blobs"`          // blobs the snapshot needs
	Records       int    `json:"records"`        // records it needs (its own and those holding its manifests)
	Uploaded      int    `json:"uploaded"`       // objects sent
	UploadedBlobs int    `json:"uploaded_blobs"` // blobs among them
	UploadedBytes int64  `json:"uploaded_bytes"`
	// UploadedManifests is how many directory manifests the uploaded
	// records hold (each record packs the manifests it first wrote).
	UploadedManifests int `json:"uploaded_manifests"`
	Present           int `json:"present"` // objects the remote had already, kept as they were
	// Verified counts the objects the remote had that this push read back
	// and found right (their content was not known good here: another
	// daemon stored them, or this one had forgotten). Repaired counts
	// those it found wrong — another party had written something else
	// under the name, of another size or content — and overwrote with the
	// right content; Rewritten, those larger than a push reads back
	// (8 MiB) whose content was not known good, overwritten unread. Both
	// are counted in Uploaded too. See remote_verify.go.
	Verified  int `json:"verified"`
	Repaired  int `json:"repaired"`
	Rewritten int `json:"rewritten"`
	// Unrepaired counts the blobs the remote holds with the wrong size
	// that this daemon cannot repair, not having them (a fork's files it
	// never read); the daemon that has them repairs them by pushing again.
	Unrepaired int `json:"unrepaired"`
	// UploadedPacks counts the packs among the objects sent: the small
	// blobs go in packs (see blobpack.go), counted in UploadedBlobs too.
	UploadedPacks int `json:"uploaded_packs"`
	// UploadedRecords counts the records among the objects sent.
	UploadedRecords int           `json:"uploaded_records"`
	Duration        time.Duration `json:"duration_ns"`
}

// errNoRemote is the answer of remote operations on a repository without
// one.
var errNoRemote = &vfs.Error{Op: "push", Code: vfs.CodeInvalid, Msg: "this repository has no remote; start vfsd serve with --remote s3://BUCKET/PREFIX"}

// Push uploads snapshot id and everything it needs that the remote lacks:
// its blobs, the records that hold its manifests, and its record, last.
// Uploads run in parallel. A failed push leaves what it uploaded in
// place, so that pushing again sends only the rest.
//
// An object the remote lists is relied on only if its content is known
// right; otherwise it is checked and, if wrong, overwritten (see
// remote_verify.go and the report's Verified, Repaired, Rewritten and
// Unrepaired). Pushing again a snapshot the remote already has lists the
// remote anew, so that an object someone overwrote since is repaired.
//
// The repository is locked against deletions only while the push works out
// what to send, never while it talks to the remote: a slow remote holds up
// no deletion, garbage collection or snapshot. A record deleted meanwhile
// (its manifests moved to a pack) makes the push work it out again; the
// snapshot itself deleted makes it fail with an error matching
// vfs.ErrNotFound.
func (r *Repo) Push(ctx context.Context, id string) (PushReport, error) {
	start := time.Now()
	if r.remote == nil {
		return PushReport{Snapshot: id}, errNoRemote
	}
	for try := 1; ; try++ {
		rep, err := r.pushOnce(ctx, id)
		if !errors.Is(err, errMovedMeanwhile) || try == maxPushPlans {
			rep.Duration = time.Since(start)
			return rep, err
		}
	}
}

// maxPushPlans bounds how often Push works out what to send again because
// local objects moved while it sent them.
const maxPushPlans = 3

// errMovedMeanwhile is the error of an upload whose local object was
// deleted after the push planned to send it: Push plans again.
var errMovedMeanwhile = errors.New("deleted locally during the push (a snapshot was deleted, or garbage collected); push again")

// pushPlan is what a push of one snapshot must have in the remote.
type pushPlan struct {
	snap    *Snapshot
	id      vfs.Hash              // the snapshot's record
	records map[vfs.Hash]struct{} // records holding its manifests, not its own
	blobs   map[vfs.Hash]int64    // and their sizes
	order   []vfs.Hash            // the blobs in the tree's order: packs follow it
}

// planPush works out what snapshot id needs, holding the repository's
// records so that none is deleted while it reads them.
func (r *Repo) planPush(ctx context.Context, id string) (*pushPlan, error) {
	r.records.RLock()
	defer r.records.RUnlock()
	snap, err := r.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	snapID, _ := vfs.ParseHash(snap.ID)
	records, err := r.manifestRecords(ctx, snap)
	if err != nil {
		return nil, err
	}
	delete(records, snapID)
	blobs := map[vfs.Hash]int64{}
	var order []vfs.Hash
	err = snap.Tree.Walk(vfs.Root, func(_ vfs.Path, n vfs.Node) error {
		if n.IsFile() && !n.Blob.IsZero() {
			if _, ok := blobs[n.Blob]; !ok {
				order = append(order, n.Blob)
			}
			blobs[n.Blob] = n.Size
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &pushPlan{snap: snap, id: snapID, records: records, blobs: blobs, order: order}, nil
}

// pushItem is an object a push sends, or checks and sends if wrong.
type pushItem struct {
	k      objKey
	size   int64 // a blob's size in the snapshot's tree; -1 for a record
	listed int64 // the size the remote lists, when check
	// check: the remote lists the object, but its content is not known
	// right here (see remote_verify.go); wrong: and it is known wrong.
	check, wrong bool
	// packed: the remote lists it in a pack. renew: in a pack too old to
	// rely on, so it is packed again (fetched first if not local).
	packed, renew bool
}

// pushOnce is one try of Push: plan, then send what the remote lacks and
// repair what it holds wrong.
func (r *Repo) pushOnce(ctx context.Context, id string) (PushReport, error) {
	rep := PushReport{Snapshot: id}
	l := r.remote
	plan, err := r.planPush(ctx, id)
	if err != nil {
		return rep, fmt.Errorf("push %s: %w", shortID(id), err)
	}
	defer func() {
		if err := l.flushGood(); err != nil {
			l.log.Warn("remote: could not save the list of verified remote objects; the next pushes check them again", "err", err)
		}
	}()
	snap, snapID, records, blobs := plan.snap, plan.id, plan.records, plan.blobs
	rep.Blobs, rep.Records = len(blobs), len(records)+1
	// Pushing again a snapshot the remote has whole lists it anew: that is
	// how an object another party overwrote since is found and repaired.
	known, err := r.knownSet(ctx, l.pushedWhole(snapID))
	if err != nil {
		return rep, fmt.Errorf("push %s: %w", shortID(id), err)
	}
	// A blob the remote has is relied on if the parent's record, in the
	// remote, references it (GC keeps it), or if it is young enough that
	// GC keeps it longer than this push takes; an older one is touched.
	safe := r.remoteParentBlobs(ctx, snap, known)
	var todo, touch, renew []pushItem
	fresh := time.Now().Add(-l.opts.Grace / 2)
	l.knownMu.Lock()
	for _, h := range plan.order {
		size := blobs[h]
		k := objKey{Blobs, h}
		e, ok := known[k]
		_, inParent := safe[h]
		switch {
		case !ok:
			todo = append(todo, pushItem{k: k, size: size})
		case !e.checked && !l.goodLocked(k, e):
			todo = append(todo, pushItem{k: k, size: size, listed: e.size, check: true, packed: e.pack != nil, wrong: e.wrong})
		case !inParent && e.mod.Before(fresh) && e.pack != nil:
			// A pack cannot be touched cheaply (versitygw keeps the
			// time of a copy): its blob is packed again instead.
			renew = append(renew, pushItem{k: k, size: size, packed: true, renew: true})
		case !inParent && e.mod.Before(fresh):
			touch = append(touch, pushItem{k: k, size: size, listed: e.size})
		}
	}
	for h := range records {
		k := objKey{Records, h}
		e, ok := known[k]
		switch {
		case !ok:
			todo = append(todo, pushItem{k: k, size: -1})
		case !l.goodLocked(k, e):
			todo = append(todo, pushItem{k: k, size: -1, listed: e.size, check: true})
		}
	}
	own := pushItem{k: objKey{Records, snapID}, size: -1}
	ownObj, haveOwn := known[own.k]
	ownGood := haveOwn && l.goodLocked(own.k, ownObj)
	if haveOwn && !ownGood {
		own.listed, own.check = ownObj.size, true
	}
	l.knownMu.Unlock()
	if err := r.touch(ctx, touch, &todo); err != nil {
		return rep, fmt.Errorf("push %s: %w", shortID(id), err)
	}
	rep.Present = len(blobs) + len(records) - len(todo) - len(renew)
	todo, toPack, err := r.splitPackable(ctx, todo, renew)
	if err != nil {
		return rep, fmt.Errorf("push %s: %w", shortID(id), err)
	}
	packed := r.packedManifests(todo, snapID)
	// Blobs and manifests first, the snapshot's record last: a record in
	// the remote promises that all it needs is there.
	if err := r.sendPacks(ctx, toPack, &rep); err != nil {
		return rep, fmt.Errorf("push %s: %w", shortID(id), err)
	}
	if err := r.send(ctx, todo, packed, &rep); err != nil {
		return rep, fmt.Errorf("push %s: %w", shortID(id), err)
	}
	if ownGood {
		rep.Present++
	} else if err := r.send(ctx, []pushItem{own}, packed, &rep); err != nil {
		return rep, fmt.Errorf("push %s: %w", shortID(id), err)
	}
	return rep, nil
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// remoteParentBlobs returns the blobs of snap's parent when the remote has
// the parent's record; nil otherwise.
func (r *Repo) remoteParentBlobs(ctx context.Context, snap *Snapshot, known map[objKey]remoteObj) map[vfs.Hash]struct{} {
	ph, err := vfs.ParseHash(snap.Record.Parent)
	if err != nil {
		return nil
	}
	r.remote.knownMu.Lock()
	_, ok := known[objKey{Records, ph}]
	r.remote.knownMu.Unlock()
	if !ok {
		return nil
	}
	parent, err := r.Get(ctx, snap.Record.Parent)
	if err != nil {
		return nil
	}
	out := map[vfs.Hash]struct{}{}
	err = parent.Tree.Walk(vfs.Root, func(_ vfs.Path, n vfs.Node) error {
		if n.IsFile() && !n.Blob.IsZero() {
			out[n.Blob] = struct{}{}
		}
		return nil
	})
	if err != nil {
		return nil // relying on nothing is always safe: more is uploaded
	}
	return out
}

// touch renews the time of old objects a push relies on, so that a remote
// garbage collection running meanwhile keeps them; those the remote
// cannot touch, that vanished, or that the touch found wrong join todo.
func (r *Repo) touch(ctx context.Context, items []pushItem, todo *[]pushItem) error {
	l := r.remote
	t, ok := l.store.(Toucher)
	for _, it := range items {
		if !ok {
			*todo = append(*todo, pushItem{k: it.k, size: it.size})
			continue
		}
		err := t.Touch(ctx, it.k.ns, it.k.h)
		switch {
		case errors.Is(err, vfs.ErrNotFound):
			l.forget(it.k.ns, it.k.h)
			*todo = append(*todo, pushItem{k: it.k, size: it.size})
		case errors.Is(err, ErrCorruptObject):
			// A store that touches by reading the object back (s3store,
			// where a copy keeps the old time) found it wrong.
			l.dropGood(it.k)
			it.check, it.wrong = true, true
			*todo = append(*todo, it)
		case err != nil:
			return fmt.Errorf("touch %s %s in %v: %w", objectNoun(it.k.ns), it.k.h.Short(), l.store, err)
		default:
			l.touchedKnown(it.k)
		}
	}
	return nil
}

// manifestRecords returns the records holding snap's manifests, and its own.
func (r *Repo) manifestRecords(ctx context.Context, snap *Snapshot) (map[vfs.Hash]struct{}, error) {
	out := map[vfs.Hash]struct{}{}
	var missing []vfs.Hash
	set, err := r.manifestSet(ctx, snap)
	if err != nil {
		return nil, err
	}
	collect := func() {
		missing = missing[:0]
		r.mu.Lock()
		defer r.mu.Unlock()
		for h := range set {
			if loc, ok := r.index[h]; ok {
				out[loc.record] = struct{}{}
			} else {
				missing = append(missing, h)
			}
		}
	}
	collect()
	if len(missing) > 0 {
		if err := r.indexAll(ctx); err != nil {
			return nil, err
		}
		collect()
		if len(missing) > 0 {
			return nil, fmt.Errorf("manifest %s is in no record", missing[0].Short())
		}
	}
	if h, err := vfs.ParseHash(snap.ID); err == nil {
		out[h] = struct{}{}
	}
	return out, nil
}

// packedManifests counts, for each record among todo and for the
// snapshot's own record, the manifests the repository's index places in it:
// the manifests a push of those records uploads.
func (r *Repo) packedManifests(todo []pushItem, own vfs.Hash) map[vfs.Hash]int {
	out := map[vfs.Hash]int{own: 0}
	for _, it := range todo {
		if it.k.ns == Records {
			out[it.k.h] = 0
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, loc := range r.index {
		if n, ok := out[loc.record]; ok {
			out[loc.record] = n + 1
		}
	}
	return out
}

// pushOutcome is what a push did with one pushItem.
type pushOutcome int

const (
	pushSent       pushOutcome = iota // uploaded: the remote lacked it
	pushRepaired                      // the remote's was wrong: overwritten
	pushRewritten                     // not known good, too large to read back: overwritten
	pushVerified                      // the remote's, read back, is right: kept
	pushChecked                       // not local; the remote's has the right size: kept
	pushUnrepaired                    // not local; the remote's has the wrong size
)

// send sends or checks items, Parallel at a time; packed counts the
// manifests of the records among them.
func (r *Repo) send(ctx context.Context, items []pushItem, packed map[vfs.Hash]int, rep *PushReport) error {
	l := r.remote
	if len(items) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan pushItem)
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	for range min(l.opts.Parallel, len(items)) {
		wg.Go(func() {
			for it := range work {
				out, n, err := r.pushOne(ctx, it)
				mu.Lock()
				switch {
				case err != nil:
					if firstErr == nil {
						firstErr = err
						cancel()
					}
				case out == pushVerified:
					rep.Present++
					rep.Verified++
				case out == pushChecked:
					rep.Present++
				case out == pushUnrepaired:
					rep.Unrepaired++
				default:
					rep.Uploaded++
					rep.UploadedBytes += n
					if it.k.ns == Blobs {
						rep.UploadedBlobs++
					} else {
						rep.UploadedRecords++
						rep.UploadedManifests += packed[it.k.h]
					}
					switch out {
					case pushRepaired:
						rep.Repaired++
					case pushRewritten:
						rep.Rewritten++
					}
				}
				mu.Unlock()
			}
		})
	}
feed:
	for _, it := range items {
		select {
		case work <- it:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	return firstErr
}

// pushOne uploads it, or checks it first (see remote_verify.go), and
// returns what it did and the bytes it sent.
func (r *Repo) pushOne(ctx context.Context, it pushItem) (pushOutcome, int64, error) {
	if !it.check {
		n, err := r.uploadOne(ctx, it.k)
		return pushSent, n, err
	}
	l := r.remote
	k := it.k
	local, err := r.store.Stat(ctx, k.ns, k.h)
	if errors.Is(err, vfs.ErrNotFound) {
		if k.ns != Blobs {
			return 0, 0, fmt.Errorf("upload %s %s: %w", objectNoun(k.ns), k.h.Short(), errMovedMeanwhile)
		}
		// Not local (a fork's file never read here): its size in the
		// snapshot is all this daemon can check it against.
		if it.listed == it.size && !it.wrong {
			l.markChecked(k)
			return pushChecked, 0, nil
		}
		l.log.Warn("remote: a blob in the remote does not hold its content (another party wrote under its name), and this daemon does not have it to repair it; the daemon that has it repairs it by pushing again",
			"blob", k.h.String(), "remote_bytes", it.listed, "want_bytes", it.size)
		return pushUnrepaired, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("push: local %s %s: %w", objectNoun(k.ns), k.h.Short(), err)
	}
	var why string
	switch {
	case it.wrong:
		why = "reading it back to renew its time found its content does not match its hash"
	case it.listed != local:
		why = fmt.Sprintf("the remote's is %d bytes, not %d", it.listed, local)
	case local > verifyMaxBytes:
		n, err := r.uploadOne(ctx, k)
		return pushRewritten, n, err
	default:
		state, tag, err := r.readBack(ctx, k, local)
		switch {
		case err != nil:
			return 0, 0, err
		case state == readBackGone: // deleted meanwhile (remote GC): send it
			n, err := r.uploadOne(ctx, k)
			return pushSent, n, err
		case state == readBackRight:
			l.markGood(k, local, tag, false)
			return pushVerified, 0, nil
		}
		why = "its content does not match its hash"
	}
	l.log.Warn("remote: an object in the remote does not hold its content (another party wrote under its name); overwriting it with the right content",
		"object", string(k.ns)+"/"+k.h.String(), "why", why)
	l.dropGood(k)
	n, err := r.uploadOne(ctx, k)
	return pushRepaired, n, err
}

// readBackState is what reading an object of the remote back found.
type readBackState int

const (
	readBackRight readBackState = iota
	readBackWrong
	readBackGone
)

// readBack reads the remote's object k, which should be size bytes, and
// checks it against its hash; it returns the ETag it was read with.
func (r *Repo) readBack(ctx context.Context, k objKey, size int64) (readBackState, etag, error) {
	l := r.remote
	var b vfs.Blob
	var err error
	if co, ok := l.store.(CappedOpener); ok {
		b, err = co.OpenCapped(ctx, k.ns, k.h, size)
	} else {
		b, err = l.store.Open(ctx, k.ns, k.h)
	}
	switch {
	case errors.Is(err, vfs.ErrNotFound):
		return readBackGone, etag{}, nil
	case errors.Is(err, ErrCorruptObject), errors.Is(err, vfs.ErrTooLarge):
		return readBackWrong, etag{}, nil
	case err != nil:
		return 0, etag{}, fmt.Errorf("read back %s %s from %v: %w", objectNoun(k.ns), k.h.Short(), l.store, err)
	}
	defer b.Close()
	if b.Size() != size {
		return readBackWrong, etag{}, nil
	}
	hw := vfs.NewHasher()
	if _, err := io.Copy(hw, io.NewSectionReader(b, 0, size)); err != nil {
		return 0, etag{}, fmt.Errorf("read back %s %s from %v: %w", objectNoun(k.ns), k.h.Short(), l.store, err)
	}
	if vfs.SumHash(hw) != k.h {
		return readBackWrong, etag{}, nil
	}
	return readBackRight, blobETag(b), nil
}

// uploadOne sends the local copy of k to the remote, over whatever the
// remote holds under its name.
func (r *Repo) uploadOne(ctx context.Context, k objKey) (int64, error) {
	l := r.remote
	b, err := r.store.Open(ctx, k.ns, k.h)
	if errors.Is(err, vfs.ErrNotFound) {
		return 0, fmt.Errorf("upload %s %s: %w", objectNoun(k.ns), k.h.Short(), errMovedMeanwhile)
	}
	if err != nil {
		return 0, fmt.Errorf("upload %s %s: %w", objectNoun(k.ns), k.h.Short(), err)
	}
	defer b.Close()
	// Absent: the listing lacked it, or the push found it wrong; either
	// way it is written whatever the remote holds, with no request to ask.
	info, err := putInfo(ctx, l.store, k.ns, io.NewSectionReader(b, 0, b.Size()), PutOptions{Absent: true})
	if err != nil {
		return 0, fmt.Errorf("upload %s %s to %v: %w", objectNoun(k.ns), k.h.Short(), l.store, err)
	}
	if info.Hash != k.h {
		return 0, fmt.Errorf("upload %s %s: the local copy hashes to %s: %w", objectNoun(k.ns), k.h.Short(), info.Hash.Short(), ErrCorruptObject)
	}
	l.uploaded.Add(1)
	l.markGood(k, info.Size, etagOf(info.ETag), true)
	return info.Size, nil
}

// putInfo stores r's content in s, with the stored object's ETag when s
// tells it (InfoPutter).
func putInfo(ctx context.Context, s Store, ns Namespace, r io.Reader, opts PutOptions) (ObjectInfo, error) {
	if ip, ok := s.(InfoPutter); ok {
		return ip.PutInfo(ctx, ns, r, opts)
	}
	h, n, err := s.Put(ctx, ns, r, opts)
	return ObjectInfo{Hash: h, Size: n}, err
}

// QueuePush queues snapshot id for a background push, recorded in
// RemoteOptions.StateDir so that it survives a restart; the push is
// retried, with growing pauses, until it succeeds.
func (r *Repo) QueuePush(id string) error {
	l := r.remote
	if l == nil {
		return errNoRemote
	}
	l.queueMu.Lock()
	if !slices.Contains(l.queue, id) {
		l.queue = append(l.queue, id)
	}
	err := l.saveQueueLocked()
	l.queueMu.Unlock()
	l.kick()
	return err
}

// PushStatus reports the background pushes.
func (r *Repo) PushStatus() PushStatus {
	l := r.remote
	if l == nil {
		return PushStatus{}
	}
	l.queueMu.Lock()
	defer l.queueMu.Unlock()
	st := l.status
	st.Pending = slices.Clone(l.queue)
	return st
}

// WaitPushed waits until no push is queued, or ctx ends.
func (r *Repo) WaitPushed(ctx context.Context) error {
	for {
		st := r.PushStatus()
		if len(st.Pending) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for pushes (%d pending; last error: %s): %w", len(st.Pending), st.LastError, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (l *remoteLink) kick() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *remoteLink) saveQueueLocked() error {
	if l.opts.StateDir == "" {
		return nil
	}
	return writeFileAtomic(l.queuePath(), []byte(strings.Join(l.queue, "\n")), 0o600)
}

func readQueue(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("remote push queue: %w", err)
	}
	var q []string
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			q = append(q, line)
		}
	}
	return q, nil
}

// pushLoop pushes queued snapshots, oldest first, retrying failures with
// pauses growing from one second to a minute.
func (r *Repo) pushLoop() {
	l := r.remote
	defer close(l.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-l.stop
		cancel()
	}()
	backoff := time.Second
	for {
		l.queueMu.Lock()
		var id string
		if len(l.queue) > 0 {
			id = l.queue[0]
		}
		l.queueMu.Unlock()
		if id == "" {
			select {
			case <-l.stop:
				return
			case <-l.wake:
				continue
			}
		}
		rep, err := r.Push(ctx, id)
		l.queueMu.Lock()
		l.status.LastTry = time.Now()
		if err == nil || errors.Is(err, vfs.ErrNotFound) && !isRemoteErr(err) {
			// Pushed, or deleted locally meanwhile: either way done.
			l.queue = slices.DeleteFunc(l.queue, func(s string) bool { return s == id })
			_ = l.saveQueueLocked()
			if err == nil {
				l.status.LastPush, l.status.LastError, l.status.LastReport = id, "", &rep
			} else {
				l.status.LastError = err.Error()
			}
			backoff = time.Second
			l.queueMu.Unlock()
			if err == nil && l.opts.OnPushed != nil {
				l.opts.OnPushed(ctx, id)
			}
			continue
		}
		l.status.LastError = err.Error()
		l.queueMu.Unlock()
		if ctx.Err() != nil {
			return
		}
		l.log.Warn("remote: push failed; will retry", "snapshot", shortID(id), "in", backoff, "err", err)
		select {
		case <-l.stop:
			return
		case <-l.wake:
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Minute)
	}
}

// isRemoteErr reports whether err came from the remote rather than from
// the local repository.
func isRemoteErr(err error) bool {
	var e *vfs.Error
	return errors.As(err, &e) && strings.HasPrefix(e.Op, "fetch ")
}

// Prefetch fetches, in the background of whoever calls it, the blobs of
// snapshot id missing locally, Parallel at a time, while the cache has
// room for them. It returns how many it fetched.
func (r *Repo) Prefetch(ctx context.Context, id string) (int, error) {
	l := r.remote
	if l == nil {
		return 0, errNoRemote
	}
	snap, err := r.Get(ctx, id)
	if err != nil {
		return 0, err
	}
	var todo []cacheEntry
	var need int64
	err = snap.Tree.Walk(vfs.Root, func(_ vfs.Path, n vfs.Node) error {
		if n.IsFile() && !n.Blob.IsZero() && n.Blob != vfs.EmptyHash {
			todo = append(todo, cacheEntry{h: n.Blob, size: n.Size})
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if l.neverListedPacks() {
		if err := l.refreshPacks(ctx, time.Time{}); err != nil {
			return 0, l.errRemote(Blobs, vfs.Hash{}, err)
		}
	}
	work := make(chan cacheEntry)
	packSlots := make(chan struct{}, prefetchWindows)
	var fetched atomic.Int64
	var wg sync.WaitGroup
	for range l.opts.Parallel {
		wg.Go(func() {
			for e := range work {
				if _, err := r.store.Stat(ctx, Blobs, e.h); err == nil || l.hasCached(e.h) {
					continue
				}
				if loc, ok := l.locate(e.h); ok {
					// Packed: the rest of the window comes with it. A few
					// windows at a time, so that the reads of the session
					// are not queued behind the prefetch.
					packSlots <- struct{}{}
					err := r.fetchPacked(ctx, loc, packWindowBytes)
					<-packSlots
					if err == nil {
						fetched.Add(1)
						continue
					}
				}
				if err := r.fetchBlob(ctx, e.h); err == nil {
					fetched.Add(1)
				}
			}
		})
	}
	seen := map[vfs.Hash]bool{}
	for _, e := range todo {
		if seen[e.h] {
			continue
		}
		seen[e.h] = true
		need += e.size
		if need > l.opts.CacheBytes*9/10 || ctx.Err() != nil {
			break // leave room: the reads themselves come first
		}
		select {
		case work <- e:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	return int(fetched.Load()), ctx.Err()
}

// prefetchWindows is how many windows of packs a prefetch fetches at once.
const prefetchWindows = 2

// writeFileAtomic replaces path with data whole: a temporary file, synced,
// renamed over it.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
