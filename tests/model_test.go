package tests

import (
	"bytes"
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// The model-based test drives the real engine — sessions over a repository,
// with snapshots, restores, forks, garbage collection and recovery — through
// random sequences of operations, and after every step checks each session
// against a plain in-memory model of what it must hold. Failing operations
// must fail in both, with the same error code, and change nothing.

// mnode is one node of the model.
type mnode struct {
	kind    vfs.Kind
	content string
	target  string
}

// model is a whole workspace: path → node, the root included.
type model map[vfs.Path]mnode

func newModel() model { return model{vfs.Root: {kind: vfs.KindDir}} }

// missing mirrors the engine: a non-directory ancestor makes a missing path
// not_directory, otherwise it is not_found.
func (m model) missing(p vfs.Path) vfs.Code {
	code := vfs.CodeNotFound
	p.Ancestors(func(a vfs.Path) bool {
		n, ok := m[a]
		if ok && n.kind != vfs.KindDir {
			code = vfs.CodeNotDir
		}
		return !ok
	})
	return code
}

// parentOK says whether p's parent exists as a directory, and if not why.
func (m model) parentOK(p vfs.Path) vfs.Code {
	parent := p.Parent()
	if n, ok := m[parent]; ok {
		if n.kind != vfs.KindDir {
			return vfs.CodeNotDir
		}
		return ""
	}
	return m.missing(parent)
}

func (m model) hasChildren(p vfs.Path) bool {
	for q := range m {
		if q != p && q.HasPrefix(p) {
			return true
		}
	}
	return false
}

func (m model) mkdirAll(p vfs.Path) vfs.Code {
	if n, ok := m[p]; ok {
		if n.kind != vfs.KindDir {
			return vfs.CodeNotDir
		}
		return ""
	}
	if code := m.mkdirAll(p.Parent()); code != "" {
		return code
	}
	m[p] = mnode{kind: vfs.KindDir}
	return ""
}

// session is a live session under test with its model.
type session struct {
	s     *vfs.Session
	model model
}

type machine struct {
	ctx      context.Context
	dir      string
	store    *snapshot.MemoryStore
	repo     *snapshot.Repo
	sessions []*session
	snaps    map[string]model
	snapIDs  []string
}

var names = []string{"a", "b", "c"}

func genPath(t *rapid.T, label string) vfs.Path {
	depth := rapid.IntRange(1, 3).Draw(t, label+"_depth")
	segs := make([]string, depth)
	for i := range segs {
		segs[i] = rapid.SampledFrom(names).Draw(t, label+"_seg")
	}
	return vfs.Path(strings.Join(segs, "/"))
}

func (mc *machine) pick(t *rapid.T) *session {
	return mc.sessions[rapid.IntRange(0, len(mc.sessions)-1).Draw(t, "session")]
}

// expect runs op on the engine, compares its outcome with the model's
// verdict want ("" for success), and applies apply to the model on success.
func expect(t *rapid.T, what string, want vfs.Code, err error, apply func()) {
	got := vfs.CodeOf(err)
	if got != want {
		t.Fatalf("%s: engine says %q (%v), model says %q", what, got, err, want)
	}
	if err == nil && apply != nil {
		apply()
	}
}

func (mc *machine) writeFile(t *rapid.T) {
	ss := mc.pick(t)
	p := genPath(t, "path")
	data := rapid.StringMatching(`[a-z]{0,12}`).Draw(t, "data")
	mode := rapid.SampledFrom([]vfs.WriteMode{vfs.WriteCreate, vfs.WriteOverwrite, vfs.WriteCreateNew, vfs.WriteAppend}).Draw(t, "mode")
	parents := rapid.Bool().Draw(t, "parents")
	m := ss.model

	var want vfs.Code
	n, exists := m[p]
	switch {
	case exists && n.kind == vfs.KindDir:
		want = vfs.CodeIsDir
	case exists && n.kind == vfs.KindSymlink:
		want = vfs.CodeInvalid
	case exists && mode == vfs.WriteCreateNew:
		want = vfs.CodeExists
	case !exists && mode == vfs.WriteOverwrite:
		want = m.missing(p)
	case !exists && !parents:
		want = m.parentOK(p)
	case !exists:
		scratch := maps.Clone(m)
		want = scratch.mkdirAll(p.Parent())
	}
	_, err := ss.s.WriteFile(mc.ctx, p, strings.NewReader(data), vfs.WriteOptions{Mode: mode, CreateParents: parents})
	expect(t, "write "+string(p), want, err, func() {
		if !exists {
			m.mkdirAll(p.Parent())
		}
		if mode == vfs.WriteAppend {
			data = m[p].content + data
		}
		m[p] = mnode{kind: vfs.KindFile, content: data}
	})
}

func (mc *machine) handleWrite(t *rapid.T) {
	ss := mc.pick(t)
	p := genPath(t, "path")
	off := rapid.IntRange(0, 8).Draw(t, "off")
	data := rapid.StringMatching(`[A-Z]{1,6}`).Draw(t, "data")
	m := ss.model
	var want vfs.Code
	n, exists := m[p]
	switch {
	case exists && n.kind == vfs.KindDir:
		want = vfs.CodeIsDir
	case exists && n.kind == vfs.KindSymlink:
		want = vfs.CodeInvalid
	case !exists:
		want = m.parentOK(p)
	}
	h, err := ss.s.OpenFile(mc.ctx, p, os.O_RDWR|os.O_CREATE, 0o644)
	expect(t, "open "+string(p), want, err, nil)
	if err != nil {
		return
	}
	if _, err := h.WriteAt([]byte(data), int64(off)); err != nil {
		t.Fatalf("write through handle: %v", err)
	}
	if err := h.Close(); err != nil {
		t.Fatalf("close handle: %v", err)
	}
	c := []byte(m[p].content)
	if len(c) < off+len(data) {
		c = append(c, make([]byte, off+len(data)-len(c))...)
	}
	copy(c[off:], data)
	m[p] = mnode{kind: vfs.KindFile, content: string(c)}
}

func (mc *machine) truncate(t *rapid.T) {
	ss := mc.pick(t)
	p := genPath(t, "path")
	size := rapid.IntRange(0, 10).Draw(t, "size")
	m := ss.model
	var want vfs.Code
	n, exists := m[p]
	switch {
	case !exists:
		want = m.missing(p)
	case n.kind == vfs.KindDir:
		want = vfs.CodeIsDir
	case n.kind == vfs.KindSymlink:
		want = vfs.CodeInvalid
	}
	_, err := ss.s.Truncate(mc.ctx, p, int64(size))
	expect(t, "truncate "+string(p), want, err, func() {
		c := []byte(n.content)
		if len(c) >= size {
			c = c[:size]
		} else {
			c = append(c, make([]byte, size-len(c))...)
		}
		m[p] = mnode{kind: vfs.KindFile, content: string(c)}
	})
}

func (mc *machine) mkdir(t *rapid.T) {
	ss := mc.pick(t)
	p := genPath(t, "path")
	parents := rapid.Bool().Draw(t, "parents")
	m := ss.model
	var want vfs.Code
	if n, ok := m[p]; ok {
		if !(n.kind == vfs.KindDir && parents) {
			want = vfs.CodeExists
		}
	} else if parents {
		want = maps.Clone(m).mkdirAll(p)
	} else {
		want = m.parentOK(p)
	}
	_, err := ss.s.Mkdir(mc.ctx, p, vfs.MkdirOptions{Parents: parents})
	expect(t, "mkdir "+string(p), want, err, func() { m.mkdirAll(p) })
}

func (mc *machine) symlink(t *rapid.T) {
	ss := mc.pick(t)
	p := genPath(t, "path")
	target := rapid.SampledFrom([]string{"a", "../b", "/c/a"}).Draw(t, "target")
	m := ss.model
	var want vfs.Code
	if _, ok := m[p]; ok {
		want = vfs.CodeExists
	} else {
		want = m.parentOK(p)
	}
	_, err := ss.s.Symlink(mc.ctx, target, p)
	expect(t, "symlink "+string(p), want, err, func() { m[p] = mnode{kind: vfs.KindSymlink, target: target} })
}

func (mc *machine) remove(t *rapid.T) {
	ss := mc.pick(t)
	p := genPath(t, "path")
	recursive := rapid.Bool().Draw(t, "recursive")
	m := ss.model
	var want vfs.Code
	n, ok := m[p]
	switch {
	case !ok:
		want = m.missing(p)
	case n.kind == vfs.KindDir && !recursive && m.hasChildren(p):
		want = vfs.CodeNotEmpty
	}
	err := ss.s.Remove(mc.ctx, p, vfs.RemoveOptions{Recursive: recursive})
	expect(t, "remove "+string(p), want, err, func() {
		for q := range m {
			if q.HasPrefix(p) {
				delete(m, q)
			}
		}
	})
}

func (mc *machine) rename(t *rapid.T) {
	ss := mc.pick(t)
	from, to := genPath(t, "from"), genPath(t, "to")
	noReplace := rapid.Bool().Draw(t, "noreplace")
	m := ss.model
	var want vfs.Code
	src, ok := m[from]
	dst, dstOK := m[to]
	switch {
	case !ok:
		want = m.missing(from)
	case from != to && to.HasPrefix(from):
		want = vfs.CodeInvalid
	case from == to:
	case dstOK && noReplace:
		want = vfs.CodeExists
	case dstOK && src.kind == vfs.KindDir && dst.kind != vfs.KindDir:
		want = vfs.CodeNotDir
	case dstOK && src.kind != vfs.KindDir && dst.kind == vfs.KindDir:
		want = vfs.CodeIsDir
	case dstOK && dst.kind == vfs.KindDir && m.hasChildren(to):
		want = vfs.CodeNotEmpty
	case !dstOK:
		want = m.parentOK(to)
	}
	err := ss.s.Rename(mc.ctx, from, to, vfs.RenameOptions{NoReplace: noReplace})
	expect(t, "rename "+string(from)+" -> "+string(to), want, err, func() {
		if from == to {
			return
		}
		delete(m, to)
		moved := model{}
		for q, n := range m {
			if q.HasPrefix(from) {
				moved[q.Rebase(from, to)] = n
				delete(m, q)
			}
		}
		maps.Copy(m, moved)
	})
}

func (mc *machine) snapshot(t *rapid.T) {
	ss := mc.pick(t)
	snap, err := mc.repo.Snapshot(mc.ctx, ss.s, "")
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	mc.addSnap(snap.ID, ss.model)
	// A repository with nothing cached rebuilds the snapshot from its
	// manifests, byte for byte.
	fresh, err := snapshot.OpenRepo(mc.ctx, mc.store, filepath.Join(mc.dir, "verify"), snapshot.RepoOptions{})
	if err != nil {
		t.Fatalf("open a fresh repo: %v", err)
	}
	defer fresh.Close()
	loaded, err := fresh.Get(mc.ctx, snap.ID)
	if err != nil {
		t.Fatalf("load snapshot from its manifests: %v", err)
	}
	if !bytes.Equal(loaded.Tree.Encode(), snap.Tree.Encode()) {
		t.Fatalf("snapshot %s loads back differently from its manifests", snap.ID[:8])
	}
}

func (mc *machine) addSnap(id string, m model) {
	if _, ok := mc.snaps[id]; !ok {
		mc.snapIDs = append(mc.snapIDs, id)
	}
	mc.snaps[id] = maps.Clone(m)
}

func (mc *machine) restore(t *rapid.T) {
	if len(mc.snapIDs) == 0 {
		t.Skip("no snapshot yet")
	}
	ss := mc.pick(t)
	id := rapid.SampledFrom(mc.snapIDs).Draw(t, "snapshot")
	if err := mc.repo.Restore(mc.ctx, ss.s, id); err != nil {
		t.Fatalf("restore: %v", err)
	}
	ss.model = maps.Clone(mc.snaps[id])
}

func (mc *machine) fork(t *rapid.T) {
	if len(mc.sessions) >= 4 {
		t.Skip("enough sessions")
	}
	var src snapshot.Source
	var m model
	if len(mc.snapIDs) > 0 && rapid.Bool().Draw(t, "from_snapshot") {
		src.Snapshot = rapid.SampledFrom(mc.snapIDs).Draw(t, "snapshot")
		m = mc.snaps[src.Snapshot]
	} else {
		ss := mc.pick(t)
		src.Session, m = ss.s, ss.model
	}
	s, err := mc.repo.Fork(mc.ctx, src, snapshot.SessionOptions{})
	if err != nil {
		t.Fatalf("fork: %v", err)
	}
	if src.Session != nil {
		// Forking a live session snapshots it first.
		mc.addSnap(src.Session.Info().Ref, m)
	}
	mc.sessions = append(mc.sessions, &session{s: s, model: maps.Clone(m)})
}

func (mc *machine) gc(t *rapid.T) {
	if _, err := mc.repo.GC(mc.ctx); err != nil {
		t.Fatalf("gc: %v", err)
	}
	// Every snapshot is still whole.
	for _, id := range mc.snapIDs {
		snap, err := mc.repo.Get(mc.ctx, id)
		if err != nil {
			t.Fatalf("snapshot %s after gc: %v", id[:8], err)
		}
		mc.compareTree(t, "snapshot "+id[:8], snap.Tree, mc.snaps[id], func(p vfs.Path, n vfs.Node) ([]byte, error) {
			b, err := mc.store.Open(mc.ctx, snapshot.Blobs, n.Blob)
			if err != nil {
				return nil, err
			}
			defer b.Close()
			buf := make([]byte, b.Size())
			_, err = b.ReadAt(buf, 0)
			if b.Size() == 0 {
				err = nil
			}
			return buf, err
		})
	}
}

// reopen closes the repository and opens it again: every session is
// recovered from its journal.
func (mc *machine) reopen(t *rapid.T) {
	ids := make([]string, len(mc.sessions))
	for i, ss := range mc.sessions {
		ids[i] = ss.s.ID()
	}
	if err := mc.repo.Close(); err != nil {
		t.Fatalf("close repo: %v", err)
	}
	repo, err := snapshot.OpenRepo(mc.ctx, mc.store, filepath.Join(mc.dir, "sessions"), snapshot.RepoOptions{})
	if err != nil {
		t.Fatalf("reopen repo: %v", err)
	}
	mc.repo = repo
	for i, id := range ids {
		s, err := repo.Session(id)
		if err != nil {
			t.Fatalf("session %s after reopen: %v", id, err)
		}
		mc.sessions[i].s = s
	}
}

// check compares every session with its model.
func (mc *machine) check(t *rapid.T) {
	for i, ss := range mc.sessions {
		mc.compareTree(t, "session "+string(rune('0'+i)), ss.s.Tree(), ss.model, func(p vfs.Path, _ vfs.Node) ([]byte, error) {
			b, _, err := ss.s.ReadFile(mc.ctx, p)
			return b, err
		})
	}
}

func (mc *machine) compareTree(t *rapid.T, what string, tree vfs.Tree, m model, read func(vfs.Path, vfs.Node) ([]byte, error)) {
	seen := 0
	_ = tree.Walk(vfs.Root, func(p vfs.Path, n vfs.Node) error {
		seen++
		want, ok := m[p]
		if !ok {
			t.Fatalf("%s: %s exists but the model has no such path", what, p)
		}
		if n.Kind != want.kind {
			t.Fatalf("%s: %s is a %s, model says %s", what, p, n.Kind, want.kind)
		}
		switch n.Kind {
		case vfs.KindFile:
			b, err := read(p, n)
			if err != nil {
				t.Fatalf("%s: read %s: %v", what, p, err)
			}
			if !bytes.Equal(b, []byte(want.content)) {
				t.Fatalf("%s: %s holds %q, model says %q", what, p, b, want.content)
			}
		case vfs.KindSymlink:
			if n.Target != want.target {
				t.Fatalf("%s: %s points to %q, model says %q", what, p, n.Target, want.target)
			}
		}
		return nil
	})
	if seen != len(m) {
		var missing []string
		for p := range m {
			if _, ok := tree.Get(p); !ok {
				missing = append(missing, p.String())
			}
		}
		slices.Sort(missing)
		t.Fatalf("%s: model paths missing from the tree: %v", what, missing)
	}
}

func TestModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		dir, err := os.MkdirTemp("", "vfsd-model-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		mc := &machine{ctx: context.Background(), dir: dir, store: snapshot.NewMemory(), snaps: map[string]model{}}
		mc.repo, err = snapshot.OpenRepo(mc.ctx, mc.store, filepath.Join(dir, "sessions"), snapshot.RepoOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { mc.repo.Close() }()
		s, err := mc.repo.NewSession(mc.ctx, snapshot.SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mc.sessions = []*session{{s: s, model: newModel()}}
		t.Repeat(map[string]func(*rapid.T){
			"write":    mc.writeFile,
			"handle":   mc.handleWrite,
			"truncate": mc.truncate,
			"mkdir":    mc.mkdir,
			"symlink":  mc.symlink,
			"remove":   mc.remove,
			"rename":   mc.rename,
			"snapshot": mc.snapshot,
			"restore":  mc.restore,
			"fork":     mc.fork,
			"gc":       mc.gc,
			"reopen":   mc.reopen,
			"":         mc.check,
		})
	})
}
