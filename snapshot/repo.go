package snapshot

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/vfsd/vfsd/vfs"
)

// Repo ties a Store to the sessions that use it: it creates, recovers and
// tracks sessions, and takes, restores, forks, diffs and materializes their
// snapshots, and collects garbage. It is safe for concurrent use.
type Repo struct {
	store       Store
	sessionsDir string
	clock       func() time.Time
	policy      func(id string) vfs.Policy
	quota       func(id string) vfs.Quota
	sessionUID  func(s *vfs.Session) string

	mu       sync.Mutex
	sessions map[string]*sessionSlot  // by ID; opened on first use
	closed   bool                     // Close was called: nothing opens any more
	opens    int64                    // sessions opened by vfs.Open (OpenCount)
	snaps    map[string]*Snapshot     // loaded snapshots, by ID
	index    map[vfs.Hash]manifestLoc // where each known manifest is stored
	indexed  map[vfs.Hash]bool        // records whose manifests are indexed
	packs    map[vfs.Hash]bool        // indexed Records objects that are manifest packs
	heads    map[vfs.Hash]*headRecord // local records opened by their head (headrec.go)
	corrupt  map[vfs.Hash]bool        // records found not to match their hash
	// verifying lists the records whose background check runs or passed.
	verifying map[vfs.Hash]bool
	bgCtx     context.Context // ends at Close: background checks stop
	bgCancel  context.CancelFunc
	bg        sync.WaitGroup // background checks running
	slots     *slotPool      // prepared session directories

	ownStore io.Closer // closed by Close: the store OpenLocalRepo opened

	remote *remoteLink // the shared remote store, if any (SetRemote)

	manifests manifestCache  // recently written or read manifests
	lazyCache *vfs.LazyCache // directories lazily loaded trees decoded
	eager     bool           // load every snapshot whole (tests compare the two)

	pins pinSet
	// gc is held shared by every Put until the new blob is pinned, and
	// exclusively by garbage collection while it deletes: so a Put never
	// finds, and then relies on, a blob that is being deleted.
	gc sync.RWMutex
	// gcRun serialises garbage collections and snapshot deletions.
	gcRun sync.Mutex
	// records is held shared by every writer of a snapshot record from the
	// moment it consults the manifest index until the record is indexed,
	// and exclusively by whatever deletes records: so no new record relies
	// on a manifest in a record being deleted.
	records sync.RWMutex
}

// RepoOptions configure a Repo.
type RepoOptions struct {
	// Clock returns the current time; time.Now when nil.
	Clock func() time.Time
	// Policy, if set, returns the policy hook for a session.
	Policy func(sessionID string) vfs.Policy
	// Quota, if set, returns the quota of a session.
	Quota func(sessionID string) vfs.Quota
	// SessionUID, if set, returns the incarnation of session s that a
	// snapshot of it records (Record.SessionUID); "" records none.
	SessionUID func(s *vfs.Session) string
}

// eagerLoad makes new repositories load every snapshot whole (tests and
// benchmarks compare the two ways).
var eagerLoad bool

// lazyCacheEntries bounds the directory entries lazily loaded trees keep
// decoded: some 64 MiB.
const lazyCacheEntries = 256 << 10

// sessionSlot is one session of the repository: found on disk (dir, from
// its journal header), and open once something used it.
type sessionSlot struct {
	dir string
	s   *vfs.Session // nil until opened (or while NewSession creates it)
	// creating is set while NewSession creates the session: the ID is
	// taken but the session is not there yet.
	creating bool
	// opening is non-nil while a first use opens the session; closed when
	// that open ends, with s or err set.
	opening chan struct{}
	err     error // the last failed open's error, for the uses that waited on it
	// needs caches vfs.JournalSnapshots of a session not open: nothing
	// writes its journal until it is opened. Guarded by Repo.mu.
	needs []string
}

