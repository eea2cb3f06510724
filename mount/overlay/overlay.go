//go:build linux

package overlay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/renameio/v2"
	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/internal/beneath"
	"github.com/vfsd/vfsd/internal/mountinfo"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// Mount is a session served by the kernel's overlayfs at a directory.
//
// The lower layers are the metadata layer of the session's state when
// mounted (BuildMeta) over the store's blobs directory as a data-only
// layer; the upper directory collects what programs change, which Ingest
// applies to the session. Changes made to the session by others (tools)
// are applied to the merged directory as they happen, so both always show
// the same state; the lower layers never change while mounted (a restore
// or reset of the session mounts a new state).
type Mount struct {
	repo   *snapshot.Repo
	s      *vfs.Session
	dir    string
	opts   Options
	origin string

	upper, work, blobDir string
	// mroot and uroot are the merged and upper directories, held open
	// while mounted: the daemon reaches everything in them through these
	// descriptors (internal/beneath), never by path, as the programs using
	// the mount can change both while it works.
	mroot, uroot *beneath.Root

	mu         sync.Mutex // serialises ingest, mirroring and remounts
	base       *snapshot.Snapshot
	meta       MetaReport
	release    func() // lets the metadata layer mounted and its blobs go (holdMeta, HoldLocal)
	lastIngest IngestReport
	hashed     map[vfs.Path]fileID
	// listed holds the upper directories as the last ingest reconciled
	// them (nil: unknown, reconcile every directory in full).
	listed   map[vfs.Path]*dirListing
	stale    bool // the session was restored: the lower layers are not its state
	unsynced bool // ingest changed the session since its last Sync
	closed   bool
	cancel   func()
	failures atomic.Int64

	unmountOnce sync.Once
	unmountErr  error
}

// state is what a mount keeps in its StateDir.
type state struct {
	Format   string `json:"format"`
	Session  string `json:"session"`
	Dir      string `json:"dir"`
	Base     string `json:"base"` // the snapshot the lower layers show
	ReadOnly bool   `json:"read_only,omitempty"`
}

const stateFormat = "vfsd-overlay-mount/1"

var mountSeq atomic.Uint64

// New mounts session s of repo (whose store must be a LocalStore) at dir,
// an existing directory, with overlayfs: it snapshots the session (the
// state the lower layers show, BaseLabel), builds or reuses that state's
// metadata layer and mounts it over the store's blobs. See Options.StateDir
// for the recovery of a mount a killed daemon left behind.
func New(ctx context.Context, repo *snapshot.Repo, s *vfs.Session, dir string, opts Options) (*Mount, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if opts.StateDir == "" || opts.MetaCache == "" {
		return nil, errors.New("overlay mount: StateDir and MetaCache are required")
	}
	ls, ok := repo.Store().(*snapshot.LocalStore)
	if !ok {
		return nil, errors.New("the overlay backend serves blobs from a local store; this repository's store is not local: use the FUSE backend")
	}
	dir = filepath.Clean(dir)
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("overlay mount %s: %w", dir, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("overlay mount %s: not a directory", dir)
	}
	m := &Mount{repo: repo, s: s, dir: dir, opts: opts, hashed: map[vfs.Path]fileID{},
		origin:  fmt.Sprintf("overlay:%d:%s", mountSeq.Add(1), dir),
		blobDir: filepath.Join(ls.Dir(), string(snapshot.Blobs))}
	if !opts.ReadOnly {
		m.upper, m.work = filepath.Join(opts.StateDir, "upper"), filepath.Join(opts.StateDir, "work")
	}
	for _, p := range []string{dir, opts.StateDir, opts.MetaCache, m.blobDir} {
		if err := checkPath(p); err != nil {
			return nil, err
		}
	}
	// Subscribe first: a tool's change made while the mount is being set up
	// is applied to the merged directory once it is (m.mu is held).
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cancel = s.Subscribe(m.onNotice)
	if err := m.setup(ctx); err != nil {
		m.cancel()
		m.closed = true
		return nil, err
	}
	return m, nil
}

