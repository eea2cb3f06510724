package tests

import (
	"bytes"
	"context"
	"io/fs"
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
//
// The model is POSIX's: paths name inodes, several paths may name one inode
// (hard links), and an inode has a kind, content or target, the twelve mode
// bits, an owner and extended attributes. Link counts are not stored but
// counted (names of a non-directory, 2 + subdirectories of a directory).

// inode is one node of the model. It is a value that is never changed in
// place (xattrs included): a change stores a new value, so cloning a model
// is cloning its two maps.
type inode struct {
	kind    vfs.Kind
	content string
	target  string
	rdev    uint64
	mode    fs.FileMode // vfs.PermBits
	uid     uint32
	gid     uint32
	xattrs  map[string]string
}

// model is a whole workspace: path → inode, the root included.
type model struct {
	paths  map[vfs.Path]int
	inodes map[int]inode
	next   int
	owner  vfs.Owner // the session's default owner, given to new nodes
}

func newModel(owner vfs.Owner) *model {
	return &model{
		paths:  map[vfs.Path]int{vfs.Root: 1},
		inodes: map[int]inode{1: {kind: vfs.KindDir, mode: vfs.DefaultDirMode, uid: owner.Uid, gid: owner.Gid}},
		next:   2,
		owner:  owner,
	}
}

func (m *model) clone() *model {
	c := *m
	c.paths, c.inodes = maps.Clone(m.paths), maps.Clone(m.inodes)
	return &c
}

func (m *model) get(p vfs.Path) (inode, bool) {
	id, ok := m.paths[p]
	if !ok {
		return inode{}, false
	}
	return m.inodes[id], true
}

// update changes the inode at p, which exists, through every name it has.
func (m *model) update(p vfs.Path, fn func(*inode)) {
	id := m.paths[p]
	n := m.inodes[id]
	fn(&n)
	m.inodes[id] = n
}

// create adds a new inode at p, whose parent is a directory, as the engine
// does: the model's owner, and a setgid parent gives its group (and to a
// directory its setgid bit).
func (m *model) create(p vfs.Path, n inode) {
	n.uid, n.gid = m.owner.Uid, m.owner.Gid
	if parent, _ := m.get(p.Parent()); parent.mode&fs.ModeSetgid != 0 {
		n.gid = parent.gid
		if n.kind == vfs.KindDir {
			n.mode |= fs.ModeSetgid
		}
	}
	m.paths[p] = m.next
	m.inodes[m.next] = n
	m.next++
}

// unlink removes p and everything beneath it; inodes with other names live on.
func (m *model) unlink(p vfs.Path) {
	for q := range m.paths {
		if q.HasPrefix(p) {
			delete(m.paths, q)
		}
	}
}

// missing mirrors the engine: a non-directory ancestor makes a missing path
// not_directory, otherwise it is not_found.
func (m *model) missing(p vfs.Path) vfs.Code {
	code := vfs.CodeNotFound
	p.Ancestors(func(a vfs.Path) bool {
		n, ok := m.get(a)
		if ok && n.kind != vfs.KindDir {
			code = vfs.CodeNotDir
		}
		return !ok
	})
	return code
}

// parentOK says whether p's parent exists as a directory, and if not why.
func (m *model) parentOK(p vfs.Path) vfs.Code {
	parent := p.Parent()
	if n, ok := m.get(parent); ok {
		if n.kind != vfs.KindDir {
			return vfs.CodeNotDir
		}
		return ""
	}
	return m.missing(parent)
}

func (m *model) hasChildren(p vfs.Path) bool {
	for q := range m.paths {
		if q != p && q.HasPrefix(p) {
			return true
		}
	}
	return false
}

// mkdirAll creates p and its missing ancestors, p with mode, the others
// with the default directory mode.
func (m *model) mkdirAll(p vfs.Path, mode fs.FileMode) vfs.Code {
	if n, ok := m.get(p); ok {
		if n.kind != vfs.KindDir {
			return vfs.CodeNotDir
		}
		return ""
	}
	if code := m.mkdirAll(p.Parent(), vfs.DefaultDirMode); code != "" {
		return code
	}
	m.create(p, inode{kind: vfs.KindDir, mode: mode})
	return ""
}

// session is a live session under test with its model.
type session struct {
	s     *vfs.Session
	model *model
}

type machine struct {
	ctx      context.Context
	dir      string
	store    *snapshot.MemoryStore
	repo     *snapshot.Repo
	sessions []*session
	snaps    map[string]*model
	snapIDs  []string
}

var (
	names      = []string{"a", "b", "c"}
	owners     = []uint32{vfs.NoOwner, 0, 1000, 1001}
	xattrNames = []string{"user.a", "user.b"}
)

func genPath(t *rapid.T, label string) vfs.Path {
	depth := rapid.IntRange(1, 3).Draw(t, label+"_depth")
	segs := make([]string, depth)
	for i := range segs {
		segs[i] = rapid.SampledFrom(names).Draw(t, label+"_seg")
	}
	return vfs.Path(strings.Join(segs, "/"))
}

// genExisting is genPath biased towards paths that exist in m, so that
// operations meet hard-linked names, special files and full directories
// often rather than by luck.
func genExisting(t *rapid.T, m *model, label string) vfs.Path {
	if rapid.Bool().Draw(t, label+"_existing") && len(m.paths) > 1 {
		paths := slices.Sorted(maps.Keys(m.paths))[1:] // without the root
		return rapid.SampledFrom(paths).Draw(t, label)
	}
	return genPath(t, label)
}

// genTarget is genExisting for metadata operations, which may also name
// the root.
func genTarget(t *rapid.T, m *model, label string) vfs.Path {
	if rapid.IntRange(0, 7).Draw(t, label+"_root") == 0 {
		return vfs.Root
	}
	return genExisting(t, m, label)
}

// genMode draws twelve mode bits, often ones that matter (setgid, sticky, 0).
func genMode(t *rapid.T, label string) fs.FileMode {
	u := rapid.OneOf(
		rapid.SampledFrom([]uint32{0, 0o644, 0o755, 0o2775, 0o4755, 0o6710, 0o1777, 0o7777}),
		rapid.Uint32Range(0, 0o7777),
	).Draw(t, label)
	return vfs.ModeFromUnix(u)
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

// notRegular is the engine's verdict on content operations on a node that
// is not a regular file ("" if it is one).
func notRegular(n inode) vfs.Code {
	switch {
	case n.kind == vfs.KindDir:
		return vfs.CodeIsDir
	case n.kind != vfs.KindFile:
		return vfs.CodeInvalid
	}
	return ""
}

func (mc *machine) writeFile(t *rapid.T) {
	ss := mc.pick(t)
	p := genExisting(t, ss.model, "path")
	data := rapid.StringMatching(`[a-z]{0,12}`).Draw(t, "data")
	mode := rapid.SampledFrom([]vfs.WriteMode{vfs.WriteCreate, vfs.WriteOverwrite, vfs.WriteCreateNew, vfs.WriteAppend}).Draw(t, "mode")
	parents := rapid.Bool().Draw(t, "parents")
	var perm fs.FileMode
	if rapid.Bool().Draw(t, "with_perm") {
		perm = genMode(t, "perm")
	}
	m := ss.model

	var want vfs.Code
	n, exists := m.get(p)
	switch {
	case exists && notRegular(n) != "":
		want = notRegular(n)
	case exists && mode == vfs.WriteCreateNew:
		want = vfs.CodeExists
	case !exists && mode == vfs.WriteOverwrite:
		want = m.missing(p)
	case !exists && !parents:
		want = m.parentOK(p)
	case !exists:
		want = m.clone().mkdirAll(p.Parent(), vfs.DefaultDirMode)
	}
	_, err := ss.s.WriteFile(mc.ctx, p, strings.NewReader(data), vfs.WriteOptions{Mode: mode, CreateParents: parents, Perm: perm})
	expect(t, "write "+string(p), want, err, func() {
		if !exists {
			m.mkdirAll(p.Parent(), vfs.DefaultDirMode)
			if perm == 0 {
				perm = vfs.DefaultFileMode
			}
			m.create(p, inode{kind: vfs.KindFile, content: data, mode: perm})
			return
		}
		m.update(p, func(n *inode) {
			if mode == vfs.WriteAppend {
				data = n.content + data
			}
			n.content = data
			if perm != 0 { // a mode given to a write of an existing file replaces its mode
				n.mode = perm
			}
		})
	})
}

func (mc *machine) handleWrite(t *rapid.T) {
	ss := mc.pick(t)
	p := genExisting(t, ss.model, "path")
	off := rapid.IntRange(0, 8).Draw(t, "off")
	data := rapid.StringMatching(`[A-Z]{1,6}`).Draw(t, "data")
	perm := genMode(t, "perm")
	m := ss.model
	var want vfs.Code
	n, exists := m.get(p)
	switch {
	case exists:
		want = notRegular(n)
	case !exists:
		want = m.parentOK(p)
	}
	h, err := ss.s.OpenFileWith(mc.ctx, p, os.O_RDWR|os.O_CREATE, vfs.CreateOptions{Perm: perm})
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
	if !exists {
		m.create(p, inode{kind: vfs.KindFile, mode: perm})
	}
	m.update(p, func(n *inode) {
		c := []byte(n.content)
		if len(c) < off+len(data) {
			c = append(c, make([]byte, off+len(data)-len(c))...)
		}
		copy(c[off:], data)
		n.content = string(c)
	})
}

func (mc *machine) truncate(t *rapid.T) {
	ss := mc.pick(t)
	p := genExisting(t, ss.model, "path")
	size := rapid.IntRange(0, 10).Draw(t, "size")
	m := ss.model
	var want vfs.Code
	n, exists := m.get(p)
	switch {
	case !exists:
		want = m.missing(p)
	default:
		want = notRegular(n)
	}
	_, err := ss.s.Truncate(mc.ctx, p, int64(size))
	expect(t, "truncate "+string(p), want, err, func() {
		m.update(p, func(n *inode) {
			c := []byte(n.content)
			if len(c) >= size {
				c = c[:size]
			} else {
				c = append(c, make([]byte, size-len(c))...)
			}
			n.content = string(c)
		})
	})
}

func (mc *machine) mkdir(t *rapid.T) {
	ss := mc.pick(t)
	p := genPath(t, "path")
	parents := rapid.Bool().Draw(t, "parents")
	exact := rapid.Bool().Draw(t, "exact")
	perm := genMode(t, "perm")
	mode := perm
	if perm == 0 && !exact {
		mode = vfs.DefaultDirMode
	}
	m := ss.model
	var want vfs.Code
	if n, ok := m.get(p); ok {
		if !(n.kind == vfs.KindDir && parents) {
			want = vfs.CodeExists
		}
	} else if parents {
		want = m.clone().mkdirAll(p, mode)
	} else {
		want = m.parentOK(p)
	}
	_, err := ss.s.Mkdir(mc.ctx, p, vfs.MkdirOptions{Parents: parents, Perm: perm, ExactPerm: exact})
	expect(t, "mkdir "+string(p), want, err, func() { m.mkdirAll(p, mode) })
}

func (mc *machine) symlink(t *rapid.T) {
	ss := mc.pick(t)
	p := genPath(t, "path")
	target := rapid.SampledFrom([]string{"a", "../b", "/c/a"}).Draw(t, "target")
	m := ss.model
	var want vfs.Code
	if _, ok := m.get(p); ok {
		want = vfs.CodeExists
	} else {
		want = m.parentOK(p)
	}
	_, err := ss.s.Symlink(mc.ctx, target, p)
	expect(t, "symlink "+string(p), want, err, func() {
		m.create(p, inode{kind: vfs.KindSymlink, target: target, mode: vfs.SymlinkMode})
	})
}

func (mc *machine) mknod(t *rapid.T) {
	ss := mc.pick(t)
	p := genPath(t, "path")
	kind := rapid.SampledFrom([]vfs.Kind{vfs.KindFifo, vfs.KindSocket, vfs.KindCharDev}).Draw(t, "kind")
	perm := genMode(t, "perm")
	var rdev uint64
	if kind == vfs.KindCharDev {
		rdev = rapid.Uint64Range(0, 1<<20).Draw(t, "rdev")
	}
	m := ss.model
	var want vfs.Code
	if _, ok := m.get(p); ok {
		want = vfs.CodeExists
	} else {
		want = m.parentOK(p)
	}
	_, err := ss.s.Mknod(mc.ctx, p, kind, vfs.CreateOptions{Perm: perm}, rdev)
	expect(t, "mknod "+string(p), want, err, func() {
		m.create(p, inode{kind: kind, mode: perm, rdev: rdev})
	})
}

func (mc *machine) link(t *rapid.T) {
	ss := mc.pick(t)
	from, to := genExisting(t, ss.model, "from"), genPath(t, "to") // to: mostly a new name
	m := ss.model
	var want vfs.Code
	src, ok := m.get(from)
	_, dstOK := m.get(to)
	switch {
	case !ok:
		want = m.missing(from)
	case src.kind == vfs.KindDir:
		want = vfs.CodePermission
	case dstOK:
		want = vfs.CodeExists
	default:
		want = m.parentOK(to)
	}
	_, err := ss.s.Link(mc.ctx, from, to)
	expect(t, "link "+string(from)+" -> "+string(to), want, err, func() { m.paths[to] = m.paths[from] })
}

func (mc *machine) chmod(t *rapid.T) {
	ss := mc.pick(t)
	p := genTarget(t, ss.model, "path")
	mode := genMode(t, "mode")
	m := ss.model
	var want vfs.Code
	n, ok := m.get(p)
	switch {
	case !ok:
		want = m.missing(p)
	case n.kind == vfs.KindSymlink:
		want = vfs.CodeInvalid
	}
	_, err := ss.s.Chmod(mc.ctx, p, mode)
	expect(t, "chmod "+string(p), want, err, func() { m.update(p, func(n *inode) { n.mode = mode }) })
}

func (mc *machine) chown(t *rapid.T) {
	ss := mc.pick(t)
	p := genTarget(t, ss.model, "path")
	uid := rapid.SampledFrom(owners).Draw(t, "uid")
	gid := rapid.SampledFrom(owners).Draw(t, "gid")
	m := ss.model
	var want vfs.Code
	if _, ok := m.get(p); !ok {
		want = m.missing(p)
	}
	_, err := ss.s.Chown(mc.ctx, p, uid, gid)
	expect(t, "chown "+string(p), want, err, func() {
		m.update(p, func(n *inode) {
			if uid != vfs.NoOwner {
				n.uid = uid
			}
			if gid != vfs.NoOwner {
				n.gid = gid
			}
			// The engine's rule (Linux's for an owner change): a
			// non-directory loses setuid, and setgid if group-executable.
			if n.kind != vfs.KindDir && (uid != vfs.NoOwner || gid != vfs.NoOwner) {
				n.mode &^= fs.ModeSetuid
				if n.mode&0o010 != 0 {
					n.mode &^= fs.ModeSetgid
				}
			}
		})
	})
}

func (mc *machine) setXattr(t *rapid.T) {
	ss := mc.pick(t)
	p := genTarget(t, ss.model, "path")
	name := rapid.SampledFrom(xattrNames).Draw(t, "name")
	value := rapid.StringMatching(`[a-z]{0,4}`).Draw(t, "value")
	flags := rapid.SampledFrom([]vfs.XattrFlags{0, vfs.XattrCreate, vfs.XattrReplace, vfs.XattrCreate | vfs.XattrReplace}).Draw(t, "flags")
	m := ss.model
	var want vfs.Code
	n, ok := m.get(p)
	_, set := n.xattrs[name]
	switch {
	case !ok:
		want = m.missing(p)
	case set && flags&vfs.XattrCreate != 0:
		want = vfs.CodeExists
	case !set && flags&vfs.XattrReplace != 0:
		want = vfs.CodeNoData
	}
	_, err := ss.s.SetXattr(mc.ctx, p, name, []byte(value), flags)
	expect(t, "setxattr "+string(p)+" "+name, want, err, func() {
		m.update(p, func(n *inode) {
			x := maps.Clone(n.xattrs)
			if x == nil {
				x = map[string]string{}
			}
			x[name] = value
			n.xattrs = x
		})
	})
}

func (mc *machine) removeXattr(t *rapid.T) {
	ss := mc.pick(t)
	p := genTarget(t, ss.model, "path")
	name := rapid.SampledFrom(xattrNames).Draw(t, "name")
	m := ss.model
	var want vfs.Code
	n, ok := m.get(p)
	_, set := n.xattrs[name]
	switch {
	case !ok:
		want = m.missing(p)
	case !set:
		want = vfs.CodeNoData
	}
	_, err := ss.s.RemoveXattr(mc.ctx, p, name)
	expect(t, "removexattr "+string(p)+" "+name, want, err, func() {
		m.update(p, func(n *inode) {
			x := maps.Clone(n.xattrs)
			delete(x, name)
			n.xattrs = x
		})
	})
}

func (mc *machine) getXattr(t *rapid.T) {
	ss := mc.pick(t)
	p := genTarget(t, ss.model, "path")
	name := rapid.SampledFrom(xattrNames).Draw(t, "name")
	m := ss.model
	var want vfs.Code
	n, ok := m.get(p)
	v, set := n.xattrs[name]
	switch {
	case !ok:
		want = m.missing(p)
	case !set:
		want = vfs.CodeNoData
	}
	got, err := ss.s.GetXattr(mc.ctx, p, name)
	expect(t, "getxattr "+string(p)+" "+name, want, err, func() {
		if string(got) != v {
			t.Fatalf("getxattr %s %s: engine says %q, model says %q", p, name, got, v)
		}
	})
}

func (mc *machine) remove(t *rapid.T) {
	ss := mc.pick(t)
	p := genExisting(t, ss.model, "path")
	recursive := rapid.Bool().Draw(t, "recursive")
	m := ss.model
	var want vfs.Code
	n, ok := m.get(p)
	switch {
	case !ok:
		want = m.missing(p)
	case n.kind == vfs.KindDir && !recursive && m.hasChildren(p):
		want = vfs.CodeNotEmpty
	}
	err := ss.s.Remove(mc.ctx, p, vfs.RemoveOptions{Recursive: recursive})
	expect(t, "remove "+string(p), want, err, func() { m.unlink(p) })
}

func (mc *machine) rename(t *rapid.T) {
	ss := mc.pick(t)
	from, to := genExisting(t, ss.model, "from"), genExisting(t, ss.model, "to")
	noReplace := rapid.Bool().Draw(t, "noreplace")
	m := ss.model
	var want vfs.Code
	src, ok := m.get(from)
	dst, dstOK := m.get(to)
	sameNode := dstOK && m.paths[from] == m.paths[to]
	switch {
	case !ok:
		want = m.missing(from)
	case from != to && to.HasPrefix(from):
		want = vfs.CodeInvalid
	case dstOK && noReplace:
		// renameat2(RENAME_NOREPLACE): any existing destination, even
		// the source itself or another name of its node.
		want = vfs.CodeExists
	case sameNode:
		// rename(2) between two names of one node does nothing.
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
		if sameNode {
			return
		}
		delete(m.paths, to)
		moved := map[vfs.Path]int{}
		for q, id := range m.paths {
			if q.HasPrefix(from) {
				moved[q.Rebase(from, to)] = id
				delete(m.paths, q)
			}
		}
		maps.Copy(m.paths, moved)
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
	mc.compareTree(t, "snapshot "+snap.ID[:8]+" from its manifests", loaded.Tree, ss.model, mc.readBlob)
}

func (mc *machine) addSnap(id string, m *model) {
	if _, ok := mc.snaps[id]; !ok {
		mc.snapIDs = append(mc.snapIDs, id)
	}
	mc.snaps[id] = m.clone()
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
	ss.model = mc.snaps[id].clone()
}

func (mc *machine) fork(t *rapid.T) {
	if len(mc.sessions) >= 4 {
		t.Skip("enough sessions")
	}
	var src snapshot.Source
	var m *model
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
	mc.sessions = append(mc.sessions, &session{s: s, model: m.clone()})
}

func (mc *machine) readBlob(_ vfs.Path, n vfs.Node) ([]byte, error) {
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
		mc.compareTree(t, "snapshot "+id[:8], snap.Tree, mc.snaps[id], mc.readBlob)
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

// compareTree checks tree against m: the same paths, and at each the same
// kind, content or target, mode bits, owner, link count and extended
// attributes; paths share an inode number exactly when they share an inode
// in the model.
func (mc *machine) compareTree(t *rapid.T, what string, tree vfs.Tree, m *model, read func(vfs.Path, vfs.Node) ([]byte, error)) {
	nlink := map[int]uint32{}
	for p, id := range m.paths {
		if m.inodes[id].kind == vfs.KindDir {
			nlink[id] += 2
			if !p.IsRoot() {
				nlink[m.paths[p.Parent()]]++
			}
		} else {
			nlink[id]++
		}
	}
	engineIno := map[int]uint64{} // model inode → engine Ino
	modelIno := map[uint64]int{}  // engine Ino → model inode
	seen := 0
	_ = tree.Walk(vfs.Root, func(p vfs.Path, n vfs.Node) error {
		seen++
		id, ok := m.paths[p]
		if !ok {
			t.Fatalf("%s: %s exists but the model has no such path", what, p)
		}
		want := m.inodes[id]
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
		case vfs.KindCharDev:
			if n.Rdev != want.rdev {
				t.Fatalf("%s: %s is device %d, model says %d", what, p, n.Rdev, want.rdev)
			}
		}
		if n.Mode != want.mode {
			t.Fatalf("%s: %s has mode %04o, model says %04o", what, p, n.UnixMode()&0o7777, (vfs.Node{Mode: want.mode}).UnixMode())
		}
		if n.Uid != want.uid || n.Gid != want.gid {
			t.Fatalf("%s: %s is owned by %d:%d, model says %d:%d", what, p, n.Uid, n.Gid, want.uid, want.gid)
		}
		if n.Nlink != nlink[id] {
			t.Fatalf("%s: %s has %d links, model says %d", what, p, n.Nlink, nlink[id])
		}
		if got := n.Xattrs.Map(); len(got) != len(want.xattrs) || !maps.EqualFunc(got, want.xattrs, func(a []byte, b string) bool { return string(a) == b }) {
			t.Fatalf("%s: %s has xattrs %q, model says %q", what, p, got, want.xattrs)
		}
		if ino, ok := engineIno[id]; ok && ino != n.Ino {
			t.Fatalf("%s: %s has inode %d, but another name of its node has %d", what, p, n.Ino, ino)
		}
		if other, ok := modelIno[n.Ino]; ok && other != id {
			t.Fatalf("%s: %s shares inode %d with a path of another node", what, p, n.Ino)
		}
		engineIno[id], modelIno[n.Ino] = n.Ino, id
		if n.Kind != vfs.KindDir && n.Nlink > 1 {
			var want []vfs.Path
			for q, qid := range m.paths {
				if qid == id {
					want = append(want, q)
				}
			}
			slices.Sort(want)
			if got := tree.LinkNames(n.Ino); !slices.Equal(got, want) {
				t.Fatalf("%s: inode %d of %s has names %v, model says %v", what, n.Ino, p, got, want)
			}
		}
		return nil
	})
	if seen != len(m.paths) {
		var missing []string
		for p := range m.paths {
			if _, ok, _ := tree.Lookup(p); !ok {
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
		mc := &machine{ctx: context.Background(), dir: dir, store: snapshot.NewMemory(), snaps: map[string]*model{}}
		mc.repo, err = snapshot.OpenRepo(mc.ctx, mc.store, filepath.Join(dir, "sessions"), snapshot.RepoOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { mc.repo.Close() }()
		s, err := mc.repo.NewSession(mc.ctx, snapshot.SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mc.sessions = []*session{{s: s, model: newModel(s.DefaultOwner())}}
		t.Repeat(map[string]func(*rapid.T){
			"write":       mc.writeFile,
			"handle":      mc.handleWrite,
			"truncate":    mc.truncate,
			"mkdir":       mc.mkdir,
			"symlink":     mc.symlink,
			"mknod":       mc.mknod,
			"link":        mc.link,
			"chmod":       mc.chmod,
			"chown":       mc.chown,
			"setxattr":    mc.setXattr,
			"removexattr": mc.removeXattr,
			"getxattr":    mc.getXattr,
			"remove":      mc.remove,
			"rename":      mc.rename,
			"snapshot":    mc.snapshot,
			"restore":     mc.restore,
			"fork":        mc.fork,
			"gc":          mc.gc,
			"reopen":      mc.reopen,
			"":            mc.check,
		})
	})
}