// OpenRepo opens the repository whose sessions live under sessionsDir and
// whose content is in store. It finds every session there by its
// directory's name (see sessionDirName: one directory listing, no file
// read per session) but opens none: a session is recovered — its base
// loaded, its journal replayed, its upper files checked — on its first use
// (Session, DeleteSession, OpenSessions), so opening a repository costs the
// same however many sessions and snapshots it holds. A session that cannot
// be recovered fails on its uses, not here. Directories of older
// repositories, named d-<random>, are still found by their journal's
// header.
func OpenRepo(ctx context.Context, store Store, sessionsDir string, opts RepoOptions) (*Repo, error) {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if err := os.MkdirAll(sessionsDir, 0o700); err != nil {
		return nil, fmt.Errorf("open repo: %w", err)
	}
	r := &Repo{
		store: store, sessionsDir: sessionsDir, clock: opts.Clock, policy: opts.Policy, quota: opts.Quota, sessionUID: opts.SessionUID,
		sessions: make(map[string]*sessionSlot), snaps: make(map[string]*Snapshot),
		index: make(map[vfs.Hash]manifestLoc), indexed: make(map[vfs.Hash]bool), packs: make(map[vfs.Hash]bool),
		heads: make(map[vfs.Hash]*headRecord), corrupt: make(map[vfs.Hash]bool), verifying: make(map[vfs.Hash]bool),
		pins:      pinSet{counts: make(map[vfs.Hash]int)},
		lazyCache: vfs.NewLazyCache(lazyCacheEntries),
		eager:     eagerLoad,
	}
	r.bgCtx, r.bgCancel = context.WithCancel(context.WithoutCancel(ctx))
	entries, err := os.ReadDir(sessionsDir)
	if err != nil {
		return nil, fmt.Errorf("open repo: %w", err)
	}
	var slots []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(sessionsDir, e.Name())
		if strings.HasPrefix(e.Name(), deletedDirPrefix) {
			_ = os.RemoveAll(dir) // a deletion cut short
			continue
		}
		if id, ok := parseSessionDirName(e.Name()); ok {
			if prev := r.sessions[id]; prev != nil && !newerSessionDir(dir, prev.dir) {
				continue
			}
			r.sessions[id] = &sessionSlot{dir: dir}
			continue
		}
		hdr, err := vfs.ReadHeader(dir)
		switch {
		case errors.Is(err, vfs.ErrNoSession) && vfs.IsPrepared(dir):
			slots = append(slots, dir)
			continue
		case errors.Is(err, vfs.ErrNoSession):
			// A session whose creation never completed: nothing was
			// acknowledged, so nothing is lost.
			_ = os.RemoveAll(dir)
			continue
		case err != nil:
			// Without its header the directory cannot even be named.
			r.Close()
			return nil, fmt.Errorf("open repo: %w; move %s out of %s to open the repository without it", err, dir, sessionsDir)
		}
		if prev := r.sessions[hdr.Session]; prev != nil && !newerSessionDir(dir, prev.dir) {
			continue
		}
		r.sessions[hdr.Session] = &sessionSlot{dir: dir}
	}
	r.slots = newSlotPool(sessionsDir, slots)
	// Files start empty; keep the empty blob in the store for readers that
	// go to the store directly (materialize, diff).
	if _, _, err := store.Put(ctx, Blobs, strings.NewReader(""), PutOptions{}); err != nil {
		r.Close()
		return nil, fmt.Errorf("open repo: store the empty blob: %w", err)
	}
	return r, nil
}

// Store returns the repository's store.
func (r *Repo) Store() Store { return r.store }

// Close closes every open session (they stay on disk; those never opened
// are not touched). It does not close the store (but see OpenLocalRepo).
// An open in flight finishes and closes its session itself.
func (r *Repo) Close() error {
	r.mu.Lock()
	r.closed = true // no background check starts any more
	r.mu.Unlock()
	r.bgCancel()
	r.bg.Wait()
	r.closeRemote()
	if r.slots != nil {
		r.slots.close()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	var errs []error
	for _, sl := range r.sessions {
		if sl.s != nil {
			errs = append(errs, sl.s.Close())
		}
	}
	r.sessions = map[string]*sessionSlot{}
	if r.ownStore != nil {
		errs = append(errs, r.ownStore.Close())
		r.ownStore = nil
	}
	return errors.Join(errs...)
}

// OpenLocalRepo opens the repository kept whole in dir — a LocalStore in
// dir/store, the sessions in dir/sessions — creating it if need be: what
// a command or a benchmark working on a directory of its own wants.
// Closing the repository closes its store too.
func OpenLocalRepo(ctx context.Context, dir string, opts RepoOptions) (*Repo, error) {
	store, err := OpenLocal(filepath.Join(dir, "store"))
	if err != nil {
		return nil, err
	}
	r, err := OpenRepo(ctx, store, filepath.Join(dir, "sessions"), opts)
	if err != nil {
		store.Close()
		return nil, err
	}
	r.ownStore = store
	return r, nil
}

var sessionIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// ValidSessionID reports whether id can name a session: 1 to 64 letters,
// digits, '_', '.' and '-', not starting with a punctuation mark.
func ValidSessionID(id string) bool { return sessionIDPattern.MatchString(id) }

// NewSessionID returns a fresh random session ID.
func NewSessionID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return "s-" + hex.EncodeToString(b[:])
}

