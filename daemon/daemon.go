package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/contract"
	"github.com/vfsd/vfsd/coord"
	"github.com/vfsd/vfsd/hostmount"
	"github.com/vfsd/vfsd/mount"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/policy"
)

// Daemon is a running vfsd: its store, its sessions and their metadata.
// New opens it, its methods serve callers (package httpapi puts the HTTP
// API in front of them), Close releases it.
type Daemon struct {
	cfg        Config
	log        *slog.Logger
	lock       *os.File // holds the data dir's lock
	store      *snapshot.LocalStore
	repo       *snapshot.Repo
	metas      metaStore
	adminToken string
	metrics    *metrics

	imMu      sync.Mutex
	importers map[bool]*hostmount.Importer // by ASCII-only

	mu       sync.RWMutex
	sessions map[string]*entry
	tokens   map[string]string // session token hash → session ID

	stopping  chan struct{} // closed when the daemon starts shutting down
	stopOnce  sync.Once
	closeOnce sync.Once
	closeErr  error
	bgMu      sync.Mutex     // orders joining bg against stop
	bg        sync.WaitGroup // closes of expired sessions in flight

	// sharedBlobs are the blobs the admin uploaded: any session may read
	// them (see blobgrants.go).
	sharedBlobs blobGrants

	emptyMu   sync.Mutex
	emptySnap string // a snapshot of the empty tree, made on first use

	remoteURL string // Config.Remote, normalised; "" without one

	// fleet is the fleet's control plane (fleet.go); nil without a remote.
	fleet    *coord.Fleet
	started  time.Time
	adoptMu  sync.Mutex
	adopting map[string]*adoptCall
}

// entry is one session as the daemon tracks it.
type entry struct {
	id   string
	pol  *policy.Policy
	done chan struct{} // closed when the session is closed
	// closeReason says why; written before done is closed.
	closeReason string

	// hostMu serialises the operations that involve the host: reset
	// (which imports again), apply, FUSE mount and unmount.
	hostMu sync.Mutex
	// snapMu serialises a snapshot quota check with the snapshot.
	snapMu sync.Mutex

	mu   sync.Mutex // guards meta, fuse and gone, and saving meta
	meta *sessionMeta
	fuse map[string]mount.Backend // FUSE and overlay mounts, by directory
	gone bool                     // closed: nothing may be mounted or saved any more

	// Set once the session exists and is open; read under Daemon.mu (or
	// after open returned).
	s  *vfs.Session
	ts *tools.Toolset
	// stored marks a session the daemon found at start and has not opened
	// yet: it exists (lookup finds it) and open opens it on first use.
	// Read under Daemon.mu.
	stored bool
	// openMu serialises opening the session (open) with itself and with
	// closing it.
	openMu sync.Mutex

	mcp mcpEndpoint // its MCP endpoint's handlers

	// rootCopyStale says the copy of the session in its directory on disk
	// (copy mode, rootdirs.go) is out of date; rootCopyWatch is the
	// session subscription that sets it, nil until the first copy. Both
	// under hostMu, but the flag, which the subscription sets.
	rootCopyStale atomic.Bool
	rootCopyWatch func()
	own           ownership // its standing in the fleet (fleet.go)

	// k is the session's contract (sessionMeta.Contract), toolNames its
	// tools' names; fixed for the entry's life.
	k         contract.Contract
	toolNames map[string]bool
	// calls is the session's call log; set with s, nil if it could not be
	// opened.
	calls *callLog

	// Fixed for the entry's life, copied from its metadata: read without mu.
	uid     string // sessionMeta.UID: this incarnation
	legacy  int64  // for Legacy metadata, Created in Unix ms; else 0
	lineage string // sessionMeta.Lineage
	// blobs are the blobs its token may read (see blobgrants.go).
	blobs blobGrants
}

