package vfs

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vfsd/vfsd/internal/osfile"
)

// Access is the kind of access a policy check is about.
type Access uint8

// Accesses a Policy is asked about.
const (
	AccessRead Access = iota + 1
	AccessWrite
)

// String returns "read" or "write".
func (a Access) String() string {
	if a == AccessWrite {
		return "write"
	}
	return "read"
}

// Policy is consulted before every session operation, once per path
// involved. A non-nil error refuses the operation; errors that are not
// *Error are reported with CodeForbidden.
type Policy func(a Access, p Path) error

// Options configure a Session.
type Options struct {
	// ID names the session; it is recorded in the journal header.
	ID string
	// Dir holds the session's state: the journal and the upper directory.
	Dir string
	// Blobs is where unchanged content is read from and new content put.
	Blobs BlobStore
	// LoadTree loads a snapshot's tree by ID. Open needs it for the base,
	// Reset for the initial snapshot; "" always means the empty tree.
	LoadTree func(ctx context.Context, id string) (Tree, error)
	// Policy, if set, is checked before every operation.
	Policy Policy
	// Clock returns the current time; time.Now when nil.
	Clock func() time.Time
	// FlushInterval bounds how long a Relaxed mutation can stay not durable;
	// one second when zero.
	FlushInterval time.Duration
	// Quota bounds what the session may hold; zero fields are unbounded.
	Quota Quota
	// Owner is the session's default owner: new nodes created without an
	// explicit owner get it, and nodes whose owner was never recorded (old
	// stores) report it. The process's effective user and group when nil.
	// A session keeps the owner it was created with (its journal records
	// it).
	Owner *Owner
}

// Session is one agent workspace: a Tree over a base snapshot, an upper
// directory for content written through handles, and a journal. See the
// package documentation for its model, durability and lock order.
type Session struct {
	opts     Options
	upperDir string
	owner    Owner // the default owner

	freezeMu sync.Mutex

	mu         sync.RWMutex
	closed     bool
	tree       Tree
	header     JournalHeader
	journal    *Journal
	seq        uint64                // sequence number of the last applied event
	restoreSeq uint64                // sequence number of the last restore event
	inoFloor   uint64                // inode high-water mark at the last restore, for compaction
	ref        string                // snapshot the dirty set is relative to
	dirty      map[Path]dirtyMark    // what changed since ref
	uppers     map[uint64]*upperFile // upper files the tree references
	removals   remover               // unlinks dropped upper files
	upperSeq   atomic.Uint64         // last upper file number handed out
	handles    map[uint64][]*Handle  // open handles by inode
	detached   map[*Handle]struct{}  // open handles whose file left the tree
	frozen     map[*Frozen]struct{}  // frozen trees not yet released
	subs       map[int]func(Notice)
	subSeq     int

	// deferMu orders deferred blobs (WriteOptions.DeferredBlob) before the
	// journal records that name them: writers hold it shared from the Put
	// to the append, the journal's sync exclusively (syncJournal).
	// deferPending says a deferred blob may not be durable yet.
	deferMu      sync.RWMutex
	deferPending atomic.Bool

	// treeBytes mirrors tree.Bytes() for writers that do not hold mu;
	// pending is the growth of upper files past their committed sizes
	// (tracked only under a byte quota).
	treeBytes atomic.Int64
	pending   atomic.Int64

	// restored lists the snapshots restored since the journal's header:
	// recovery loads each of them again.
	restored []string

	// rewindSeq is the sequence number of the last rewind event: with
	// restoreSeq, what tells a Frozen taken before it.
	rewindSeq uint64
	// hist indexes the journal for time travel (see history.go).
	hist history
}

// dirtyMark records the last event that changed a path since the session's
// reference snapshot, and whether it changed the whole subtree.
type dirtyMark struct {
	seq     uint64
	subtree bool
}

// Notice tells a subscriber about an applied event.
type Notice struct {
	Seq   uint64
	Event *Event
	// Origin is the origin of the context the change was made under (see
	// WithOrigin): a FUSE mount skips the changes it made itself.
	Origin string
}

type originKey struct{}