// sessionOptions returns the options of session id, kept in dir. Session
// directories have opaque names; the journal header names the session.
func (r *Repo) sessionOptions(id, dir string) vfs.Options {
	opts := vfs.Options{
		ID:    id,
		Dir:   dir,
		Blobs: repoBlobs{r},
		Clock: r.clock,
		LoadTree: func(ctx context.Context, id string) (vfs.Tree, error) {
			snap, err := r.Get(ctx, id)
			if err != nil {
				return vfs.Tree{}, err
			}
			return snap.Tree, nil
		},
	}
	if r.policy != nil {
		opts.Policy = r.policy(id)
	}
	if r.quota != nil {
		opts.Quota = r.quota(id)
	}
	return opts
}

// SessionOptions configure a new session.
type SessionOptions struct {
	// ID names the session; a random one when empty.
	ID string
	// Base is the snapshot the session starts from; empty when "".
	Base string
}

// NewSession creates a session starting from opts.Base. It costs O(1) in
// the size of the base: the tree is shared, nothing is copied.
func (r *Repo) NewSession(ctx context.Context, opts SessionOptions) (*vfs.Session, error) {
	id := opts.ID
	if id == "" {
		id = NewSessionID()
	}
	if !ValidSessionID(id) {
		return nil, &vfs.Error{Op: "create session", Path: id, Code: vfs.CodeInvalid,
			Msg: "session IDs are 1-64 letters, digits, '_', '.' or '-'"}
	}
	if opts.Base != "" {
		if err := r.fetchRecordUnlocked(ctx, opts.Base); err != nil {
			return nil, err
		}
	}
	// The base cannot be deleted between its load and the session's
	// creation, after which the session holds it.
	r.records.RLock()
	defer r.records.RUnlock()
	var base vfs.Tree
	if opts.Base != "" {
		snap, err := r.Get(ctx, opts.Base)
		if err != nil {
			return nil, err
		}
		base = snap.Tree
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, errRepoClosed("create session", id)
	}
	if _, ok := r.sessions[id]; ok {
		r.mu.Unlock()
		return nil, &vfs.Error{Op: "create session", Path: id, Code: vfs.CodeExists, Msg: "a session with this ID exists"}
	}
	sl := &sessionSlot{creating: true} // reserve the ID
	r.sessions[id] = sl
	r.mu.Unlock()
	dir, err := nameSessionDir(id, r.slots.take())
	if err != nil {
		r.mu.Lock()
		delete(r.sessions, id)
		r.mu.Unlock()
		return nil, fmt.Errorf("create session %s: %w", id, err)
	}
	s, err := vfs.Create(ctx, r.sessionOptions(id, dir), base, opts.Base)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		delete(r.sessions, id)
		return nil, fmt.Errorf("create session %s: %w", id, err)
	}
	if r.closed { // closed meanwhile: Close did not see it
		s.Close()
		return nil, errRepoClosed("create session", id)
	}
	sl.dir, sl.s, sl.creating = dir, s, false
	return s, nil
}

func errRepoClosed(op, id string) error {
	return &vfs.Error{Op: op, Path: id, Code: vfs.CodeClosed, Msg: "the repository is closed"}
}

