package vfs

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/vfsd/vfsd/internal/crashpoint"
)

// Frozen is a session's state captured for a snapshot: its tree with every
// file's content in a blob, and what changed since the session's reference
// snapshot. The blobs it references stay pinned against garbage collection
// until Release.
type Frozen struct {
	Tree    Tree     // the session's tree; every file's content is a blob
	Ref     string   // the snapshot Changes are relative to ("" = the empty tree)
	Changes []Change // what changed since Ref, in path order
	Seq     uint64   // the last event Tree includes
	epoch   uint64   // the session's last restore when frozen
	s       *Session
	unpins  []func()
}

// Release unpins the blobs the frozen tree references. Call it once the
// tree is recorded (or abandoned). Until then the session's BlobRefs
// includes them.
func (f *Frozen) Release() {
	for _, u := range f.unpins {
		u()
	}
	f.unpins = nil
	f.s.mu.Lock()
	delete(f.s.frozen, f)
	f.s.mu.Unlock()
}

// frozenFile is an upper file being sealed. Freeze pins it (as a detached
// handle does), so it stays on disk until sealed whatever happens to the
// node meanwhile.
type frozenFile struct {
	path Path
	node Node
	uf   *upperFile
}

// Freeze captures the session's state for a snapshot. Its cost grows with
// what changed since the last snapshot — files written through handles are
// hashed into the blob store — never with the size of the workspace. The
// session keeps serving reads and writes meanwhile: each write through a
// handle lands wholly before the capture (and is in the tree) or wholly
// after (and is not).
func (s *Session) Freeze(ctx context.Context) (*Frozen, error) {
	s.freezeMu.Lock()
	defer s.freezeMu.Unlock()

	files, f, err := s.freezeUppers()
	if err != nil {
		return nil, err
	}
	defer s.unpinFrozen(files)

	e := &Event{Op: OpSeal, Time: s.now()}
	seals, unpins, err := s.sealAll(ctx, files)
	f.unpins = append(f.unpins, unpins...)
	if err != nil {
		f.Release()
		return nil, err
	}
	crashpoint.Hit("seal-stored")
	e.Seals = seals
	pre := &reduced{from: f.Tree}
	f.Tree = reduceSeal(f.Tree, e)
	pre.to = f.Tree
	s.mu.Lock()
	s.frozen[f] = struct{}{}
	var seq uint64
	if len(e.Seals) > 0 {
		seq, err = s.applyReducedLocked("snapshot", e, pre)
	}
	s.mu.Unlock()
	if err != nil {
		f.Release()
		return nil, err
	}
	crashpoint.Hit("seal-journaled")
	if seq != 0 {
		s.notify(seq, e, "")
	}
	return f, nil
}

// sealAll hashes frozen upper files into the blob store, several at a time,
// deferring durability to one Sync at the end.
func (s *Session) sealAll(ctx context.Context, files []frozenFile) ([]Seal, []func(), error) {
	seals := make([]Seal, len(files))
	unpins := make([]func(), len(files))
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	report := sealReporter(ctx, files)
	work := make(chan int)
	for range min(len(files), 2*runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for i := range work {
				ff := files[i]
				var (
					h     Hash
					size  int64
					unpin func()
				)
				sn := &Sniffer{}
				rd, err := ff.uf.openReader()
				if err == nil {
					h, size, unpin, err = s.sealOne(ctx, rd, sn)
					rd.Close()
				}
				if err == nil && size != ff.node.Size {
					unpin()
					err = fmt.Errorf("upper file is %d bytes, committed size is %d", size, ff.node.Size)
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = ioErr("snapshot", ff.path, err)
					}
					mu.Unlock()
					continue
				}
				unpins[i] = unpin
				seals[i] = Seal{Path: ff.path, Ino: ff.node.Ino, Upper: ff.node.Upper, Blob: h, Encoding: sn.Encoding()}
				report(size)
			}
		})
	}
	for i := range files {
		work <- i
	}
	close(work)
	wg.Wait()
	unpins = slices.DeleteFunc(unpins, func(u func()) bool { return u == nil })
	if firstErr != nil {
		return nil, unpins, firstErr
	}
	if len(files) > 0 {
		if err := s.opts.Blobs.Sync(ctx); err != nil {
			return nil, unpins, ioErr("snapshot", Root, err)
		}
	}
	return seals, unpins, nil
}

// sealOne stores the content of a frozen upper file, open as rd, as a
// blob, sniffing its encoding into sn. Nobody writes a frozen upper file
// any more (writes copy up anew), so a store that can takes the file
// itself (FileBlobStore, Frozen): a hard link, no copy. The upper file's
// name goes once the seal is journaled; until then recovery finds the
// content under it (see recoverUppers).
func (s *Session) sealOne(ctx context.Context, rd Blob, sn *Sniffer) (Hash, int64, func(), error) {
	fs, ok := s.opts.Blobs.(FileBlobStore)
	fb, isFile := rd.(FileBlob)
	if !ok || !isFile {
		sn.r = readerOf(rd)
		return s.opts.Blobs.Put(ctx, sn, true)
	}
	return fs.PutFile(ctx, fb.File(), PutFileOptions{Frozen: true, Deferred: true, Observe: sn})
}

