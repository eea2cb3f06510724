package vfs

import (
	"io/fs"
	"testing"

	"github.com/stretchr/testify/require"
)

// build folds events over an empty tree, failing the test on any error.
func build(t *testing.T, events ...Event) Tree {
	t.Helper()
	tr := EmptyTree(0)
	for i := range events {
		e := events[i]
		if e.Time == 0 {
			e.Time = int64(100 + i)
		}
		var err error
		tr, err = Reduce(tr, &e)
		require.NoError(t, err, "event %d (%s %s)", i, e.Op, e.Path)
	}
	return tr
}

func blob(s string) Hash { return HashOf([]byte(s)) }

func ver(v uint64) *uint64 { return &v }

func TestReduceErrors(t *testing.T) {
	base := []Event{
		{Op: OpMkdir, Path: "d"},
		{Op: OpWrite, Path: "d/f", Blob: blob("x"), Size: 1},
		{Op: OpWrite, Path: "top", Blob: blob("y"), Size: 1},
		{Op: OpSymlink, Path: "ln", Target: "d/f"},
		{Op: OpMkdir, Path: "empty"},
	}
	tests := []struct {
		name string
		e    Event
		code Code
	}{
		{"write root", Event{Op: OpWrite, Path: Root}, CodeIsDir},
		{"write over dir", Event{Op: OpWrite, Path: "d"}, CodeIsDir},
		{"write through symlink", Event{Op: OpWrite, Path: "ln"}, CodeInvalid},
		{"write missing parent", Event{Op: OpWrite, Path: "nope/f"}, CodeNotFound},
		{"write under file", Event{Op: OpWrite, Path: "top/f"}, CodeNotDir},
		{"write deep under file", Event{Op: OpWrite, Path: "top/a/b"}, CodeNotDir},
		{"write parents under file", Event{Op: OpWrite, Path: "top/a/b", Parents: true}, CodeNotDir},
		{"create_new existing", Event{Op: OpWrite, Path: "top", Exclusive: true}, CodeExists},
		{"overwrite missing", Event{Op: OpWrite, Path: "new", MustExist: true}, CodeNotFound},
		{"version mismatch", Event{Op: OpWrite, Path: "top", IfVersion: ver(7)}, CodeConflict},
		{"version on missing", Event{Op: OpWrite, Path: "new", IfVersion: ver(1)}, CodeConflict},
		{"mkdir existing dir", Event{Op: OpMkdir, Path: "d"}, CodeExists},
		{"mkdir over file", Event{Op: OpMkdir, Path: "top", Parents: true}, CodeExists},
		{"mkdir missing parent", Event{Op: OpMkdir, Path: "x/y"}, CodeNotFound},
		{"symlink existing", Event{Op: OpSymlink, Path: "top", Target: "t"}, CodeExists},
		{"symlink empty target", Event{Op: OpSymlink, Path: "s2"}, CodeInvalid},
		{"remove root", Event{Op: OpRemove, Path: Root, Recursive: true}, CodeInvalid},
		{"remove missing", Event{Op: OpRemove, Path: "nope"}, CodeNotFound},
		{"remove non-empty dir", Event{Op: OpRemove, Path: "d"}, CodeNotEmpty},
		{"unlink dir", Event{Op: OpRemove, Path: "empty", WantKind: KindFile}, CodeIsDir},
		{"rmdir file", Event{Op: OpRemove, Path: "top", WantKind: KindDir}, CodeNotDir},
		{"rename missing", Event{Op: OpRename, Path: "nope", To: "x"}, CodeNotFound},
		{"rename root", Event{Op: OpRename, Path: Root, To: "x"}, CodeInvalid},
		{"rename onto root", Event{Op: OpRename, Path: "top", To: Root}, CodeInvalid},
		{"rename into itself", Event{Op: OpRename, Path: "d", To: "d/sub"}, CodeInvalid},
		{"rename noreplace", Event{Op: OpRename, Path: "top", To: "d/f", NoReplace: true}, CodeExists},
		{"rename dir over file", Event{Op: OpRename, Path: "empty", To: "top"}, CodeNotDir},
		{"rename file over dir", Event{Op: OpRename, Path: "top", To: "empty"}, CodeIsDir},
		{"rename dir over non-empty", Event{Op: OpRename, Path: "empty", To: "d"}, CodeNotEmpty},
		{"rename missing dest parent", Event{Op: OpRename, Path: "top", To: "x/y"}, CodeNotFound},
		{"exchange with missing", Event{Op: OpRename, Path: "top", To: "nope", Exchange: true}, CodeNotFound},
		{"exchange with ancestor", Event{Op: OpRename, Path: "d/f", To: "d", Exchange: true}, CodeInvalid},
		{"chmod missing", Event{Op: OpChmod, Path: "nope", Mode: 0o600}, CodeNotFound},
		{"chmod symlink", Event{Op: OpChmod, Path: "ln", Mode: 0o600}, CodeInvalid},
		{"commit dir", Event{Op: OpCommit, Path: "d", Upper: 1}, CodeInvalid},
		{"commit wrong inode", Event{Op: OpCommit, Path: "top", Ino: 999, Upper: 1}, CodeStale},
		{"copyup without upper", Event{Op: OpCopyUp, Path: "top"}, CodeInvalid},
		{"unknown op", Event{Op: "bogus", Path: "top"}, CodeInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := build(t, base...)
			enc := before.Encode()
			_, err := Reduce(before, &tt.e)
			require.Error(t, err)
			require.Equal(t, tt.code, CodeOf(err), "error: %v", err)
			require.Equal(t, enc, before.Encode(), "a failed event must not touch the tree")
		})
	}
}