// setup mounts (or takes over) the overlay. m.mu is held.
func (m *Mount) setup(ctx context.Context) error {
	st, err := readState(m.opts.StateDir)
	recovered := err == nil && st.Session == m.s.ID() && st.Base != "" && st.ReadOnly == m.opts.ReadOnly
	var snap *snapshot.Snapshot
	if recovered {
		if snap, err = m.repo.Get(ctx, st.Base); err != nil {
			return fmt.Errorf("recover the overlay mount of session %s at %s: its base snapshot %s: %w; its changes are in %s", m.s.ID(), m.dir, st.Base, err, m.upper)
		}
	} else {
		if err := beneath.RemovePath(m.opts.StateDir); err != nil {
			return fmt.Errorf("overlay mount: clear %s: %w", m.opts.StateDir, err)
		}
		if snap, err = m.repo.Snapshot(ctx, m.s, BaseLabel); err != nil {
			return fmt.Errorf("overlay mount: %w", err)
		}
	}
	if err := m.mountBase(ctx, snap, !recovered); err != nil {
		return err
	}
	if recovered {
		if _, err := m.ingestLocked(ctx); err != nil {
			return err
		}
	}
	return nil
}

// mountBase mounts snap's layers with the upper directory, fresh (a new
// upper) or not (the upper of the state file, the mount adopted if it is
// still there). m.mu is held.
func (m *Mount) mountBase(ctx context.Context, snap *snapshot.Snapshot, fresh bool) error {
	// The kernel reads content straight from the blob directory: a state
	// forked from a remote snapshot must be local first, and stay local
	// (unevicted) while mounted.
	releaseBlobs, err := m.repo.HoldLocal(ctx, snap.ID, nil)
	if err != nil {
		return fmt.Errorf("overlay mount: %w", err)
	}
	meta, releaseMeta, err := holdMeta(ctx, snap, m.opts.MetaCache, m.s.DefaultOwner())
	if err != nil {
		releaseBlobs()
		return err
	}
	release := func() { releaseMeta(); releaseBlobs() }
	mounted := false
	defer func() {
		if !mounted {
			release()
		}
	}()
	if fresh {
		if err := os.MkdirAll(m.opts.StateDir, 0o700); err != nil {
			return fmt.Errorf("overlay mount: %w", err)
		}
		if m.upper != "" {
			for _, d := range []string{m.upper, m.work} {
				if err := os.Mkdir(d, 0o700); err != nil {
					return fmt.Errorf("overlay mount: %w", err)
				}
			}
			// The merged root is the upper root: it must be the session's.
			root, _, _ := snap.Tree.Lookup(vfs.Root) // never beneath a lazy directory
			if err := setMeta(m.upper, root, m.s.DefaultOwner()); err != nil {
				return fmt.Errorf("overlay mount: the upper root: %w", err)
			}
		}
		if err := writeState(m.opts.StateDir, state{Format: stateFormat, Session: m.s.ID(), Dir: m.dir,
			Base: snap.ID, ReadOnly: m.opts.ReadOnly}); err != nil {
			return err
		}
	}
	if fresh || !m.mountedHere() {
		fsName := m.opts.FsName
		if fsName == "" {
			fsName = "vfsd:" + m.s.ID()
		}
		// The engine does not move atime on reads (as noatime): nor does
		// the mount, or every read would be a change to ingest. No
		// set-ID bit, file capability or device node of the session takes
		// effect unless the admin asked (Options.AllowSetID, AllowDevices).
		flags := uintptr(unix.MS_NOATIME) | m.opts.mountFlags()
		if m.opts.ReadOnly {
			flags |= unix.MS_RDONLY
		}
		if err := unix.Mount(fsName, m.dir, "overlay", flags, layerOptions(meta.Dir, m.blobDir, m.upper, m.work)); err != nil {
			return fmt.Errorf("mount overlayfs at %s: %w (the FUSE backend works without it)", m.dir, err)
		}
	} else if err := m.opts.setMountFlags(m.dir); err != nil {
		return err
	}
	if err := m.openRoots(); err != nil {
		_ = unix.Unmount(m.dir, unix.MNT_DETACH)
		return err
	}
	mounted = true
	m.releaseMeta()
	m.release = release
	m.base, m.meta, m.stale = snap, meta, false
	m.hashed = map[vfs.Path]fileID{}
	// A fresh upper directory is empty and the session's state is the
	// base's: every directory's last listing is empty. A recovered one is
	// reconciled in full.
	m.listed = nil
	if fresh {
		m.listed = map[vfs.Path]*dirListing{}
	}
	if !meta.Cached {
		// A new layer: the cache may hold more unused ones than it keeps.
		if _, err := CollectMeta(m.opts.MetaCache, m.opts.MetaCacheKeep); err != nil && m.opts.Logf != nil {
			m.opts.Logf("overlay mount %s: %v", m.dir, err)
		}
	}
	return nil
}