// freezeUppers is Freeze's first phase, under the session lock: commit
// pending handle writes, freeze every upper file so later writes copy up
// anew, pin each, and capture the tree and what changed.
func (s *Session) freezeUppers() ([]frozenFile, *Frozen, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, closedErr("snapshot")
	}
	var files []frozenFile
	pinned := map[uint64]bool{}
	for p, n := range s.upperNodesLocked() {
		if pinned[n.Upper] {
			continue // another name of a hard-linked file
		}
		pinned[n.Upper] = true
		uf := s.uppers[n.Upper]
		if _, _, err := s.commitUpperLocked("snapshot", p, n.Ino, uf); err != nil {
			for _, ff := range files {
				s.releaseUpperLocked(ff.uf)
			}
			return nil, nil, err
		}
		n, _ = s.tree.get(p)
		uf.mu.Lock()
		uf.frozen = true
		uf.mu.Unlock()
		uf.refs++
		files = append(files, frozenFile{path: p, node: n, uf: uf})
	}
	f := &Frozen{Tree: s.tree, Ref: s.ref, Seq: s.seq, Changes: make([]Change, 0, len(s.dirty)), epoch: s.epochLocked(), s: s}
	for p, m := range s.dirty {
		f.Changes = append(f.Changes, Change{Path: p, Subtree: m.subtree})
	}
	slices.SortFunc(f.Changes, func(a, b Change) int { return ComparePaths(a.Path, b.Path) })
	return files, f, nil
}

// unpinFrozen lets go of the upper files Freeze pinned; those the seal
// dropped from the tree are closed now and unlinked in the background, in
// one batch (the sealed ones are names of blobs by now: unlinking them
// frees nothing).
func (s *Session) unpinFrozen(files []frozenFile) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var gone []string
	for _, ff := range files {
		uf := ff.uf
		uf.refs--
		if uf.refs == 0 && !uf.inTree {
			uf.close(false)
			gone = append(gone, uf.path)
		}
	}
	s.removals.removeAll(gone)
}

// upperNodesLocked finds every node whose content is in an upper file. Each
// was copied up by an event that marked it (or a renamed ancestor) dirty, so
// the dirty set leads to all of them; a full walk backs that up should the
// count ever disagree with the registry.
func (s *Session) upperNodesLocked() map[Path]Node {
	found := make(map[Path]Node, len(s.uppers))
	if len(s.uppers) == 0 {
		return found
	}
	collect := func(p Path, n Node) error {
		if n.Upper != 0 && s.uppers[n.Upper] != nil {
			found[p] = n
		}
		return nil
	}
	for p, m := range s.dirty {
		if m.subtree {
			_ = s.tree.walkLoaded(p, collect)
		} else if n, ok := s.tree.get(p); ok {
			_ = collect(p, n)
		}
	}
	if distinct := countUppers(found); distinct != len(s.uppers) {
		_ = s.tree.walkLoaded(Root, collect)
	}
	return found
}

// MarkSnapshot records that snapshot id holds the session as f captured it:
// the changes f reported are no longer pending, and the next Freeze reports
// changes relative to id. If the session was restored since f was frozen,
// the snapshot no longer describes its lineage and nothing is recorded.
//
// It does not wait for the journal to reach the disk: the mark only saves
// work. Should a crash lose it, the session's reference stays the earlier
// snapshot and the next Freeze reports a few more changes; the snapshot
// itself is whatever durable record the caller wrote.
func (s *Session) MarkSnapshot(ctx context.Context, f *Frozen, id string) error {
	_, _, err := s.mutate(Relaxed(ctx), "snapshot", func(Tree) (*Event, error) {
		if s.epochLocked() != f.epoch {
			return nil, nil
		}
		return &Event{Op: OpSnapshotted, Snapshot: id, Seq: f.Seq, Time: s.now()}, nil
	})
	return err
}

// ResetTo replaces the session's whole state with tree t, the tree of
// snapshot id, and empties the upper directory. It costs O(1) in the size of
// the workspace (plus removing the files written through handles since the
// last snapshot): one journal record, no copying. Open handles on files that
// t still holds, at the same path with the same inode, stay attached;
// others are detached.
func (s *Session) ResetTo(ctx context.Context, t Tree, id string) error {
	return s.restore(ctx, t, id, false)
}