func TestReduceWriteVersionsAndTimes(t *testing.T) {
	tr := build(t,
		Event{Op: OpWrite, Path: "a/b/f", Parents: true, Blob: blob("one"), Size: 3, Time: 10},
		Event{Op: OpWrite, Path: "a/b/f", Blob: blob("two!"), Size: 4, Time: 20, IfVersion: ver(1)},
	)
	n, ok := tr.get("a/b/f")
	require.True(t, ok)
	require.Equal(t, uint64(2), n.Version)
	require.Equal(t, int64(10), n.Created)
	require.Equal(t, int64(20), n.Updated)
	require.Equal(t, blob("two!"), n.Blob)
	require.Equal(t, int64(4), n.Size)
	require.Equal(t, DefaultFileMode, n.Mode)
	require.Equal(t, int64(1), tr.Files())
	require.Equal(t, int64(4), tr.Bytes())

	d, _ := tr.get("a/b")
	require.True(t, d.IsDir())
	require.Equal(t, DefaultDirMode, d.Mode)
	require.Equal(t, uint64(2), d.Version, "created, then its entries changed once")

	// Inodes are unique and deterministic.
	root, _ := tr.get(Root)
	a, _ := tr.get("a")
	require.Equal(t, []uint64{1, 2, 3, 4}, []uint64{root.Ino, a.Ino, d.Ino, n.Ino})
	require.Equal(t, uint64(4), tr.MaxIno())
}

func TestReduceRenameMovesSubtree(t *testing.T) {
	tr := build(t,
		Event{Op: OpWrite, Path: "src/pkg/a.go", Parents: true, Blob: blob("a"), Size: 1},
		Event{Op: OpWrite, Path: "src/pkg/sub/b.go", Parents: true, Blob: blob("b"), Size: 1},
		Event{Op: OpWrite, Path: "src/pkg-other", Blob: blob("c"), Size: 1},
		Event{Op: OpMkdir, Path: "dst"},
	)
	before, _ := tr.get("src/pkg/sub/b.go")
	tr2, err := Reduce(tr, &Event{Op: OpRename, Path: "src/pkg", To: "dst/moved", Time: 500})
	require.NoError(t, err)
	var paths []Path
	_ = tr2.Walk(Root, func(p Path, _ Node) error { paths = append(paths, p); return nil })
	require.Equal(t, []Path{Root, "dst", "dst/moved", "dst/moved/a.go", "dst/moved/sub", "dst/moved/sub/b.go", "src", "src/pkg-other"}, paths)
	after, _ := tr2.get("dst/moved/sub/b.go")
	require.Equal(t, before, after, "a moved node keeps its identity, version and times")
	// The old tree is untouched.
	_, ok := tr.get("src/pkg/a.go")
	require.True(t, ok)
	require.Equal(t, tr.Files(), tr2.Files())
}

