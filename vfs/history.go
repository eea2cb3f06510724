package vfs

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"

	"github.com/vfsd/vfsd/internal/osfile"
)

// Time travel. A session's journal is its history: the tree just after
// event N is the base folded with events 1..N. To make that cheap whatever
// the size of the workspace, the session keeps checkpoints — its tree (an
// immutable value, so keeping one costs nothing) and the journal offset
// just past an event — every histEvery events, and after every restore or
// rewind. The tree at N is the nearest checkpoint at or before N with the
// events after it replayed: at most histEvery events once the checkpoints
// are spread out, and never more than the history since the checkpoint.
// Checkpoints are bounded (histMaxCheckpoints): past that every other one
// goes and the spacing doubles.
//
// Content written through handles lives in upper files, which change in
// place; a past tree naming one is resolved by the seal that later stored
// the same content in a blob (see resolveUppers). The blobs the history
// names are kept from garbage collection while the session lives
// (BlobRefs) — up to a budget: past Quota.MaxHistoryBytes of content named
// by the history (the quota's MaxBytes unless set), the oldest part of the
// history is dropped (trim), so a session within its quota cannot fill the
// disk by rewriting a file again and again.
const (
	histEvery          = 256
	histMaxCheckpoints = 128
	// histMaxChanges bounds the paths a rewind marks dirty one by one:
	// past it the whole tree is marked (the next snapshot re-hashes it).
	histMaxChanges = 1 << 16
)

// checkpoint is the session's tree just after event seq, whose record
// ends at byte end of the journal.
type checkpoint struct {
	seq  uint64
	end  int64
	tree Tree
}

// history is the index of a session's journal. The session's mu guards it.
type history struct {
	cps   []checkpoint
	every uint64
	// blobs holds every blob an event since the history's start names,
	// with its size and the last event naming it; bytes sums the sizes.
	blobs map[Hash]histBlob
	bytes int64
	// budget bounds bytes (0: unbounded); trim enforces it.
	budget int64
	// sinceCp is the size of the blobs first named since the last
	// checkpoint.
	sinceCp int64
	// trimmed: cps[0] is not the journal's base but a later state, whose
	// tree's blobs the history holds too (nothing else does).
	trimmed bool
}

// histBlob is a blob the history names.
type histBlob struct {
	size int64
	last uint64 // the last event that names it
}

// start resets the history to begin at the journal's base: event seq (the
// header's SeqBase), whose header ends at end, with tree t.
func (h *history) start(seq uint64, end int64, t Tree) {
	h.cps = []checkpoint{{seq: seq, end: end, tree: t}}
	h.every = histEvery
	h.blobs = make(map[Hash]histBlob)
	h.bytes, h.sinceCp = 0, 0
	h.trimmed = false
}

// note records event e, number seq, ending at end, which left tree t. It
// never trims: replaying a journal must see the history as it was when
// the journal was written (a rewind names a position in it); callers trim
// once the event is live (see trim).
func (h *history) note(seq uint64, end int64, e *Event, t Tree) {
	if h.cps == nil {
		return
	}
	h.addBlobs(seq, e, t)
	last := h.cps[len(h.cps)-1]
	// A checkpoint every h.every events, and, under a budget, every
	// eighth of it of new content: trim then drops history in steps no
	// coarser than that.
	heavy := h.budget > 0 && h.sinceCp >= h.budget/8
	if e.Op != OpRestore && e.Op != OpRewind && seq-last.seq < h.every && !heavy {
		return
	}
	h.sinceCp = 0
	h.cps = append(h.cps, checkpoint{seq: seq, end: end, tree: t})
	if len(h.cps) > histMaxCheckpoints {
		kept := h.cps[:1]
		for i := 2; i < len(h.cps); i += 2 {
			kept = append(kept, h.cps[i])
		}
		if kept[len(kept)-1].seq != h.cps[len(h.cps)-1].seq {
			kept = append(kept, h.cps[len(h.cps)-1])
		}
		clear(h.cps[len(kept):])
		h.cps = kept
		h.every *= 2
	}
}