// Session returns session id, opening (recovering) it on its first use.
// Concurrent first uses open it once. A session that cannot be recovered
// (a corrupt journal, a base snapshot that is gone) fails with an error
// that names it; the repository and its other sessions work on, and the
// session can still be deleted (DeleteSession).
func (r *Repo) Session(id string) (*vfs.Session, error) {
	r.mu.Lock()
	for {
		sl := r.sessions[id]
		switch {
		case r.closed:
			r.mu.Unlock()
			return nil, errRepoClosed("session", id)
		case sl == nil || sl.creating:
			r.mu.Unlock()
			return nil, &vfs.Error{Op: "session", Path: id, Code: vfs.CodeNotFound, Msg: "no such session"}
		case sl.s != nil:
			r.mu.Unlock()
			return sl.s, nil
		case sl.opening != nil: // another use is opening it: wait for that
			ch := sl.opening
			r.mu.Unlock()
			<-ch
			r.mu.Lock()
			if sl.s == nil && sl.err != nil && r.sessions[id] == sl {
				err := sl.err
				r.mu.Unlock()
				return nil, err
			}
			continue
		}
		return r.openSlot(id, sl) // releases r.mu
	}
}

// openSlot opens session id, found in sl.dir. r.mu is held on entry and
// released on return. The open runs without r.mu, so that other sessions
// stay usable meanwhile.
func (r *Repo) openSlot(id string, sl *sessionSlot) (*vfs.Session, error) {
	ch := make(chan struct{})
	sl.opening, sl.err = ch, nil
	r.opens++
	r.mu.Unlock()
	// The open is not the caller's to cancel: others may be waiting on it.
	s, err := vfs.Open(context.Background(), r.sessionOptions(id, sl.dir))
	r.mu.Lock()
	defer r.mu.Unlock()
	defer close(ch)
	sl.opening = nil
	if errors.Is(err, vfs.ErrNoSession) && vfs.JournalEmpty(sl.dir) && r.sessions[id] == sl {
		// Named for the session, but its creation never wrote the
		// journal's header (a crash between the two): nothing was
		// acknowledged, so nothing is lost. A journal with bytes but no
		// header is damage, reported below.
		delete(r.sessions, id)
		_ = os.RemoveAll(sl.dir)
		return nil, &vfs.Error{Op: "session", Path: id, Code: vfs.CodeNotFound, Msg: "no such session"}
	}
	if err != nil {
		sl.err = &SessionOpenError{ID: id, Dir: sl.dir, Err: err}
		return nil, sl.err
	}
	if r.closed || r.sessions[id] != sl { // closed, or deleted, meanwhile
		s.Close()
		return nil, errRepoClosed("session", id)
	}
	sl.s = s
	return s, nil
}

// SessionOpenError reports a session found in the repository that could not
// be opened (recovered from its journal). Its errors.Is and errors.As see
// the cause.
type SessionOpenError struct {
	ID  string // the session
	Dir string // its directory
	Err error  // why it could not be opened
}

func (e *SessionOpenError) Error() string {
	return fmt.Sprintf("session %s cannot be opened: %v; its state is in %s: restore that directory from a backup, or delete the session to drop it", e.ID, e.Err, e.Dir)
}

func (e *SessionOpenError) Unwrap() error { return e.Err }

