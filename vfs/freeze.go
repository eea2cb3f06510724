package vfs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"
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

// frozenFile is an upper file being sealed.
type frozenFile struct {
	path Path
	node Node
	rd   Blob
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
	defer func() {
		for _, ff := range files {
			ff.rd.Close()
		}
	}()

	e := &Event{Op: OpSeal, Time: s.now()}
	for _, ff := range files {
		sn := &sniffer{r: readerOf(ff.rd)}
		h, size, unpin, err := s.opts.Blobs.Put(ctx, sn)
		if err != nil {
			f.Release()
			return nil, ioErr("snapshot", ff.path, err)
		}
		f.unpins = append(f.unpins, unpin)
		if size != ff.node.Size {
			f.Release()
			return nil, ioErr("snapshot", ff.path, fmt.Errorf("upper file is %d bytes, committed size is %d", size, ff.node.Size))
		}
		e.Seals = append(e.Seals, Seal{Path: ff.path, Ino: ff.node.Ino, Upper: ff.node.Upper, Blob: h, Encoding: sn.encoding()})
	}
	f.Tree = reduceSeal(f.Tree, e)
	s.mu.Lock()
	s.frozen[f] = struct{}{}
	var seq uint64
	if len(e.Seals) > 0 {
		seq, err = s.applyLocked("snapshot", e)
	}
	s.mu.Unlock()
	if err != nil {
		f.Release()
		return nil, err
	}
	if seq != 0 {
		s.notify(seq, e)
	}
	return f, nil
}

// freezeUppers is Freeze's first phase, under the session lock: commit
// pending handle writes, freeze every upper file so later writes copy up
// anew, open a reader on each, and capture the tree and what changed.
func (s *Session) freezeUppers() ([]frozenFile, *Frozen, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, closedErr("snapshot")
	}
	var files []frozenFile
	for p, n := range s.upperNodesLocked() {
		uf := s.uppers[n.Upper]
		if _, _, err := s.commitUpperLocked("snapshot", p, n.Ino, uf); err != nil {
			closeAll(files)
			return nil, nil, err
		}
		n, _ = s.tree.Get(p)
		uf.mu.Lock()
		uf.frozen = true
		uf.mu.Unlock()
		rd, err := uf.openReader()
		if err != nil {
			closeAll(files)
			return nil, nil, ioErr("snapshot", p, err)
		}
		files = append(files, frozenFile{path: p, node: n, rd: rd})
	}
	f := &Frozen{Tree: s.tree, Ref: s.ref, Seq: s.seq, Changes: make([]Change, 0, len(s.dirty)), s: s}
	for p, m := range s.dirty {
		f.Changes = append(f.Changes, Change{Path: p, Subtree: m.subtree})
	}
	slices.SortFunc(f.Changes, func(a, b Change) int { return ComparePaths(a.Path, b.Path) })
	return files, f, nil
}

func closeAll(files []frozenFile) {
	for _, ff := range files {
		ff.rd.Close()
	}
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
			_ = s.tree.Walk(p, collect)
		} else if n, ok := s.tree.Get(p); ok {
			_ = collect(p, n)
		}
	}
	if len(found) != len(s.uppers) {
		_ = s.tree.Walk(Root, collect)
	}
	return found
}

// MarkSnapshot records that snapshot id holds the session as f captured it:
// the changes f reported are no longer pending, and the next Freeze reports
// changes relative to id.
func (s *Session) MarkSnapshot(ctx context.Context, f *Frozen, id string) error {
	_, _, err := s.mutate(ctx, "snapshot", func(Tree) (*Event, error) {
		return &Event{Op: OpSnapshotted, Snapshot: id, Seq: f.Seq, Time: s.now()}, nil
	})
	return err
}

// ResetTo replaces the session's whole state with tree t, the tree of
// snapshot id: the journal starts afresh over it and the upper directory is
// emptied. It costs O(1) in the size of the workspace (plus the files
// written since). Open handles on files that t still holds, at the same path
// with the same inode, stay attached; others are detached.
func (s *Session) ResetTo(ctx context.Context, t Tree, id string) error {
	const op = "restore"
	if !t.Valid() {
		return newErr(CodeInvalid, op, Root, "tree is not initialised")
	}
	s.freezeMu.Lock()
	defer s.freezeMu.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return closedErr(op)
	}
	hdr := s.header
	hdr.Base = id
	// The new journal is the commit point: a crash before it leaves the old
	// state, after it the new one (recovery removes stale upper files).
	j, err := createJournal(filepath.Join(s.opts.Dir, journalName), hdr)
	if err != nil {
		s.mu.Unlock()
		return ioErr(op, Root, err)
	}
	old, oldJournal := s.tree, s.journal
	for _, hs := range s.handles {
		for _, h := range hs {
			if n, ok := t.Get(h.path); !ok || n.Ino != h.ino {
				on, _ := old.Get(h.path)
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
	trash := s.renewUpperDirLocked()
	s.tree, s.seq, s.ref, s.header, s.journal = t, 0, id, hdr, j
	clear(s.dirty)
	s.mu.Unlock()

	oldJournal.Close()
	go j.flushEvery(s.opts.FlushInterval)
	if trash != "" {
		_ = os.RemoveAll(trash)
	}
	s.notify(0, &Event{Op: OpReset, Path: Root, Snapshot: id, Time: s.now()})
	return nil
}

// renewUpperDirLocked moves the upper directory aside and starts an empty
// one, returning the old one's new name for removal ("" if it could not be
// moved, in which case its files were removed one by one as they were
// dropped).
func (s *Session) renewUpperDirLocked() string {
	trash := s.upperDir + ".old-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if err := os.Rename(s.upperDir, trash); err != nil {
		return ""
	}
	if err := os.Mkdir(s.upperDir, 0o700); err != nil {
		_ = os.Rename(trash, s.upperDir)
		return ""
	}
	return trash
}

// Reset returns the session to its initial state — the snapshot it was
// created from — with a fresh upper directory.
func (s *Session) Reset(ctx context.Context) error {
	s.mu.RLock()
	hdr := s.header
	s.mu.RUnlock()
	t, err := s.loadTree(ctx, hdr.Initial, hdr.Created)
	if err != nil {
		return ioErr("reset", Root, fmt.Errorf("load initial snapshot %q: %w", hdr.Initial, err))
	}
	return s.ResetTo(ctx, t, hdr.Initial)
}