// addBlobs records the blobs event seq names; t, the tree it left, gives
// the sizes of sealed content.
func (h *history) addBlobs(seq uint64, e *Event, t Tree) {
	if !e.Blob.IsZero() {
		size := e.Size
		if n, ok := t.get(e.Path); ok && n.Blob == e.Blob {
			size = n.Size
		}
		h.addBlob(e.Blob, size, seq)
	}
	for _, sl := range e.Seals {
		var size int64
		if n, ok := t.get(sl.Path); ok && n.Blob == sl.Blob {
			size = n.Size
		}
		h.addBlob(sl.Blob, size, seq)
	}
	for i := range e.Batch {
		h.addBlobs(seq, &e.Batch[i], t)
	}
}

func (h *history) addBlob(b Hash, size int64, seq uint64) {
	if b == EmptyHash {
		return
	}
	hb, ok := h.blobs[b]
	if !ok {
		hb.size = size
		h.bytes += size
		h.sinceCp += size
	}
	hb.last = seq
	h.blobs[b] = hb
}

// trim keeps the history within its budget: when the content it names
// passes the budget, it drops its oldest part, starting it at the oldest
// checkpoint — or, if none is late enough, at t, the tree just after event
// seq (ending at end) — after which the history names at most half the
// budget. Blobs only events before the new start named are let go: the
// new start's tree holds what it still needs (BlobRefs). Positions before
// it are refused from then on, as those before a restore are.
func (h *history) trim(seq uint64, end int64, t Tree) {
	if h.budget <= 0 || h.bytes <= h.budget || h.cps == nil {
		return
	}
	// bytes named after position p, for the candidates in order.
	type named struct {
		last uint64
		size int64
	}
	all := make([]named, 0, len(h.blobs))
	for _, b := range h.blobs {
		all = append(all, named{b.last, b.size})
	}
	slices.SortFunc(all, func(a, b named) int { return cmp.Compare(a.last, b.last) })
	after := h.bytes // bytes named by events after the candidate
	i := 0
	// The candidates: every checkpoint but the first, then t itself.
	cands := append(slices.Clone(h.cps[1:]), checkpoint{seq: seq, end: end, tree: t})
	for c, cp := range cands {
		for i < len(all) && all[i].last <= cp.seq {
			after -= all[i].size
			i++
		}
		if after > h.budget/2 && c < len(cands)-1 {
			continue
		}
		if c < len(cands)-1 {
			h.cps = cands[c : len(cands)-1]
		} else {
			h.cps = []checkpoint{cp}
		}
		for b, hb := range h.blobs {
			if hb.last <= cp.seq {
				delete(h.blobs, b)
			}
		}
		h.bytes = after
		h.trimmed = true
		return
	}
}

// at returns the last checkpoint at or before seq.
func (h *history) at(seq uint64) checkpoint {
	lo, hi := 0, len(h.cps)
	for lo < hi {
		mid := (lo + hi) / 2
		if h.cps[mid].seq <= seq {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return h.cps[max(lo-1, 0)]
}

// first is the oldest position the history reaches.
func (h *history) first() uint64 {
	if len(h.cps) == 0 {
		return math.MaxUint64
	}
	return h.cps[0].seq
}

// HistoryStart returns the oldest journal position TreeAt and Rewind reach:
// the session's creation, or the last reset or restore before the daemon
// last opened it (opening a session compacts its journal to start there).
func (s *Session) HistoryStart() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.hist.first()
}

// errStopHistory ends a History walk early without an error.
var errStopHistory = errors.New("stop")

// History calls fn for every event after position from, up to and
// including to (or the last one), in order. Positions before HistoryStart
// are not kept: from is raised to it. fn must not change the session.
func (s *Session) History(ctx context.Context, from, to uint64, fn func(seq uint64, e *Event) error) error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return closedErr("history")
	}
	from = max(from, s.hist.first())
	to = min(to, s.seq)
	cp := s.hist.at(from)
	path := s.journal.Path()
	s.mu.RUnlock()
	if from >= to {
		return nil
	}
	err := readEvents(ctx, path, cp, to, func(seq uint64, e *Event) error {
		if seq <= from {
			return nil
		}
		return fn(seq, e)
	})
	if errors.Is(err, errStopHistory) {
		return nil
	}
	return err
}