// openRoots opens the merged directory (the overlay just mounted at
// m.dir, checked to be one) and the upper directory. m.mu is held.
func (m *Mount) openRoots() error {
	m.closeRoots()
	mroot, err := beneath.OpenRoot(m.dir)
	if err != nil {
		return fmt.Errorf("overlay mount: %w", err)
	}
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(mroot.Fd(), &sfs); err != nil || sfs.Type != unix.OVERLAYFS_SUPER_MAGIC {
		mroot.Close()
		return fmt.Errorf("overlay mount: %s is not the overlay just mounted there (statfs type %#x, %v)", m.dir, sfs.Type, err)
	}
	m.mroot = mroot
	if m.upper != "" {
		if m.uroot, err = beneath.OpenRoot(m.upper); err != nil {
			m.closeRoots()
			return fmt.Errorf("overlay mount: %w", err)
		}
	}
	return nil
}

// closeRoots closes the merged and upper directories. m.mu is held.
func (m *Mount) closeRoots() {
	m.mroot.Close()
	m.uroot.Close()
	m.mroot, m.uroot = nil, nil
}

// releaseMeta lets the mounted metadata layer go (it is no longer
// mounted). m.mu is held.
func (m *Mount) releaseMeta() {
	if m.release != nil {
		m.release()
		m.release = nil
	}
}

// mountedHere reports whether an overlay with this mount's upper directory
// is mounted at its directory (a killed daemon's mount lives on).
func (m *Mount) mountedHere() bool {
	ms, _ := mountinfo.Read()
	for _, mi := range ms {
		if mi.FSType != "overlay" || mi.MountPoint != m.dir || mi.SuperOptions == "" {
			continue
		}
		if m.upper == "" || slices.Contains(mi.SuperOption("upperdir"), m.upper) {
			return true
		}
	}
	return false
}

// Dir returns the mount point.
func (m *Mount) Dir() string { return m.dir }

// Kind returns "overlay".
func (m *Mount) Kind() string { return Kind }

// Origin is the origin (vfs.WithOrigin) of the changes ingested from the
// mount.
func (m *Mount) Origin() string { return m.origin }

// Base returns the snapshot the lower layers show.
func (m *Mount) Base() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.base.ID
}

// Meta reports the build (or reuse) of the metadata layer.
func (m *Mount) Meta() MetaReport {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.meta
}

// LastIngest reports the last ingest.
func (m *Mount) LastIngest() IngestReport {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lastIngest
}

// MirrorFailures counts the tool changes that could not be applied to the
// merged directory (each is logged through Options.Logf).
func (m *Mount) MirrorFailures() int64 { return m.failures.Load() }

// Ingest applies to the session what programs changed through the mount
// since the last ingest. Its cost grows with the upper directory (what
// changed since mounted), not with the session.
func (m *Mount) Ingest(ctx context.Context) (IngestReport, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return IngestReport{}, nil
	}
	if err := m.rebaseIfStale(ctx); err != nil {
		return IngestReport{}, err
	}
	return m.ingestLocked(ctx)
}

// Sync makes the session hold everything the mount acknowledged, durably:
// it ingests, then syncs the session's journal, which syncs the blobs the
// ingest stored first (vfs.WriteOptions.DeferredBlob), so the ingested
// changes are on disk when Sync returns. Snapshots, diffs, applies and
// tool calls call it first. Content programs write reaches the upper
// directory through the page cache, so what a write(2) returned is seen
// without flushing the overlay; programs that need it on disk fsync, as
// anywhere. Ingest alone syncs nothing: its changes are durable within the
// session's FlushInterval, and until then the upper directory, which only
// Unmount removes (after its own Sync), still holds them.
func (m *Mount) Sync(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	if err := m.rebaseIfStale(ctx); err != nil {
		return err
	}
	if _, err := m.ingestLocked(ctx); err != nil {
		return err
	}
	return m.syncStoreLocked(ctx)
}