func TestReduceRenameReplaces(t *testing.T) {
	tr := build(t,
		Event{Op: OpWrite, Path: "a", Blob: blob("a"), Size: 1},
		Event{Op: OpWrite, Path: "b", Blob: blob("bb"), Size: 2},
		Event{Op: OpMkdir, Path: "d1"},
		Event{Op: OpWrite, Path: "d1/x", Blob: blob("x"), Size: 1},
		Event{Op: OpMkdir, Path: "d2"},
	)
	tr, err := Reduce(tr, &Event{Op: OpRename, Path: "a", To: "b"})
	require.NoError(t, err)
	n, _ := tr.get("b")
	require.Equal(t, blob("a"), n.Blob)
	require.Equal(t, int64(2), tr.Files())
	require.Equal(t, int64(2), tr.Bytes())
	tr, err = Reduce(tr, &Event{Op: OpRename, Path: "d1", To: "d2"})
	require.NoError(t, err, "a directory replaces an empty directory")
	_, ok := tr.get("d2/x")
	require.True(t, ok)
	same, err := Reduce(tr, &Event{Op: OpRename, Path: "b", To: "b"})
	require.NoError(t, err)
	require.Equal(t, tr.Encode(), same.Encode(), "renaming onto itself changes nothing")
}

func TestReduceExchange(t *testing.T) {
	tr := build(t,
		Event{Op: OpWrite, Path: "d/x", Parents: true, Blob: blob("x"), Size: 1},
		Event{Op: OpWrite, Path: "f", Blob: blob("f"), Size: 1},
	)
	dx, _ := tr.get("d/x")
	tr, err := Reduce(tr, &Event{Op: OpRename, Path: "d", To: "f", Exchange: true})
	require.NoError(t, err)
	fx, _ := tr.get("f/x")
	require.Equal(t, dx, fx)
	dn, _ := tr.get("d")
	require.True(t, dn.IsFile())
}

func TestReduceRemove(t *testing.T) {
	tr := build(t,
		Event{Op: OpWrite, Path: "d/a/b", Parents: true, Blob: blob("b"), Size: 1},
		Event{Op: OpWrite, Path: "d2", Blob: blob("d2"), Size: 2},
	)
	tr, err := Reduce(tr, &Event{Op: OpRemove, Path: "d", Recursive: true})
	require.NoError(t, err)
	require.Equal(t, 2, tr.Len())
	require.Equal(t, int64(1), tr.Files())
	require.Equal(t, int64(2), tr.Bytes())
}

func TestReduceUpperAndSeal(t *testing.T) {
	tr := build(t, Event{Op: OpWrite, Path: "f", Blob: blob("abc"), Size: 3})
	n, _ := tr.get("f")
	tr = build2(t, tr,
		Event{Op: OpCopyUp, Path: "f", Ino: n.Ino, Upper: 7, Time: 1},
	)
	up, _ := tr.get("f")
	require.Equal(t, uint64(7), up.Upper)
	require.True(t, up.Blob.IsZero())
	require.Equal(t, n.Version, up.Version, "copy-up is not a change")
	tr = build2(t, tr, Event{Op: OpCommit, Path: "f", Ino: n.Ino, Upper: 7, Size: 10, Time: 2})
	c, _ := tr.get("f")
	require.Equal(t, n.Version+1, c.Version)
	require.Equal(t, int64(10), c.Size)
	require.Equal(t, int64(10), tr.Bytes())

	seal := Event{Op: OpSeal, Seals: []Seal{
		{Path: "f", Ino: n.Ino, Upper: 7, Blob: blob("sealed"), Encoding: EncodingUTF8},
		{Path: "f", Ino: n.Ino, Upper: 99, Blob: blob("stale")}, // skipped: upper changed
		{Path: "gone", Ino: 5, Upper: 8, Blob: blob("gone")},    // skipped: not there
	}}
	tr = build2(t, tr, seal)
	s, _ := tr.get("f")
	require.Equal(t, blob("sealed"), s.Blob)
	require.Zero(t, s.Upper)
	require.Equal(t, c.Version, s.Version, "sealing is not a change")
}

func build2(t *testing.T, tr Tree, events ...Event) Tree {
	t.Helper()
	for i := range events {
		var err error
		tr, err = Reduce(tr, &events[i])
		require.NoError(t, err)
	}
	return tr
}