// readEvents reads the journal at path from checkpoint cp's offset, calling
// fn for events cp.seq+1 up to to.
func readEvents(ctx context.Context, path string, cp checkpoint, to uint64, fn func(seq uint64, e *Event) error) error {
	if to <= cp.seq {
		return nil
	}
	f, err := osfile.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("read history: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(cp.end, io.SeekStart); err != nil {
		return fmt.Errorf("read history: %w", err)
	}
	r := bufio.NewReaderSize(f, 1<<16)
	for seq := cp.seq + 1; seq <= to; seq++ {
		if seq%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		payload, _, err := readRecord(r)
		if err != nil {
			return fmt.Errorf("read history: journal %s ends before event %d: %w", path, seq, err)
		}
		var e Event
		if err := json.Unmarshal(payload, &e); err != nil {
			return fmt.Errorf("read history: journal %s record %d is corrupt: %w", path, seq, err)
		}
		if err := fn(seq, &e); err != nil {
			return err
		}
	}
	return nil
}

// TreeAt returns the session's tree as it was just after event seq (its
// Info().Seq then). Files that were in upper files then keep their upper
// references: ResolvedTreeAt replaces them with blobs where the history
// allows. Its cost is the replay from the nearest checkpoint, never the
// size of the workspace.
func (s *Session) TreeAt(ctx context.Context, seq uint64) (Tree, error) {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return Tree{}, closedErr("history")
	}
	cur, first := s.seq, s.hist.first()
	if seq == cur {
		t := s.tree
		s.mu.RUnlock()
		return t, nil
	}
	path := s.journal.Path()
	s.mu.RUnlock()
	switch {
	case seq > cur:
		return Tree{}, newErr(CodeNotFound, "history", Root, fmt.Sprintf("position %d is in the future: the session's last event is %d", seq, cur))
	case seq < first:
		return Tree{}, newErr(CodeNotFound, "history", Root, fmt.Sprintf("position %d is before the history kept (it starts at %d: the last reset or restore before the daemon last opened the session, or where the history was cut to stay within the session's history budget)", seq, first))
	}
	return s.replayTo(ctx, path, seq)
}

// replayTo folds the journal at path from the checkpoint nearest seq up to
// event seq.
func (s *Session) replayTo(ctx context.Context, path string, seq uint64) (Tree, error) {
	s.mu.RLock()
	cp := s.hist.at(seq)
	s.mu.RUnlock()
	t := cp.tree
	err := readEvents(ctx, path, cp, seq, func(n uint64, e *Event) error {
		var err error
		switch e.Op {
		case OpRestore:
			var rt Tree
			if rt, err = s.loadTree(ctx, e.Snapshot, s.header.Created); err == nil {
				t = rt.withInoFloor(e.Ino).WithOwner(s.owner)
			}
		case OpRewind:
			t, err = s.rewoundTree(ctx, path, e)
		default:
			t, err = Reduce(t, e)
		}
		if err != nil {
			return fmt.Errorf("replay event %d (%s): %w", n, e.Op, err)
		}
		return nil
	})
	if err != nil {
		return Tree{}, err
	}
	return t, nil
}

// rewoundTree is the tree rewind event e installs: the tree just after
// event e.Seq with e.Seals' blobs in place of upper files.
func (s *Session) rewoundTree(ctx context.Context, path string, e *Event) (Tree, error) {
	if s.hist.first() > e.Seq {
		return Tree{}, fmt.Errorf("the history before event %d is not kept", s.hist.first())
	}
	t, err := s.replayTo(ctx, path, e.Seq)
	if err != nil {
		return Tree{}, err
	}
	t = reduceSeal(t, e)
	return t.withInoFloor(e.Ino).WithOwner(s.owner), nil
}