// Reinit is ResetTo that also makes snapshot id the state Reset returns to:
// for a session whose host mounts were imported again.
func (s *Session) Reinit(ctx context.Context, t Tree, id string) error {
	return s.restore(ctx, t, id, true)
}

func (s *Session) restore(ctx context.Context, t Tree, id string, initial bool) error {
	const op = "restore"
	if !t.Valid() {
		return newErr(CodeInvalid, op, Root, "tree is not initialised")
	}
	s.freezeMu.Lock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.freezeMu.Unlock()
		return closedErr(op)
	}
	// Ino carries the inode high-water mark across the restore: a file
	// created before it may still be open, and its number must stay its own.
	e := &Event{Op: OpRestore, Path: Root, Snapshot: id, Initial: initial, Time: s.now(), Ino: s.tree.MaxIno()}
	seq, err := s.journal.Append(e)
	if err != nil {
		s.mu.Unlock()
		s.freezeMu.Unlock()
		return ioErr(op, Root, err)
	}
	s.replaceTreeLocked(t)
	s.restoredLocked(t, e, seq)
	s.mu.Unlock()
	s.freezeMu.Unlock()
	return s.commit(ctx, seq, e)
}

// replaceTreeLocked prepares the session for its whole tree to become t
// (a restore's or a rewind's): open handles on files t holds at the same
// path with the same inode stay attached, others are detached, and every
// upper file is dropped (t's content is all in blobs).
func (s *Session) replaceTreeLocked(t Tree) {
	old := s.tree
	for _, hs := range s.handles {
		for _, h := range hs {
			if n, ok := t.get(h.path); !ok || n.Ino != h.ino {
				on, _ := old.get(h.path)
				h.detachLocked(on)
			}
		}
	}
	for ino, hs := range s.handles {
		s.handles[ino] = slices.DeleteFunc(hs, func(h *Handle) bool { return h.detached })
		if len(s.handles[ino]) == 0 {
			delete(s.handles, ino)
		}
	}
	for id := range s.uppers {
		s.dropUpperLocked(id)
	}
	s.removals.wait() // a restored session's upper directory is clean
}

// restoredLocked installs the tree of restore event e, whose sequence
// number is seq: the session's reference is now the restored snapshot and
// nothing is dirty relative to it.
func (s *Session) restoredLocked(t Tree, e *Event, seq uint64) {
	t = t.withInoFloor(e.Ino).WithOwner(s.owner)
	s.tree, s.seq, s.ref, s.restoreSeq, s.inoFloor = t, seq, e.Snapshot, seq, t.MaxIno()
	s.treeBytes.Store(t.Bytes())
	s.restored = append(s.restored, e.Snapshot)
	if e.Initial {
		s.header.Initial = e.Snapshot
	}
	clear(s.dirty)
}

// Reset returns the session to its initial state — the snapshot it was
// created from — with an empty upper directory.
func (s *Session) Reset(ctx context.Context) error {
	s.mu.RLock()
	hdr := s.header
	s.mu.RUnlock()
	t, err := s.loadTree(ctx, hdr.Initial, hdr.Created)
	if err != nil {
		return ioErr("reset", Root, fmt.Errorf("load initial snapshot %q: %w", hdr.Initial, err))
	}
	if err := s.ResetTo(ctx, t, hdr.Initial); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.removeStrayUppersLocked()
}

// SealProgress tells how far a snapshot has come in sealing the session's
// copied-up files into blobs: the part of a snapshot that grows with what
// was written since the last one.
type SealProgress struct {
	Files, FilesTotal int
	Bytes, BytesTotal int64
}

type sealProgressKey struct{}

// WithSealProgress returns a context under which Freeze (and so a
// snapshot) calls fn as it seals files: once before the first, then after
// each. Calls are serialised; fn must be quick.
func WithSealProgress(ctx context.Context, fn func(SealProgress)) context.Context {
	return context.WithValue(ctx, sealProgressKey{}, fn)
}

// sealReporter returns the function sealAll calls after sealing a file of
// size bytes: it reports to ctx's WithSealProgress callback, if any.
func sealReporter(ctx context.Context, files []frozenFile) func(size int64) {
	fn, _ := ctx.Value(sealProgressKey{}).(func(SealProgress))
	if fn == nil || len(files) == 0 {
		return func(int64) {}
	}
	var mu sync.Mutex
	p := SealProgress{FilesTotal: len(files)}
	for _, ff := range files {
		p.BytesTotal += ff.node.Size
	}
	fn(p)
	return func(size int64) {
		mu.Lock()
		defer mu.Unlock()
		p.Files++
		p.Bytes += size
		fn(p)
	}
}

// countUppers counts the distinct upper files of nodes (hard links share
// one).
func countUppers(nodes map[Path]Node) int {
	seen := make(map[uint64]bool, len(nodes))
	for _, n := range nodes {
		seen[n.Upper] = true
	}
	return len(seen)
}