// New opens the daemon's data directory: the store, the sessions found
// there and their metadata, and mounts again the FUSE and overlay mounts
// sessions had. A session is opened (recovered from its journal) on its
// first use, except those with mounts, which are opened to be mounted
// again: so a restart costs the same however many sessions there are. It
// does not listen yet; Serve does.
func New(ctx context.Context, cfg Config) (*Daemon, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	lock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	tok, err := loadAdminToken(cfg)
	if err != nil {
		lock.Close()
		return nil, err
	}
	store, err := snapshot.OpenLocal(filepath.Join(cfg.DataDir, "store"))
	if err != nil {
		lock.Close()
		return nil, err
	}
	d := &Daemon{
		cfg: cfg, log: cfg.Logger, lock: lock, store: store, adminToken: tok,
		metas:     metaStore{dir: filepath.Join(cfg.DataDir, "meta")},
		metrics:   newMetrics(),
		importers: make(map[bool]*hostmount.Importer),
		sessions:  make(map[string]*entry),
		tokens:    make(map[string]string),
		stopping:  make(chan struct{}),
	}
	d.sharedBlobs.max = maxSharedBlobGrants
	if err := d.recover(ctx); err != nil {
		if d.repo != nil {
			d.repo.Close()
		}
		store.Close()
		lock.Close()
		return nil, err
	}
	d.startFleetLoop()
	return d, nil
}

// lockDataDir takes the data dir's lock, so that one daemon at a time
// serves it.
func lockDataDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock the data dir: %w", err)
	}
	if err := lockFileNB(f); err != nil {
		f.Close()
		if errors.Is(err, errLocked) {
			return nil, fmt.Errorf("another vfsd is using the data dir %s; stop it, or give another --data-dir", dir)
		}
		return nil, fmt.Errorf("lock the data dir: %w", err)
	}
	return f, nil
}

// recover loads the metadata, opens the repository (which finds the
// sessions without opening them) and pairs them up; it opens only the
// sessions it must mount again (and any without metadata, to adopt them).
func (d *Daemon) recover(ctx context.Context) error {
	metas, err := d.metas.loadAll()
	if err != nil {
		return err
	}
	for id, m := range metas {
		if m.UID == "" { // written before incarnations existed
			m.UID, m.Legacy = newSessionUID(), true
			if err := d.metas.save(m); err != nil {
				return err
			}
		}
		pol, err := loadPolicy(m)
		if err != nil {
			return fmt.Errorf("session %s metadata: %w", id, err)
		}
		k, err := contract.Lookup(m.Contract)
		if err != nil {
			return fmt.Errorf("session %s metadata: %w; is this vfsd older than the one that created it?", id, err)
		}
		d.sessions[id] = newEntry(id, pol, m, k)
	}
	repo, err := snapshot.OpenRepo(ctx, d.store, filepath.Join(d.cfg.DataDir, "sessions"),
		snapshot.RepoOptions{Policy: d.policyHook, Quota: d.quotaHook, SessionUID: d.sessionUIDHook})
	if err != nil {
		return err
	}
	d.repo = repo
	if err := d.linkRemote(ctx); err != nil {
		return err
	}
	for _, id := range repo.SessionIDs() {
		if e := d.sessions[id]; e != nil {
			// Opened on first use (open); its token works from now.
			e.stored = true
			if e.meta.TokenHash != "" {
				d.tokens[e.meta.TokenHash] = id
			}
			continue
		}
		// State without metadata (rare: from before metadata existed):
		// open it to adopt it under the default policy.
		s, err := repo.Session(id)
		if err != nil {
			d.log.Error("a session without metadata cannot be opened; it is left as it is", "session", id, "err", err)
			continue
		}
		info := s.Info()
		m := &sessionMeta{ID: id, Created: info.Created, Policy: policy.PresetDefault,
			Profile: defaultProfile, Base: info.Initial, UID: newSessionUID(), Legacy: true}
		if err := d.metas.save(m); err != nil {
			return err
		}
		d.log.Warn("adopted a session without metadata, under the default policy and with no token", "session", id)
		k, _ := contract.Lookup(contract.Default)
		e := newEntry(id, policy.Default(), m, k)
		d.sessions[id] = e
		if err := d.attach(e, s); err != nil {
			return err
		}
	}
	for id, e := range d.sessions {
		if e.s == nil && !e.stored { // its creation never finished: nothing was acknowledged
			delete(d.sessions, id)
			if err := d.metas.remove(id); err != nil {
				return err
			}
			d.log.Info("dropped the metadata of a session that was never created", "session", id)
		}
	}
	d.removeStrayCallLogs()
	if d.cfg.NoRemount {
		return nil
	}
	// Sessions that had mounts are opened now, to be mounted again: an
	// overlay mount's upper directory holds acknowledged writes the new
	// mount takes over. The others stay closed until used.
	for _, e := range d.sessions {
		e.mu.Lock()
		mounted := len(e.meta.Fuse) > 0
		e.mu.Unlock()
		if !mounted {
			continue
		}
		if err := d.open(e); err != nil {
			d.log.Error("a session with mounts cannot be opened, so it is not mounted again", "session", e.id, "err", err)
			continue
		}
		d.remount(e)
	}
	return nil
}