// resolveUppers replaces the upper files t (the tree just after event
// after) names with the blobs later seals stored their content in. A file
// whose upper file was committed to again (its content changed) before any
// seal, or dropped unsealed, cannot be resolved: its path is in lost.
func (s *Session) resolveUppers(ctx context.Context, t Tree, after uint64) (Tree, []Seal, []Path, error) {
	if t.Uppers() == 0 {
		return t, nil, nil, nil
	}
	type name struct {
		path Path
		ino  uint64
	}
	var (
		seals []Seal
		lost  []Path
	)
	pending := map[uint64][]name{}
	_ = t.walkLoaded(Root, func(p Path, n Node) error {
		switch {
		case !n.IsFile() || n.Upper == 0:
		case n.Size == 0:
			// Empty whatever the upper file holds later (a file created
			// straight into an upper file, or truncated to nothing).
			seals = append(seals, Seal{Path: p, Ino: n.Ino, Upper: n.Upper, Blob: EmptyHash, Encoding: EncodingUTF8})
		default:
			pending[n.Upper] = append(pending[n.Upper], name{p, n.Ino})
		}
		return nil
	})
	if len(pending) == 0 {
		return reduceSeal(t, &Event{Seals: seals}), seals, nil, nil
	}
	var visit func(e *Event)
	visit = func(e *Event) {
		switch e.Op {
		case OpBatch:
			for i := range e.Batch {
				visit(&e.Batch[i])
			}
		case OpCommit:
			if ns, ok := pending[e.Upper]; ok {
				for _, n := range ns {
					lost = append(lost, n.path)
				}
				delete(pending, e.Upper)
			}
		case OpSeal:
			for _, sl := range e.Seals {
				if ns, ok := pending[sl.Upper]; ok {
					for _, n := range ns {
						seals = append(seals, Seal{Path: n.path, Ino: n.ino, Upper: sl.Upper, Blob: sl.Blob, Encoding: sl.Encoding})
					}
					delete(pending, sl.Upper)
				}
			}
		}
	}
	err := s.History(ctx, after, math.MaxUint64, func(_ uint64, e *Event) error {
		visit(e)
		if len(pending) == 0 {
			return errStopHistory
		}
		return nil
	})
	if err != nil {
		return Tree{}, nil, nil, err
	}
	for _, ns := range pending {
		for _, n := range ns {
			lost = append(lost, n.path)
		}
	}
	return reduceSeal(t, &Event{Seals: seals}), seals, lost, nil
}

// ResolvedTreeAt is TreeAt with the content of files then in upper files
// taken from the blobs it was later sealed into; lost lists the files whose
// content at seq the history does not hold (they keep their upper
// references, which name no readable content).
func (s *Session) ResolvedTreeAt(ctx context.Context, seq uint64) (t Tree, lost []Path, err error) {
	if t, err = s.TreeAt(ctx, seq); err != nil {
		return Tree{}, nil, err
	}
	s.mu.RLock()
	cur := s.seq
	s.mu.RUnlock()
	if seq == cur {
		return t, nil, nil // the live tree: its upper files are current
	}
	t, _, lost, err = s.resolveUppers(ctx, t, seq)
	return t, lost, err
}

// SealUppers stores the content of every file written through a handle
// and not yet sealed into blobs (one seal event), so the history holds
// the session's state as it is now. It costs what was written through
// handles since the last seal; with nothing there it does nothing.
func (s *Session) SealUppers(ctx context.Context) error {
	s.mu.RLock()
	n := len(s.uppers)
	s.mu.RUnlock()
	if n == 0 {
		return nil
	}
	f, err := s.Freeze(ctx)
	if err != nil {
		return err
	}
	f.Release()
	return nil
}