func TestTreeChildrenAndWalk(t *testing.T) {
	tr := build(t,
		Event{Op: OpWrite, Path: "a/x", Parents: true, Blob: blob("1"), Size: 1},
		Event{Op: OpWrite, Path: "a/y/z", Parents: true, Blob: blob("2"), Size: 1},
		Event{Op: OpWrite, Path: "a-b", Blob: blob("3"), Size: 1},
		Event{Op: OpWrite, Path: "a.txt", Blob: blob("4"), Size: 1},
	)
	names := func(dir Path) []string {
		var out []string
		tr.children(dir, func(name string, _ Node) bool { out = append(out, name); return true })
		return out
	}
	require.Equal(t, []string{"a", "a-b", "a.txt"}, names(Root))
	require.Equal(t, []string{"x", "y"}, names("a"))
	require.Empty(t, names("a/x"), "a file has no children")
	require.Empty(t, names("missing"))
	require.True(t, tr.hasChildren("a/y"))

	var walked []Path
	require.NoError(t, tr.Walk(Root, func(p Path, n Node) error {
		walked = append(walked, p)
		if p == "a/y" {
			return SkipDir
		}
		return nil
	}))
	require.Equal(t, []Path{Root, "a", "a/x", "a/y", "a-b", "a.txt"}, walked)
}

func TestCodecRoundTrip(t *testing.T) {
	xa, err := XattrsOf(map[string][]byte{"user.a": []byte("1"), "security.selinux": nil})
	require.NoError(t, err)
	nodes := []Node{
		{Kind: KindFile, Mode: 0o644 | fs.ModeSetuid | fs.ModeSticky, Uid: 1000, Gid: 100, Nlink: 3, Size: 12, Version: 3, Ino: 9,
			Btime: 1_000_001, Mtime: -2_000_000, Ctime: 5, Atime: 7, Created: 1, Updated: -2, Blob: blob("x"), Encoding: EncodingUTF8, Xattrs: xa},
		{Kind: KindDir, Mode: 0o755 | fs.ModeSetgid, Version: 1, Ino: 1, Uid: NoOwner, Gid: NoOwner},
		{Kind: KindSymlink, Mode: 0o777, Nlink: 1, Size: 4, Target: "../x", Ino: 3},
		{Kind: KindFile, Nlink: 1, Upper: 77, Size: 1 << 40, Encoding: EncodingBinary},
		{Kind: KindCharDev, Nlink: 1, Mode: 0o600, Rdev: 0x0103},
		{Kind: KindFifo, Nlink: 2, Mode: 0},
		{Kind: KindSocket, Nlink: 1, Mode: 0o777},
	}
	var b []byte
	for i, n := range nodes {
		b = AppendNode(b, string(rune('a'+i)), n)
	}
	for i, want := range nodes {
		name, got, rest, err := DecodeNode(b)
		require.NoError(t, err)
		require.Equal(t, string(rune('a'+i)), name)
		require.Equal(t, want, got)
		b = rest
	}
	require.Empty(t, b)
	_, _, _, err = DecodeNode([]byte{5, 'a'})
	require.ErrorIs(t, err, ErrBadEncoding)
}

// TestCodecV1 reads nodes of stores written before owners, links and
// nanosecond times: owner not recorded, times from Created and Updated.
func TestCodecV1(t *testing.T) {
	old := Node{Kind: KindFile, Mode: 0o640, Size: 12, Version: 3, Ino: 9, Created: 1, Updated: 2, Blob: blob("x"), Encoding: EncodingUTF8}
	b := appendNodeV1(nil, "a", old)
	name, got, rest, err := DecodeNodeV1(b)
	require.NoError(t, err)
	require.Empty(t, rest)
	require.Equal(t, "a", name)
	want := old
	want.Uid, want.Gid, want.Nlink = NoOwner, NoOwner, 1
	want.Btime, want.Mtime, want.Ctime, want.Atime = 1e6, 2e6, 2e6, 2e6
	require.Equal(t, want, got)
	require.Equal(t, b, appendNodeV1(nil, name, got), "format 1 round-trips")
	// Format 1 never had special kinds or bits.
	_, _, _, err = DecodeNodeV1(appendNodeV1(nil, "f", Node{Kind: KindFifo}))
	require.ErrorIs(t, err, ErrBadEncoding)
}