// open opens session e, found at start, on its first use and makes it
// usable (attach); concurrent first uses open it once. A session that
// cannot be opened fails with an error saying what to do; it can still be
// closed. A session open already, or created by this daemon, returns at
// once.
func (d *Daemon) open(e *entry) error {
	d.mu.RLock()
	ready := e.s != nil
	d.mu.RUnlock()
	if ready {
		return nil
	}
	e.openMu.Lock()
	defer e.openMu.Unlock()
	d.mu.RLock()
	ready, cur := e.s != nil, d.sessions[e.id]
	d.mu.RUnlock()
	switch {
	case ready:
		return nil
	case cur != e: // closed meanwhile
		return errClosed(e.id)
	}
	select {
	case <-d.stopping: // Close has passed this entry, or is about to
		return apiErr(api.CodeUnavailable, "the daemon is shutting down; retry once it is back")
	default:
	}
	s, err := d.repo.Session(e.id)
	var oe *snapshot.SessionOpenError
	if errors.As(err, &oe) {
		return apiErr(api.CodeInternal, "%v; to drop it, close it with vfsd session close %s (DELETE /v1/sessions/%s)", err, e.id, e.id)
	}
	if err != nil {
		return fmt.Errorf("open session %s: %w", e.id, err)
	}
	return d.attach(e, s)
}

func newEntry(id string, pol *policy.Policy, m *sessionMeta, k contract.Contract) *entry {
	e := &entry{id: id, pol: pol, meta: m, done: make(chan struct{}), fuse: make(map[string]mount.Backend),
		uid: m.UID, lineage: m.Lineage, k: k, toolNames: map[string]bool{}}
	for _, t := range k.Tools() {
		e.toolNames[t.Name] = true
	}
	if m.Legacy {
		e.legacy = m.Created.UnixMilli()
	}
	return e
}

// sessionUIDHook tells the repository which incarnation a snapshot of s is
// of: the open session's whose state s is, or none (s was closed meanwhile,
// and its ID may be another incarnation's by now).
func (d *Daemon) sessionUIDHook(s *vfs.Session) string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if e := d.sessions[s.ID()]; e != nil && e.s == s {
		return e.uid
	}
	return ""
}

// policyHook gives the repository each session's path rules: those of its
// metadata's policy (registered before the session is created).
func (d *Daemon) policyHook(id string) vfs.Policy {
	d.mu.RLock()
	e := d.sessions[id]
	d.mu.RUnlock()
	if e == nil {
		return policy.Default().Hook()
	}
	return e.pol.Hook()
}