// Rewind puts the session back to its state just after event seq (its
// Info().Seq at the time): one rewind event, itself part of the history,
// so a later rewind can go back to just before it. Files written through
// handles since are sealed first, so their content stays in the history.
// It fails, changing nothing, when seq is outside the history kept or the
// content of a file then in an upper file is not held (written through a
// mount and changed again before anything sealed it): rewind to a call
// boundary or a snapshot instead. It returns the rewind's event number.
//
// Its cost is the replay from the nearest checkpoint plus a read of the
// events since seq, never the size of the workspace (unless files were in
// upper files at seq, which are found by a walk of the tree).
func (s *Session) Rewind(ctx context.Context, seq uint64) (uint64, error) {
	const op = "rewind"
	if err := s.SealUppers(ctx); err != nil {
		return 0, err
	}
	t, err := s.TreeAt(ctx, seq)
	if err != nil {
		return 0, withOp(err, op)
	}
	t, seals, lost, err := s.resolveUppers(ctx, t, seq)
	if err != nil {
		return 0, ioErr(op, Root, err)
	}
	if len(lost) > 0 {
		return 0, newErr(CodeConflict, op, lost[0], fmt.Sprintf("its content just after event %d is not kept (%d such files): it was written through a mount and changed again before vfsd stored it; rewind to a call boundary or a snapshot instead", seq, len(lost)))
	}
	// What changed since seq is what the rewind changes back: marked
	// dirty, so the next snapshot re-hashes no more than that.
	s.mu.RLock()
	ref := s.ref
	s.mu.RUnlock()
	changed := map[Change]struct{}{}
	err = s.History(ctx, seq, math.MaxUint64, func(_ uint64, e *Event) error {
		for _, c := range e.Changes() {
			changed[c] = struct{}{}
		}
		if len(changed) > histMaxChanges {
			changed = nil
			return errStopHistory
		}
		return nil
	})
	if err != nil {
		return 0, ioErr(op, Root, err)
	}
	s.freezeMu.Lock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.freezeMu.Unlock()
		return 0, closedErr(op)
	}
	if s.ref != ref || t.HasLinks() || s.tree.HasLinks() {
		changed = nil // a snapshot since, or links: mark everything
	}
	e := &Event{Op: OpRewind, Path: Root, Seq: seq, Seals: seals, Ino: s.tree.MaxIno(), Origin: OriginOf(ctx)}
	s.stamp(e)
	n, err := s.journal.Append(e)
	if err != nil {
		s.mu.Unlock()
		s.freezeMu.Unlock()
		return 0, ioErr(op, Root, err)
	}
	t = t.withInoFloor(e.Ino).WithOwner(s.owner)
	s.replaceTreeLocked(t)
	var cs []Change
	if changed != nil {
		cs = make([]Change, 0, len(changed))
		for c := range changed {
			cs = append(cs, c)
		}
	}
	s.rewoundLocked(t, e, n, cs)
	s.hist.note(n, s.journal.Size(), e, s.tree)
	s.mu.Unlock()
	s.freezeMu.Unlock()
	return n, s.commit(ctx, n, e)
}

// rewoundLocked installs tree t of rewind event e, number seq. changes are
// what the rewind undid, marked dirty; nil marks the whole tree.
func (s *Session) rewoundLocked(t Tree, e *Event, seq uint64, changes []Change) {
	s.tree, s.seq, s.rewindSeq = t, seq, seq
	s.treeBytes.Store(t.Bytes())
	if changes == nil {
		s.dirty[Root] = dirtyMark{seq: seq, subtree: true}
		return
	}
	for _, c := range changes {
		m := s.dirty[c.Path]
		s.dirty[c.Path] = dirtyMark{seq: seq, subtree: m.subtree || c.Subtree}
	}
}

// epochLocked changes whenever the session's whole tree is replaced (a
// restore or a rewind): a Frozen taken before no longer describes it.
func (s *Session) epochLocked() uint64 { return max(s.restoreSeq, s.rewindSeq) }

// reindexHistory rebuilds the history's checkpoints over the journal as it
// is now (after compaction rewrote it), from its base and events.
func (s *Session) reindexHistory(events []*Event) error {
	base, err := s.loadTree(context.Background(), s.header.Base, s.header.Created)
	if err != nil {
		return fmt.Errorf("index history: %w", err)
	}
	path := s.journal.Path()
	f, err := osfile.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("index history: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<16)
	_, end, err := readRecord(r)
	if err != nil {
		return fmt.Errorf("index history: header: %w", err)
	}
	t := base.withInoFloor(s.header.InoFloor)
	s.hist.start(s.header.SeqBase, int64(end), t)
	off := int64(end)
	seq := s.header.SeqBase
	for _, e := range events {
		_, n, err := readRecord(r)
		if err != nil {
			return fmt.Errorf("index history: record %d: %w", seq+1, err)
		}
		off += int64(n)
		seq++
		switch e.Op {
		case OpRewind:
			t, err = s.rewoundTree(context.Background(), path, e)
		default:
			t, err = Reduce(t, e)
		}
		if err != nil {
			return fmt.Errorf("index history: event %d: %w", seq, err)
		}
		s.hist.note(seq, off, e, t)
	}
	s.hist.trim(seq, off, t)
	return nil
}