// SessionIDs returns the IDs of every session in the repository, open or
// not, sorted. It opens none.
func (r *Repo) SessionIDs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.sessions))
	for id, sl := range r.sessions {
		if !sl.creating {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// Sessions returns the sessions open now (used since the repository was
// opened, or created), sorted by ID. Sessions not used yet are not in it:
// see SessionIDs and OpenSessions.
func (r *Repo) Sessions() []*vfs.Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*vfs.Session, 0, len(r.sessions))
	for _, sl := range r.sessions {
		if sl.s != nil {
			out = append(out, sl.s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID() < out[j].ID() })
	return out
}

// OpenSessions opens every session not open yet and returns them all,
// sorted by ID: what must see every session's state (garbage collection,
// deleting snapshots) uses it. It fails on the first session that cannot
// be opened (a *SessionOpenError).
func (r *Repo) OpenSessions() ([]*vfs.Session, error) {
	ids := r.SessionIDs()
	out := make([]*vfs.Session, 0, len(ids))
	for _, id := range ids {
		s, err := r.Session(id)
		if errors.Is(err, vfs.ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// sessionSnapshots returns, by session ID, the snapshots every session
// needs (vfs.Session.Snapshots): an open session's from the session, one
// not opened yet's from its journal (vfs.JournalSnapshots), without
// opening it.
func (r *Repo) sessionSnapshots(ctx context.Context) (map[string][]string, error) {
	type found struct {
		id    string
		sl    *sessionSlot
		s     *vfs.Session
		needs []string
	}
	r.mu.Lock()
	all := make([]found, 0, len(r.sessions))
	for id, sl := range r.sessions {
		if !sl.creating { // one being created holds its base through r.records
			all = append(all, found{id, sl, sl.s, sl.needs})
		}
	}
	r.mu.Unlock()
	out := make(map[string][]string, len(all))
	for _, f := range all {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		switch {
		case f.s != nil:
			out[f.id] = f.s.Snapshots()
			continue
		case f.needs != nil:
			out[f.id] = f.needs
			continue
		}
		ids, err := vfs.JournalSnapshots(f.sl.dir)
		if errors.Is(err, vfs.ErrNoSession) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, &SessionOpenError{ID: f.id, Dir: f.sl.dir, Err: err}
		}
		if ids == nil {
			ids = []string{}
		}
		r.mu.Lock()
		f.sl.needs = ids
		r.mu.Unlock()
		out[f.id] = ids
	}
	return out, nil
}

// OpenCount returns how many sessions the repository has opened (recovered
// with vfs.Open) since it was opened; sessions it created are not counted.
// For tests and diagnostics: it shows that opening a repository opens none.
func (r *Repo) OpenCount() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.opens
}

// DeleteSession closes a session and removes its state from disk. Its
// snapshots stay. A session never opened, or that cannot be opened, is
// removed without opening it.
func (r *Repo) DeleteSession(id string) error {
	r.mu.Lock()
	sl := r.sessions[id]
	for sl != nil && sl.opening != nil { // let an open in flight finish
		ch := sl.opening
		r.mu.Unlock()
		<-ch
		r.mu.Lock()
		sl = r.sessions[id]
	}
	if sl == nil || sl.creating {
		r.mu.Unlock()
		return &vfs.Error{Op: "delete session", Path: id, Code: vfs.CodeNotFound, Msg: "no such session"}
	}
	delete(r.sessions, id)
	r.mu.Unlock()
	var err error
	if sl.s != nil {
		err = sl.s.Close()
	}
	dir := sl.dir
	// Renamed first, so that a removal cut short leaves a directory the
	// next OpenRepo removes, not a session that comes back.
	if gone := filepath.Join(filepath.Dir(dir), deletedDirPrefix+filepath.Base(dir)); os.Rename(dir, gone) == nil {
		dir = gone
	}
	if rerr := os.RemoveAll(dir); rerr != nil {
		err = errors.Join(err, fmt.Errorf("remove session %s: %w", id, rerr))
	}
	return err
}

// pinSet counts pins on blobs, and while a garbage collection runs also
// records every blob pinned and every snapshot recorded since it started.
type pinSet struct {
	mu         sync.Mutex
	counts     map[vfs.Hash]int
	fresh      map[vfs.Hash]struct{} // nil unless a collection runs
	freshSnaps []*Snapshot
}

func (p *pinSet) pin(h vfs.Hash) func() {
	p.mu.Lock()
	p.counts[h]++
	if p.fresh != nil {
		p.fresh[h] = struct{}{}
	}
	p.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			if p.counts[h]--; p.counts[h] <= 0 {
				delete(p.counts, h)
			}
			p.mu.Unlock()
		})
	}
}

// repoBlobs is the vfs.BlobStore a repository gives its sessions.
type repoBlobs struct{ r *Repo }

func (b repoBlobs) Put(ctx context.Context, rd io.Reader, deferred bool) (vfs.Hash, int64, func(), error) {
	return b.r.put(ctx, Blobs, rd, PutOptions{Deferred: deferred})
}

func (b repoBlobs) Sync(ctx context.Context) error { return b.r.store.Sync(ctx) }

func (b repoBlobs) Open(ctx context.Context, h vfs.Hash) (vfs.Blob, error) {
	return b.r.openObject(ctx, Blobs, h)
}

