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
	sessions map[string]*vfs.Session
	snaps    map[string]*Snapshot     // loaded snapshots, by ID
	index    map[vfs.Hash]manifestLoc // where each known manifest is stored
	indexed  map[vfs.Hash]bool        // records whose manifests are indexed
	packs    map[vfs.Hash]bool        // indexed Records objects that are manifest packs
	slots    *slotPool                // prepared session directories

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

// OpenRepo opens the repository whose sessions live under sessionsDir and
// whose content is in store, recovering every session found there.
func OpenRepo(ctx context.Context, store Store, sessionsDir string, opts RepoOptions) (*Repo, error) {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if err := os.MkdirAll(sessionsDir, 0o700); err != nil {
		return nil, fmt.Errorf("open repo: %w", err)
	}
	r := &Repo{
		store: store, sessionsDir: sessionsDir, clock: opts.Clock, policy: opts.Policy, quota: opts.Quota, sessionUID: opts.SessionUID,
		sessions: make(map[string]*vfs.Session), snaps: make(map[string]*Snapshot),
		index: make(map[vfs.Hash]manifestLoc), indexed: make(map[vfs.Hash]bool), packs: make(map[vfs.Hash]bool),
		pins:      pinSet{counts: make(map[vfs.Hash]int)},
		lazyCache: vfs.NewLazyCache(lazyCacheEntries),
		eager:     eagerLoad,
	}
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
			r.Close()
			return nil, fmt.Errorf("open repo: %w", err)
		}
		s, err := vfs.Open(ctx, r.sessionOptions(hdr.Session, dir))
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("open repo: recover session %s: %w", hdr.Session, err)
		}
		r.sessions[hdr.Session] = s
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

// Close closes every session (they stay on disk). It does not close the
// store.
func (r *Repo) Close() error {
	r.closeRemote()
	if r.slots != nil {
		r.slots.close()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for _, s := range r.sessions {
		errs = append(errs, s.Close())
	}
	r.sessions = map[string]*vfs.Session{}
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
	if _, ok := r.sessions[id]; ok {
		r.mu.Unlock()
		return nil, &vfs.Error{Op: "create session", Path: id, Code: vfs.CodeExists, Msg: "a session with this ID exists"}
	}
	r.sessions[id] = nil // reserve the ID
	r.mu.Unlock()
	s, err := vfs.Create(ctx, r.sessionOptions(id, r.slots.take()), base, opts.Base)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		delete(r.sessions, id)
		return nil, fmt.Errorf("create session %s: %w", id, err)
	}
	r.sessions[id] = s
	return s, nil
}

// Session returns an open session by ID.
func (r *Repo) Session(id string) (*vfs.Session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sessions[id]
	if s == nil {
		return nil, &vfs.Error{Op: "session", Path: id, Code: vfs.CodeNotFound, Msg: "no such session"}
	}
	return s, nil
}

// Sessions returns the open sessions, sorted by ID.
func (r *Repo) Sessions() []*vfs.Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*vfs.Session, 0, len(r.sessions))
	for _, s := range r.sessions {
		if s != nil {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID() < out[j].ID() })
	return out
}

// DeleteSession closes a session and removes its state from disk. Its
// snapshots stay.
func (r *Repo) DeleteSession(id string) error {
	r.mu.Lock()
	s := r.sessions[id]
	delete(r.sessions, id)
	r.mu.Unlock()
	if s == nil {
		return &vfs.Error{Op: "delete session", Path: id, Code: vfs.CodeNotFound, Msg: "no such session"}
	}
	err := s.Close()
	if rerr := os.RemoveAll(s.Dir()); rerr != nil {
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