// attach binds the tools to a created or recovered session and makes the
// session reachable.
func (d *Daemon) attach(e *entry, s *vfs.Session) error {
	ts, err := tools.New(s, tools.Options{Policy: e.pol, Blobs: sessionBlobs{BlobStore: d.repo.Blobs(), d: d, e: e}, Checkpoints: checkpointer{d: d, e: e}})
	if err != nil {
		return fmt.Errorf("session %s: %w", e.id, err)
	}
	calls, err := openCallLog(context.Background(), d.callLogPath(e.id), repoPinner{d.repo})
	if err != nil {
		// The session works without it; its calls go unrecorded.
		d.log.Error("session without a call log", "session", e.id, "err", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	e.s, e.ts, e.calls = s, ts, calls
	if e.meta.TokenHash != "" {
		d.tokens[e.meta.TokenHash] = e.id
	}
	return nil
}

// lookup returns session id, opening it on its first use (open).
func (d *Daemon) lookup(id string) (*entry, error) {
	e, err := d.lookupUnopened(id)
	if err != nil && d.fleet != nil && errors.Is(err, &api.Error{Code: api.CodeNotFound}) {
		// Not here: the fleet may have handed it to this daemon.
		if aerr := d.adopt(id); aerr == nil {
			e, err = d.lookupUnopened(id)
		} else if !errors.Is(aerr, errNotAdopted) {
			return nil, apiErr(api.CodeUnavailable, "session %s was handed to this daemon, but could not be set up here: %v; retry", id, aerr)
		}
	}
	if err == nil && d.fleet != nil && e.handBackDue() {
		// A fenced copy: the fleet may have handed the session back here.
		switch aerr := d.adopt(id); {
		case aerr == nil:
			e, err = d.lookupUnopened(id)
		case errors.Is(aerr, errFleetUnasked):
			// Do not make every call to the copy wait on the remote.
			e.quietHandBack(d.fleet.Lease / 3)
		case !errors.Is(aerr, errNotAdopted):
			d.log.Warn("fleet: session handed back, but its fenced copy stays for now", "session", id, "err", aerr)
		}
	}
	if err != nil {
		return nil, err
	}
	if err := d.open(e); err != nil {
		return nil, err
	}
	return e, nil
}

// lookupUnopened returns session id, which may not be open yet: for what
// needs only its metadata, such as closing it.
func (d *Daemon) lookupUnopened(id string) (*entry, error) {
	d.mu.RLock()
	e := d.sessions[id]
	ready := e != nil && (e.s != nil || e.stored)
	d.mu.RUnlock()
	if !ready {
		return nil, apiErr(api.CodeNotFound, "no session %q; list the sessions with vfsd session list (GET /v1/sessions)", id)
	}
	e.mu.Lock()
	expired := e.meta.expired(time.Now())
	e.mu.Unlock()
	if expired {
		d.closeInBackground(id, "expired")
		return nil, apiErr(api.CodeNotFound, "session %q has expired and is being closed; create a new one", id)
	}
	return e, nil
}

// entries returns the sessions, open or not opened yet (see open), sorted
// by ID; not those being created.
func (d *Daemon) entries() []*entry {
	d.mu.RLock()
	out := make([]*entry, 0, len(d.sessions))
	for _, e := range d.sessions {
		if e.s != nil || e.stored {
			out = append(out, e)
		}
	}
	d.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// Toolset returns the tools of open session sessionID: the hook for an
// in-process MCP server (mcpserver.ToolsetBackend).
func (d *Daemon) Toolset(sessionID string) (*tools.Toolset, error) {
	e, err := d.lookup(sessionID)
	if err != nil {
		return nil, err
	}
	return e.ts, nil
}

// Config returns the daemon's configuration, with its defaults filled in.
func (d *Daemon) Config() Config { return d.cfg }

// Logger returns the daemon's logger.
func (d *Daemon) Logger() *slog.Logger { return d.log }

// Stopping is closed once the daemon starts shutting down (Stop or
// Close): event streams end.
func (d *Daemon) Stopping() <-chan struct{} { return d.stopping }

// Sessions returns how many sessions the daemon has.
func (d *Daemon) Sessions() int { return len(d.entries()) }

// AdminToken returns the admin token ("" when there is none).
func (d *Daemon) AdminToken() string { return d.adminToken }

// Stop marks the daemon as shutting down: event streams end, and a
// server in front of it should stop taking requests. Close follows.
func (d *Daemon) Stop() {
	d.bgMu.Lock()
	defer d.bgMu.Unlock()
	d.stopOnce.Do(func() { close(d.stopping) })
}

// releaser is a mount that can be let go without unmounting it (the
// kernel overlay's), for the next daemon to take over.
type releaser interface{ Release() error }

// Close releases everything: FUSE mounts are unmounted (they are mounted
// again at the next start), and so are overlay mounts unless
// Config.KeepMounts leaves them to the next daemon; sessions are closed
// with their journals synced, the store synced and closed. Serve calls it
// when it returns.
func (d *Daemon) Close() error {
	d.closeOnce.Do(func() {
		d.Stop()
		d.bg.Wait()
		var errs []error
		for _, e := range d.entries() {
			e.hostMu.Lock()
			e.mu.Lock()
			for dir, m := range e.fuse {
				if r, ok := m.(releaser); ok && d.cfg.KeepMounts {
					if err := r.Release(); err != nil {
						errs = append(errs, err)
					}
				} else if err := m.Unmount(); err != nil {
					errs = append(errs, fmt.Errorf("unmount %s: %w", dir, err))
				}
				delete(e.fuse, dir)
			}
			e.mu.Unlock()
			e.hostMu.Unlock()
			e.openMu.Lock() // an open in flight finishes first
			d.mu.RLock()
			calls := e.calls
			d.mu.RUnlock()
			e.openMu.Unlock()
			if calls != nil {
				errs = append(errs, calls.close(false))
			}
		}
		if err := d.store.Sync(context.Background()); err != nil {
			errs = append(errs, err)
		}
		errs = append(errs, d.repo.Close())
		d.imMu.Lock()
		for _, im := range d.importers {
			errs = append(errs, im.Close())
		}
		d.imMu.Unlock()
		errs = append(errs, d.store.Close(), d.lock.Close())
		d.closeErr = errors.Join(errs...)
	})
	return d.closeErr
}

// importer returns the host importer for sessions whose policy is (or is
// not) ASCII-only, opening it on first use.
func (d *Daemon) importer(asciiOnly bool) (*hostmount.Importer, error) {
	if len(d.cfg.AllowRoots) == 0 {
		return nil, apiErr(api.CodeForbidden, "this daemon allows no host folders; start vfsd serve with --allow-root DIR (once per folder tree mounts may come from)")
	}
	d.imMu.Lock()
	defer d.imMu.Unlock()
	if im := d.importers[asciiOnly]; im != nil {
		return im, nil
	}
	name := "import.cache"
	if asciiOnly {
		name = "import-ascii.cache"
	}
	im, err := hostmount.New(hostmount.Options{Roots: d.cfg.AllowRoots, ASCIIOnly: asciiOnly,
		CacheFile: filepath.Join(d.cfg.DataDir, name), Private: d.cfg.privatePaths()})
	if err != nil {
		return nil, fmt.Errorf("open the allowed roots: %w", err)
	}
	d.importers[asciiOnly] = im
	return im, nil
}

// repoPinner stores and pins blobs for call logs.
type repoPinner struct{ r *snapshot.Repo }

func (p repoPinner) Put(ctx context.Context, r io.Reader, deferred bool) (vfs.Hash, int64, func(), error) {
	return p.r.Blobs().Put(ctx, r, deferred)
}

func (p repoPinner) Adopt(ctx context.Context, h vfs.Hash) (func(), bool, error) {
	return p.r.Adopt(ctx, h)
}

// OpenedSessions returns how many sessions the daemon has opened
// (recovered from their journals) since it started: a restart opens
// none until they are used.
func (d *Daemon) OpenedSessions() int64 { return d.repo.OpenCount() }