// syncStoreLocked makes what ingest changed durable: the blobs it stored,
// then the journal records naming them. m.mu is held.
func (m *Mount) syncStoreLocked(ctx context.Context) error {
	if !m.unsynced {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := m.s.Sync(); err != nil {
		return fmt.Errorf("overlay mount %s: make the ingested changes durable: %w", m.dir, err)
	}
	m.unsynced = false
	return nil
}

// Unmount ingests the mount's changes and unmounts it, then removes its
// upper and work directories. If the mount is busy (open files, a working
// directory in it) it is detached lazily after a last ingest; changes made
// through it afterwards are lost. If the last ingest fails the state
// directory stays, and a new mount with the same StateDir recovers it.
// Safe to call more than once.
func (m *Mount) Unmount() error {
	m.unmountOnce.Do(func() {
		m.cancel()
		m.mu.Lock()
		defer m.mu.Unlock()
		m.closed = true
		ctx := context.Background()
		err := m.rebaseIfStale(ctx)
		// An open descriptor keeps a mount busy: the merged root goes
		// first (the last ingest reads only the upper directory).
		m.mroot.Close()
		m.mroot = nil
		uerr := unix.Unmount(m.dir, 0)
		if err == nil {
			_, err = m.ingestLocked(ctx)
		}
		if err == nil {
			err = m.syncStoreLocked(ctx)
		}
		if uerr != nil {
			uerr = unix.Unmount(m.dir, unix.MNT_DETACH)
		}
		if uerr == nil {
			m.releaseMeta()
		}
		m.closeRoots()
		if err == nil && uerr == nil {
			err = beneath.RemovePath(m.opts.StateDir)
		}
		if uerr != nil {
			err = errors.Join(err, fmt.Errorf("unmount %s: %w", m.dir, uerr))
		}
		m.unmountErr = err
	})
	return m.unmountErr
}

// Release lets the mount go without unmounting it: a last ingest makes
// what programs wrote so far durable in the session, then the mount stops
// following the session and drops its descriptors, and the kernel keeps
// serving the overlay, upper directory and all. A new mount with the same
// StateDir takes it over (ingesting what was written meanwhile): a node
// plugin's daemon that shuts down while containers still use its mounts
// (an upgrade) does this rather than pull the files from under them. The
// state directory stays, as after a kill. Safe to call more than once, and
// Unmount afterwards does nothing.
func (m *Mount) Release() error {
	var err error
	m.unmountOnce.Do(func() {
		m.cancel()
		m.mu.Lock()
		defer m.mu.Unlock()
		ctx := context.Background()
		if err = m.rebaseIfStale(ctx); err == nil {
			if _, err = m.ingestLocked(ctx); err == nil {
				err = m.syncStoreLocked(ctx)
			}
		}
		m.closed = true
		m.closeRoots()
		m.releaseMeta()
		if err != nil {
			err = fmt.Errorf("release the overlay mount at %s: %w; its changes stay in %s for the next mount", m.dir, err, m.upper)
		}
	})
	return err
}

// Detach unmounts without ingesting and keeps the state directory: a new
// mount with the same StateDir takes the changes over (a daemon shutting
// down and starting again).
func (m *Mount) Detach() error {
	m.cancel()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.closeRoots()
	if err := unix.Unmount(m.dir, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("unmount %s: %w", m.dir, err)
	}
	m.releaseMeta()
	return nil
}

// rebaseIfStale mounts the session's current state when a restore or reset
// replaced it (the lower layers must show it). m.mu is held.
func (m *Mount) rebaseIfStale(ctx context.Context) error {
	if !m.stale {
		return nil
	}
	snap, err := m.repo.Snapshot(ctx, m.s, BaseLabel)
	if err != nil {
		return fmt.Errorf("mount the restored state of session %s: %w", m.s.ID(), err)
	}
	m.closeRoots()
	if err := unix.Unmount(m.dir, unix.MNT_DETACH); err != nil {
		return fmt.Errorf("mount the restored state of session %s: unmount %s: %w", m.s.ID(), m.dir, err)
	}
	if err := beneath.RemovePath(m.opts.StateDir); err != nil {
		return err
	}
	return m.mountBase(ctx, snap, true)
}

func readState(dir string) (state, error) {
	var st state
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, err
	}
	if st.Format != stateFormat {
		return st, fmt.Errorf("overlay mount state %s: unknown format %q", dir, st.Format)
	}
	return st, nil
}

func writeState(dir string, st state) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := renameio.WriteFile(filepath.Join(dir, "state.json"), b, 0o600); err != nil {
		return fmt.Errorf("overlay mount state: %w", err)
	}
	return nil
}

// logf reports a background failure.
func (m *Mount) logf(format string, args ...any) {
	m.failures.Add(1)
	if m.opts.Logf != nil {
		m.opts.Logf(format, args...)
	}
}

var _ = time.Second