// WithOrigin returns a context whose mutations are reported to subscribers
// with this origin. Handles opened under it keep it.
func WithOrigin(ctx context.Context, origin string) context.Context {
	return context.WithValue(ctx, originKey{}, origin)
}

// OriginOf returns the origin WithOrigin gave ctx, or "".
func OriginOf(ctx context.Context) string {
	v, _ := ctx.Value(originKey{}).(string)
	return v
}

type relaxedKey struct{}

// Relaxed returns a context under which mutations return once journaled,
// without waiting for the journal to reach stable storage. See the package
// documentation.
func Relaxed(ctx context.Context) context.Context {
	return context.WithValue(ctx, relaxedKey{}, true)
}

func isRelaxed(ctx context.Context) bool {
	v, _ := ctx.Value(relaxedKey{}).(bool)
	return v
}

const (
	journalName = "journal"
	upperName   = "upper"
)

func (o *Options) check() error {
	switch {
	case o.ID == "":
		return errors.New("session options: ID is required")
	case o.Dir == "":
		return errors.New("session options: Dir is required")
	case o.Blobs == nil:
		return errors.New("session options: Blobs is required")
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = time.Second
	}
	return nil
}

func newSession(opts Options) *Session {
	owner := Owner{Uid: uint32(os.Geteuid()), Gid: uint32(os.Getegid())}
	if opts.Owner != nil {
		owner = *opts.Owner
	}
	return &Session{
		owner:    owner,
		opts:     opts,
		hist:     history{budget: opts.Quota.historyBudget()},
		upperDir: filepath.Join(opts.Dir, upperName),
		dirty:    make(map[Path]dirtyMark),
		uppers:   make(map[uint64]*upperFile),
		handles:  make(map[uint64][]*Handle),
		detached: make(map[*Handle]struct{}),
		frozen:   make(map[*Frozen]struct{}),
		subs:     make(map[int]func(Notice)),
	}
}

// PrepareDir lays out an empty session directory — the directory, its
// upper directory and an empty journal — and makes it durable, so that
// Create can later start a session there with a single write. Creating files
// is the slow part of starting a session; a pool of prepared directories
// takes it off the path of fork.
func PrepareDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("prepare session dir: %w", err)
	}
	if err := os.Mkdir(filepath.Join(dir, upperName), 0o700); err != nil {
		return fmt.Errorf("prepare session dir: %w", err)
	}
	f, err := osfile.OpenFile(filepath.Join(dir, journalName), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("prepare session dir: %w", err)
	}
	f.Close()
	if err := syncDir(dir); err != nil {
		return err
	}
	return syncDir(filepath.Dir(dir))
}

// Create starts a new session in opts.Dir, which must not exist, be empty,
// or have been laid out by PrepareDir. Its base — and initial state, for
// Reset — is base, the tree of snapshot baseID. With baseID "" the session
// starts empty and base is ignored: its root is created at the session's
// creation time, as Open will recreate it. Create costs O(1): the tree is
// shared, not copied; in a prepared directory it is one journal write.
func Create(ctx context.Context, opts Options, base Tree, baseID string) (*Session, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	if baseID != "" && !base.Valid() {
		return nil, errors.New("create session: base tree is not initialised")
	}
	if !IsPrepared(opts.Dir) {
		if err := os.Remove(opts.Dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("create session: %s must not exist, be empty or be prepared: %w", opts.Dir, err)
		}
		if err := PrepareDir(opts.Dir); err != nil {
			return nil, err
		}
	}
	s := newSession(opts)
	s.header = JournalHeader{Session: opts.ID, Base: baseID, Initial: baseID, Created: millis(opts.Clock()), Owner: &s.owner}
	j, err := startJournal(filepath.Join(opts.Dir, journalName), s.header)
	if err != nil {
		return nil, fmt.Errorf("create session: %w", err)
	}
	if baseID == "" {
		base = EmptyTree(s.header.Created)
	}
	j.beforeSync = s.syncJournal
	s.journal, s.tree, s.ref = j, base.WithOwner(s.owner), baseID
	s.hist.start(0, j.Size(), s.tree)
	s.treeBytes.Store(base.Bytes())
	go j.flushEvery(opts.FlushInterval)
	return s, nil
}