// OpenLocal opens blob h if the local store has it; with a remote, a blob
// it lacks fails at once with an error matching vfs.ErrNotLocal (sessions
// then fetch it with Fetch, holding no lock).
func (b repoBlobs) OpenLocal(ctx context.Context, h vfs.Hash) (vfs.Blob, error) {
	return b.r.openLocalObject(ctx, Blobs, h)
}

// Fetch brings blob h from the remote into the local store (nothing to do
// without a remote, or when it is here already).
func (b repoBlobs) Fetch(ctx context.Context, h vfs.Hash) error {
	if b.r.remote == nil {
		return nil
	}
	return b.r.fetchBlob(ctx, h)
}

// put stores content and pins it, so garbage collection cannot delete it
// before the caller references it.
func (r *Repo) put(ctx context.Context, ns Namespace, rd io.Reader, opts PutOptions) (vfs.Hash, int64, func(), error) {
	r.gc.RLock()
	defer r.gc.RUnlock()
	h, n, err := r.store.Put(ctx, ns, rd, opts)
	if err != nil {
		return vfs.Hash{}, 0, nil, err
	}
	if r.remote != nil && ns == Blobs {
		r.remote.own(h) // stored here: no longer a cache entry
	}
	return h, n, r.pins.pin(h), nil
}

// Blobs returns the repository's blob store as sessions see it: every Put
// pinned against garbage collection until unpinned.
func (r *Repo) Blobs() vfs.BlobStore { return repoBlobs{r} }

// Adopt pins blob h if the store still has it, so that content known from
// an earlier import is reused without reading it again. It reports false
// when the blob is gone (collected since) and must be stored anew.
func (r *Repo) Adopt(ctx context.Context, h vfs.Hash) (unpin func(), ok bool, err error) {
	r.gc.RLock()
	defer r.gc.RUnlock()
	if _, err := r.store.Stat(ctx, Blobs, h); err != nil {
		if errors.Is(err, vfs.ErrNotFound) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return r.pins.pin(h), true, nil
}

// BlobPath returns the local file holding blob h when the repository's store
// is a LocalStore. The
// file exists while a tree or pin references h.
func (b repoBlobs) BlobPath(h vfs.Hash) (string, bool) {
	ls, ok := b.r.store.(*LocalStore)
	if !ok {
		return "", false
	}
	p := ls.ObjectPath(Blobs, h)
	if b.r.remote != nil {
		// With a remote, a blob may not have been fetched yet (or may
		// have been evicted): then the caller reads it through Open.
		if _, err := os.Lstat(p); err != nil {
			return "", false
		}
		b.r.remote.touch(h)
	}
	return p, true
}

// PutFile stores the content of the local file f as a blob, pinned as
// Put's: through LocalStore.PutFile when the repository's store is local
// (by a link when opts.Frozen, a clone, or a copy), else read and Put.
func (b repoBlobs) PutFile(ctx context.Context, f *os.File, opts vfs.PutFileOptions) (vfs.Hash, int64, func(), error) {
	return b.r.putFile(ctx, f, opts)
}

// putFile is repoBlobs.PutFile.
func (r *Repo) putFile(ctx context.Context, f *os.File, opts vfs.PutFileOptions) (vfs.Hash, int64, func(), error) {
	ls, ok := r.store.(*LocalStore)
	if !ok {
		fi, err := f.Stat()
		if err != nil {
			return vfs.Hash{}, 0, nil, fmt.Errorf("put %s: %w", f.Name(), err)
		}
		var rd io.Reader = vfs.NewSparseReader(f, fi.Size())
		if opts.Observe != nil {
			rd = io.TeeReader(rd, opts.Observe)
		}
		return r.put(ctx, Blobs, rd, PutOptions{Deferred: opts.Deferred})
	}
	r.gc.RLock()
	defer r.gc.RUnlock()
	res, err := ls.PutFile(ctx, Blobs, f, PutFileOptions{Frozen: opts.Frozen, Deferred: opts.Deferred, Observe: opts.Observe})
	if err != nil {
		return vfs.Hash{}, 0, nil, err
	}
	if r.remote != nil {
		r.remote.own(res.Hash) // stored here: no longer a cache entry
	}
	return res.Hash, res.Size, r.pins.pin(res.Hash), nil
}
