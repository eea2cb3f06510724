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
	// StateDir, when set, keeps the queue of snapshots to push, so that a
	// push interrupted by a crash resumes when the repository is opened
	// again.
	StateDir string
	// Logger receives background push failures; slog.Default when nil.
	Logger *slog.Logger
}

// Remote defaults.
const (
	DefaultRemoteCacheBytes = 8 << 30
	DefaultRemoteGrace      = 24 * time.Hour
	defaultRemoteParallel   = 16
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

	listMu  sync.Mutex           // one listing of the remote at a time (knownSet)
	knownMu sync.Mutex           // known and knownAt; never held while the remote is asked
	known   map[objKey]time.Time // objects seen in the remote, and when they were stored
	knownAt time.Time            // when the remote was last listed

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
	l := &remoteLink{
		store: remote, opts: opts, log: opts.Logger,
		fetching: make(map[objKey]*fetchCall),
		lru:      list.New(), cached: make(map[vfs.Hash]*list.Element),
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
	}
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
	if l.opts.StateDir != "" {
		if err := l.saveCache(); err != nil {
			l.log.Warn("remote: could not save the cache list; its blobs stay local until garbage collection", "err", err)
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
			Msg: "the remote's copy does not match its hash; it was not used", Err: err}
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
		if err := r.fetch(ctx, ns, h); err != nil {
			return nil, err
		}
		b, err = r.store.Open(ctx, ns, h)
		if !errors.Is(err, vfs.ErrNotFound) {
			return b, err
		}
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
	rb, err := l.openCapped(ctx, ns, h)
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
	l.markKnown(ns, h)
	if ns == Blobs {
		r.evict(ctx, h)
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
	l.cached[h] = l.lru.PushFront(cacheEntry{h, size})
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
func (r *Repo) evict(ctx context.Context, keep vfs.Hash) {
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

// markKnown records that the remote holds an object.
func (l *remoteLink) markKnown(ns Namespace, h vfs.Hash) {
	l.knownMu.Lock()
	if l.known != nil {
		l.known[objKey{ns, h}] = time.Now()
	}
	l.knownMu.Unlock()
}

// knownSet returns what the remote holds, listing it again when the last
// listing is older than half the grace period (past that, a remote
// garbage collection may have removed an object this daemon saw).
//
// The listing runs without knownMu, so that uploads and fetches finishing
// meanwhile (markKnown) do not wait for a slow remote's listing; what they
// mark known after the listing started is kept. Callers read the map under
// knownMu.
func (r *Repo) knownSet(ctx context.Context) (map[objKey]time.Time, error) {
	l := r.remote
	l.listMu.Lock()
	defer l.listMu.Unlock()
	l.knownMu.Lock()
	if l.known != nil && time.Since(l.knownAt) < l.opts.Grace/2 {
		known := l.known
		l.knownMu.Unlock()
		return known, nil
	}
	l.knownMu.Unlock()
	start := time.Now()
	known := make(map[objKey]time.Time)
	for _, ns := range Namespaces {
		var err error
		if il, ok := l.store.(InfoLister); ok {
			err = il.ListInfo(ctx, ns, func(o ObjectInfo) error {
				known[objKey{ns, o.Hash}] = o.Modified
				return nil
			})
		} else { // no times: no remote GC either, so present is present
			err = l.store.List(ctx, ns, func(h vfs.Hash, _ int64) error {
				known[objKey{ns, h}] = start
				return nil
			})
		}
		if err != nil {
			return nil, fmt.Errorf("list the remote %v: %w", l.store, err)
		}
	}
	l.knownMu.Lock()
	defer l.knownMu.Unlock()
	for k, at := range l.known {
		if _, ok := known[k]; !ok && at.After(start) {
			known[k] = at // uploaded or fetched while the listing ran
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
	UploadedManifests int           `json:"uploaded_manifests"`
	Present           int           `json:"present"` // objects the remote had already
	Duration          time.Duration `json:"duration_ns"`
}

// errNoRemote is the answer of remote operations on a repository without
// one.
var errNoRemote = &vfs.Error{Op: "push", Code: vfs.CodeInvalid, Msg: "this repository has no remote; start vfsd serve with --remote s3://BUCKET/PREFIX"}

// Push uploads snapshot id and everything it needs that the remote lacks:
// its blobs, the records that hold its manifests, and its record, last.
// Uploads run in parallel. A failed push leaves what it uploaded in
// place, so that pushing again sends only the rest.
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
	blobs   map[vfs.Hash]struct{}
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
	blobs := map[vfs.Hash]struct{}{}
	err = snap.Tree.Walk(vfs.Root, func(_ vfs.Path, n vfs.Node) error {
		if n.IsFile() && !n.Blob.IsZero() {
			blobs[n.Blob] = struct{}{}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &pushPlan{snap: snap, id: snapID, records: records, blobs: blobs}, nil
}

// pushOnce is one try of Push: plan, then send what the remote lacks.
func (r *Repo) pushOnce(ctx context.Context, id string) (PushReport, error) {
	rep := PushReport{Snapshot: id}
	l := r.remote
	plan, err := r.planPush(ctx, id)
	if err != nil {
		return rep, fmt.Errorf("push %s: %w", shortID(id), err)
	}
	snap, snapID, records, blobs := plan.snap, plan.id, plan.records, plan.blobs
	rep.Blobs, rep.Records = len(blobs), len(records)+1
	known, err := r.knownSet(ctx)
	if err != nil {
		return rep, fmt.Errorf("push %s: %w", shortID(id), err)
	}
	// A blob the remote has is relied on if the parent's record, in the
	// remote, references it (GC keeps it), or if it is young enough that
	// GC keeps it longer than this push takes; an older one is touched.
	safe := r.remoteParentBlobs(ctx, snap, known)
	var todo, touch []objKey
	fresh := time.Now().Add(-l.opts.Grace / 2)
	l.knownMu.Lock()
	for h := range blobs {
		mod, ok := known[objKey{Blobs, h}]
		_, inParent := safe[h]
		switch {
		case !ok:
			todo = append(todo, objKey{Blobs, h})
		case !inParent && mod.Before(fresh):
			touch = append(touch, objKey{Blobs, h})
		}
	}
	for h := range records {
		if _, ok := known[objKey{Records, h}]; !ok {
			todo = append(todo, objKey{Records, h})
		}
	}
	_, haveRecord := known[objKey{Records, snapID}]
	l.knownMu.Unlock()
	rep.Present = len(blobs) + len(records) - len(todo)
	packed := r.packedManifests(todo, snapID)
	if err := r.touch(ctx, touch, &todo); err != nil {
		return rep, fmt.Errorf("push %s: %w", shortID(id), err)
	}
	// Blobs and manifests first, the snapshot's record last: a record in
	// the remote promises that all it needs is there.
	if err := r.upload(ctx, todo, packed, &rep); err != nil {
		return rep, fmt.Errorf("push %s: %w", shortID(id), err)
	}
	if haveRecord {
		rep.Present++
	} else if err := r.upload(ctx, []objKey{{Records, snapID}}, packed, &rep); err != nil {
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
func (r *Repo) remoteParentBlobs(ctx context.Context, snap *Snapshot, known map[objKey]time.Time) map[vfs.Hash]struct{} {
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
// cannot touch, or that vanished, join todo to be uploaded again.
func (r *Repo) touch(ctx context.Context, keys []objKey, todo *[]objKey) error {
	l := r.remote
	t, ok := l.store.(Toucher)
	for _, k := range keys {
		if !ok {
			*todo = append(*todo, k)
			continue
		}
		err := t.Touch(ctx, k.ns, k.h)
		switch {
		case errors.Is(err, vfs.ErrNotFound):
			l.forget(k.ns, k.h)
			*todo = append(*todo, k)
		case err != nil:
			return fmt.Errorf("touch %s %s in %v: %w", objectNoun(k.ns), k.h.Short(), l.store, err)
		default:
			l.markKnown(k.ns, k.h)
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
func (r *Repo) packedManifests(todo []objKey, own vfs.Hash) map[vfs.Hash]int {
	out := map[vfs.Hash]int{own: 0}
	for _, k := range todo {
		if k.ns == Records {
			out[k.h] = 0
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

// upload sends objects to the remote, Parallel at a time; packed counts
// the manifests of the records among them.
func (r *Repo) upload(ctx context.Context, todo []objKey, packed map[vfs.Hash]int, rep *PushReport) error {
	l := r.remote
	if len(todo) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan objKey)
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	for range min(l.opts.Parallel, len(todo)) {
		wg.Go(func() {
			for k := range work {
				n, err := r.uploadOne(ctx, k)
				mu.Lock()
				if err != nil {
					if firstErr == nil {
						firstErr = err
						cancel()
					}
				} else {
					rep.Uploaded++
					rep.UploadedBytes += n
					if k.ns == Blobs {
						rep.UploadedBlobs++
					} else {
						rep.UploadedManifests += packed[k.h]
					}
				}
				mu.Unlock()
			}
		})
	}
feed:
	for _, k := range todo {
		select {
		case work <- k:
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
	// Every object pushed is one the listing of the remote lacked.
	h, n, err := l.store.Put(ctx, k.ns, io.NewSectionReader(b, 0, b.Size()), PutOptions{Absent: true})
	if err != nil {
		return 0, fmt.Errorf("upload %s %s to %v: %w", objectNoun(k.ns), k.h.Short(), l.store, err)
	}
	if h != k.h {
		return 0, fmt.Errorf("upload %s %s: the local copy hashes to %s: %w", objectNoun(k.ns), k.h.Short(), h.Short(), ErrCorruptObject)
	}
	l.uploaded.Add(1)
	l.markKnown(k.ns, k.h)
	return n, nil
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
			todo = append(todo, cacheEntry{n.Blob, n.Size})
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	work := make(chan cacheEntry)
	var fetched atomic.Int64
	var wg sync.WaitGroup
	for range l.opts.Parallel {
		wg.Go(func() {
			for e := range work {
				if _, err := r.store.Stat(ctx, Blobs, e.h); err == nil {
					continue
				}
				if err := r.fetch(ctx, Blobs, e.h); err == nil {
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