// IsPrepared reports whether dir was laid out by PrepareDir and not used.
func IsPrepared(dir string) bool {
	if fi, err := os.Stat(filepath.Join(dir, journalName)); err != nil || fi.Size() != 0 {
		return false
	}
	entries, err := os.ReadDir(filepath.Join(dir, upperName))
	return err == nil && len(entries) == 0
}

// JournalEmpty reports whether session directory dir's journal is missing
// or empty: a session whose creation never wrote its header (ReadHeader
// then fails with ErrNoSession), as opposed to one whose journal holds
// bytes but no readable header, which is damage.
func JournalEmpty(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, journalName))
	return errors.Is(err, os.ErrNotExist) || (err == nil && fi.Size() == 0)
}

// ReadHeader returns the journal header of the session in dir. A directory
// whose journal has no complete header holds no session — it was prepared,
// or its creation never completed — and the error matches ErrNoSession.
func ReadHeader(dir string) (JournalHeader, error) {
	return readHeader(filepath.Join(dir, journalName))
}

// ErrNoSession is returned by ReadHeader and Open for a directory that
// holds no session.
var ErrNoSession = errors.New("no session in this directory")

// Open recovers a session from opts.Dir: it loads the base tree, replays the
// journal (cutting a torn tail), truncates upper files to their committed
// sizes and removes upper files nothing references. A journal that went
// through restores is compacted to start at the last one. opts.ID may be
// empty; it is taken from the journal.
func Open(ctx context.Context, opts Options) (*Session, error) {
	hdr, err := ReadHeader(opts.Dir)
	if err != nil {
		return nil, err
	}
	if opts.ID == "" {
		opts.ID = hdr.Session
	}
	if opts.ID != hdr.Session {
		return nil, fmt.Errorf("open session: %s holds session %q, not %q", opts.Dir, hdr.Session, opts.ID)
	}
	if err := opts.check(); err != nil {
		return nil, err
	}
	s := newSession(opts)
	path := filepath.Join(opts.Dir, journalName)
	loadBase := func(h JournalHeader, end int64) error {
		if h.Owner != nil {
			s.owner = *h.Owner
		}
		base, err := s.loadTree(ctx, h.Base, h.Created)
		if err != nil {
			return fmt.Errorf("load base %q: %w", h.Base, err)
		}
		s.tree, s.ref, s.header = base.withInoFloor(h.InoFloor), h.Base, h
		s.seq = h.SeqBase
		s.hist.start(h.SeqBase, end, s.tree)
		return nil
	}
	// Events since the last restore, to compact the journal afterwards.
	var (
		tail     []*Event
		restored string
		// minRewind is the earliest event a rewind since the last
		// restore goes back to: compaction must keep it.
		minRewind uint64 = math.MaxUint64
	)
	j, _, err := openJournal(path, loadBase, func(seq uint64, end int64, e *Event) error {
		switch e.Op {
		case OpRestore:
			t, err := s.loadTree(ctx, e.Snapshot, s.header.Created)
			if err != nil {
				return fmt.Errorf("load restored snapshot %q: %w", e.Snapshot, err)
			}
			s.restoredLocked(t, e, seq)
			s.hist.note(seq, end, e, s.tree)
			restored, tail, minRewind = e.Snapshot, tail[:0], math.MaxUint64
			return nil
		case OpRewind:
			t, err := s.rewoundTree(ctx, path, e)
			if err != nil {
				return fmt.Errorf("rewind to event %d: %w", e.Seq, err)
			}
			s.rewoundLocked(t, e, seq, nil)
			s.hist.note(seq, end, e, s.tree)
			tail = append(tail, e)
			minRewind = min(minRewind, e.Seq)
			return nil
		}
		old := s.tree
		t, err := Reduce(old, e)
		if err != nil {
			return err
		}
		s.tree, s.seq = t, seq
		s.markDirty(old, e, seq)
		if e.Upper > s.upperSeq.Load() {
			s.upperSeq.Store(e.Upper)
		}
		s.hist.note(seq, end, e, t)
		tail = append(tail, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("open session %s: %w", opts.ID, err)
	}
	j.beforeSync = s.syncJournal
	s.journal = j
	if s.restoreSeq > 0 && minRewind >= s.restoreSeq {
		if err := s.compact(restored, tail); err != nil {
			j.Close()
			return nil, fmt.Errorf("open session %s: %w", opts.ID, err)
		}
	}
	if err := s.recoverUppers(); err != nil {
		s.journal.Close()
		return nil, fmt.Errorf("open session %s: %w", opts.ID, err)
	}
	s.hist.trim(s.seq, s.journal.Size(), s.tree)
	s.treeBytes.Store(s.tree.Bytes())
	go s.journal.flushEvery(opts.FlushInterval)
	return s, nil
}

// compact rewrites the journal to start at the last restore: a header whose
// base is the restored snapshot, then the events since. Events keep their
// sequence numbers (the header's SeqBase is the restore's); the history
// before the restore is dropped.
func (s *Session) compact(restored string, tail []*Event) error {
	hdr := s.header
	hdr.Base = restored
	hdr.InoFloor = s.inoFloor
	hdr.SeqBase = s.restoreSeq
	// The old journal is closed first: Windows refuses to rename a file
	// over one that is open, whatever the open shared. Nothing was appended
	// to it since Open read it, and Open fails if the new one is not
	// installed.
	if err := s.journal.Close(); err != nil {
		return fmt.Errorf("close journal before compacting: %w", err)
	}
	j, err := createJournal(filepath.Join(s.opts.Dir, journalName), hdr, tail, 0)
	if err != nil {
		return err
	}
	j.beforeSync = s.syncJournal
	s.journal, s.header = j, hdr
	s.restoreSeq = 0
	s.restored = nil
	// The history's offsets were the old file's: index the new one.
	return s.reindexHistory(tail)
}

func (s *Session) loadTree(ctx context.Context, id string, created int64) (Tree, error) {
	if id == "" {
		return EmptyTree(created).WithOwner(s.owner), nil
	}
	if s.opts.LoadTree == nil {
		return Tree{}, errors.New("no LoadTree in session options")
	}
	t, err := s.opts.LoadTree(ctx, id)
	if err != nil {
		return Tree{}, err
	}
	return t.WithOwner(s.owner), nil
}

// DefaultOwner returns the session's default owner (see Options.Owner).
func (s *Session) DefaultOwner() Owner { return s.owner }

// ownerOr returns o, or the session's default owner when o is nil.
func (s *Session) ownerOr(o *Owner) *Owner {
	if o != nil {
		c := *o
		return &c
	}
	c := s.owner
	return &c
}

// ID returns the session's ID.
func (s *Session) ID() string { return s.opts.ID }

// Dir returns the session's state directory.
func (s *Session) Dir() string { return s.opts.Dir }

// Tree returns the session's current tree: a consistent, immutable view that
// later changes never affect. Sizes of files with uncommitted handle writes
// are their committed sizes; Stat reports live sizes.
func (s *Session) Tree() Tree {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.tree
}

// Info describes a session's state.
type Info struct {
	ID      string
	Created time.Time
	Base    string // snapshot the journal folds over
	Initial string // snapshot Reset returns to
	Ref     string // last snapshot taken or restored
	Seq     uint64 // events in the journal since Base
	Dirty   int    // paths changed since Ref
	Files   int64
	Bytes   int64
	Nodes   int
}

// Info returns a description of the session's state.
func (s *Session) Info() Info {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return Info{
		ID: s.opts.ID, Created: time.UnixMilli(s.header.Created).UTC(), Base: s.header.Base,
		Initial: s.header.Initial, Ref: s.ref, Seq: s.seq, Dirty: len(s.dirty),
		Files: s.tree.Files(), Bytes: s.tree.Bytes(), Nodes: s.tree.Len(),
	}
}

// Snapshots returns the snapshots the session needs to be recovered from
// its journal and reset: its journal's base, its initial snapshot, and
// every snapshot restored since the journal was last compacted (at Open).
// Deleting one of them would leave a session that cannot be reopened.
func (s *Session) Snapshots() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	for _, id := range append([]string{s.header.Base, s.header.Initial}, s.restored...) {
		if id != "" && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// Subscribe registers fn to be told about every event applied from now on,
// and every reset. fn runs on the mutating goroutine after the session's
// locks are released; it must not block for long. cancel unregisters it.
func (s *Session) Subscribe(fn func(Notice)) (cancel func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subSeq++
	id := s.subSeq
	s.subs[id] = fn
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.subs, id)
	}
}

// Sync makes every event applied so far durable.
func (s *Session) Sync() error {
	s.mu.RLock()
	j := s.journal
	s.mu.RUnlock()
	return j.Sync()
}

// Close syncs the journal and releases the session's files. Open handles
// fail afterwards with ErrClosed. The session's directory stays: Open
// recovers it.
func (s *Session) Close() error {
	s.freezeMu.Lock()
	defer s.freezeMu.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for _, uf := range s.uppers {
		uf.close(false)
	}
	for h := range s.detached {
		h.releaseOrphan()
	}
	s.removals.close()
	j := s.journal
	s.mu.Unlock()
	// Outside s.mu: the journal's last sync waits for deferred writes
	// (syncJournal), which wait for s.mu to append (and then fail: closed).
	return j.Close()
}

// now returns the current time in the engine's form.
func (s *Session) now() int64 { return millis(s.opts.Clock()) }

// check runs the policy for a path.
func (s *Session) check(op string, a Access, p Path) error {
	if s.opts.Policy == nil {
		return nil
	}
	if err := s.opts.Policy(a, p); err != nil {
		var e *Error
		if errors.As(err, &e) {
			return err
		}
		return &Error{Op: op, Path: p.String(), Code: CodeForbidden, Msg: err.Error()}
	}
	return nil
}

// closedErr is returned by every call on a closed session.
func closedErr(op string) error {
	return &Error{Op: op, Code: CodeClosed, Msg: "session is closed"}
}

// applyLocked reduces e into the tree, journals it and installs the result.
// On any error nothing changes. s.mu must be held for writing.
func (s *Session) applyLocked(op string, e *Event) (uint64, error) {
	return s.applyReducedLocked(op, e, nil)
}

// reduced is an event's result computed ahead, outside the session lock:
// Reduce(from, e) is to.
type reduced struct{ from, to Tree }

// applyReducedLocked is applyLocked, taking the tree from pre when the
// session's tree is still pre.from (nothing happened since it was
// computed): a snapshot's seal of 50,000 files is not folded twice.
func (s *Session) applyReducedLocked(op string, e *Event, pre *reduced) (uint64, error) {
	if s.closed {
		return 0, closedErr(op)
	}
	old := s.tree
	s.stamp(e)
	var (
		t   Tree
		err error
	)
	if pre != nil && pre.from == old {
		t = pre.to
	} else if t, err = Reduce(old, e); err != nil {
		return 0, withOp(err, op)
	}
	if err := s.checkQuotaLocked(op, old, t, e); err != nil {
		return 0, err
	}
	seq, err := s.journal.Append(e)
	if err != nil {
		return 0, ioErr(op, e.Path, err)
	}
	s.tree, s.seq = t, seq
	s.treeBytes.Store(t.Bytes())
	s.markDirty(old, e, seq)
	s.settleLocked(old, t, e)
	s.hist.note(seq, s.journal.Size(), e, t)
	s.hist.trim(seq, s.journal.Size(), t)
	return seq, nil
}

// stamp gives a new event the current format and time, to the nanosecond.
func (s *Session) stamp(e *Event) {
	if e.V != 0 {
		return
	}
	now := s.opts.Clock()
	e.V, e.Time = eventFormat, now.UnixMilli()
	e.Ns = now.UnixNano() - e.Time*1e6
	for i := range e.Batch {
		b := &e.Batch[i]
		b.V, b.Time, b.Ns = e.V, e.Time, e.Ns
	}
}

// markDirty records what e, which took the tree from old to s.tree,
// changed, for the next snapshot.
func (s *Session) markDirty(old Tree, e *Event, seq uint64) {
	for _, c := range linkChanges(old, s.tree, e) {
		m := s.dirty[c.Path]
		s.dirty[c.Path] = dirtyMark{seq: seq, subtree: m.subtree}
	}
	if e.Op == OpSnapshotted {
		for p, m := range s.dirty {
			if m.seq <= e.Seq {
				delete(s.dirty, p)
			}
		}
		s.ref = e.Snapshot
		return
	}
	for _, c := range e.Changes() {
		m := s.dirty[c.Path]
		s.dirty[c.Path] = dirtyMark{seq: seq, subtree: m.subtree || c.Subtree}
	}
}

// commit finishes a mutation after s.mu is released: it tells subscribers
// and, unless ctx is Relaxed, waits until the event is durable.
func (s *Session) commit(ctx context.Context, seq uint64, e *Event) error {
	s.notify(seq, e, OriginOf(ctx))
	if isRelaxed(ctx) {
		return nil
	}
	s.mu.RLock()
	j := s.journal
	s.mu.RUnlock()
	if err := j.WaitDurable(seq); err != nil {
		return ioErr(string(e.Op), e.Path, err)
	}
	return nil
}

func (s *Session) notify(seq uint64, e *Event, origin string) {
	s.mu.RLock()
	if len(s.subs) == 0 {
		s.mu.RUnlock()
		return
	}
	fns := make([]func(Notice), 0, len(s.subs))
	for _, fn := range s.subs {
		fns = append(fns, fn)
	}
	s.mu.RUnlock()
	for _, fn := range fns {
		fn(Notice{Seq: seq, Event: e, Origin: origin})
	}
}

// mutate applies the event build returns, under the session lock, and then
// commits it. build sees the current tree and may fail, or return no event
// when there is nothing to change.
func (s *Session) mutate(ctx context.Context, op string, build func(t Tree) (*Event, error)) (*Event, Tree, error) {
	return s.mutateThen(ctx, op, build, nil)
}

// mutateThen is mutate, calling applied (when set) once the event is
// appended to the journal or refused, before it is committed.
func (s *Session) mutateThen(ctx context.Context, op string, build func(t Tree) (*Event, error), applied func()) (*Event, Tree, error) {
	s.mu.Lock()
	e, err := build(s.tree)
	if e != nil && e.Origin == "" {
		e.Origin = OriginOf(ctx)
	}
	if err != nil || e == nil {
		t := s.tree
		s.mu.Unlock()
		if applied != nil {
			applied()
		}
		if err != nil {
			return nil, Tree{}, withOp(err, op)
		}
		return nil, t, nil // nothing to change
	}
	seq, err := s.applyLocked(op, e)
	t := s.tree
	s.mu.Unlock()
	if applied != nil {
		applied()
	}
	if err != nil {
		return nil, Tree{}, err
	}
	return e, t, s.commit(ctx, seq, e)
}

// syncJournal runs sync, the journal's fdatasync, after making durable
// the deferred blobs that the records already appended may name, so that a
// record is never on disk before the content it names. Deferred writes
// wait meanwhile (they hold deferMu shared from their Put to their append).
func (s *Session) syncJournal(sync func() error) error {
	s.deferMu.Lock()
	defer s.deferMu.Unlock()
	if s.deferPending.Load() {
		if err := s.opts.Blobs.Sync(context.Background()); err != nil {
			return fmt.Errorf("sync the content the journal names: %w", err)
		}
		s.deferPending.Store(false)
	}
	return sync()
}

// linkChanges lists the other names of hard-linked nodes e changed, which
// changed with them, e.g. a write through one name changes every name's
// content, and an unlink every other name's link count. It costs nothing
// unless e touched a hard-linked node.
func linkChanges(old, t Tree, e *Event) []Change {
	if old.links == t.links {
		return nil
	}
	var out []Change
	seen := map[uint64]bool{}
	add := func(n Node) {
		if n.IsDir() || n.Nlink < 2 || seen[n.Ino] {
			return
		}
		seen[n.Ino] = true
		for _, q := range old.LinkNames(n.Ino) {
			out = append(out, Change{Path: q})
		}
		for _, q := range t.LinkNames(n.Ino) {
			out = append(out, Change{Path: q})
		}
	}
	for _, c := range e.Changes() {
		for _, tr := range []Tree{old, t} {
			if c.Subtree {
				_ = tr.Walk(c.Path, func(_ Path, n Node) error { add(n); return nil })
			} else if n, ok := tr.get(c.Path); ok {
				add(n)
			}
		}
	}
	return out
}
