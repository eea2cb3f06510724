//go:build linux && !vfsd_osroot

package hostmount

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: owners, devices and trusted.* attributes")
	}
}

// posixHost builds, under the env's root at rel, a host folder with what
// issue 12 lists: several owners, a setuid file, a setgid and a sticky
// directory, user.* and trusted.* attributes, a fifo, a socket, a device,
// a symlink with its own owner and a hard-linked pair.
func posixHost(t *testing.T, e *env, rel string) string {
	dir := filepath.Join(e.root, rel)
	j := func(name string) string { return filepath.Join(dir, name) }
	e.write(rel+"/root-owned", "r")
	e.write(rel+"/user-owned", "u")
	require.NoError(t, os.Lchown(j("user-owned"), 1000, 1001))
	e.write(rel+"/suid", "s")
	require.NoError(t, os.Chmod(j("suid"), 0o4755|os.ModeSetuid))
	require.NoError(t, unix.Chmod(j("suid"), 0o4755))
	require.NoError(t, os.Mkdir(j("shared"), 0o755))
	require.NoError(t, unix.Chmod(j("shared"), 0o2775))
	require.NoError(t, os.Lchown(j("shared"), 0, 50))
	require.NoError(t, os.Mkdir(j("tmp"), 0o755))
	require.NoError(t, unix.Chmod(j("tmp"), 0o1777))
	e.write(rel+"/tagged", "t")
	require.NoError(t, unix.Lsetxattr(j("tagged"), "user.k", []byte("v"), 0))
	require.NoError(t, unix.Lsetxattr(j("tagged"), "trusted.t", []byte("root only"), 0))
	require.NoError(t, unix.Mkfifo(j("fifo"), 0o640))
	require.NoError(t, os.Lchown(j("fifo"), 5, 6))
	require.NoError(t, unix.Lsetxattr(j("fifo"), "trusted.f", []byte("x"), 0))
	require.NoError(t, unix.Mknod(j("null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))))
	require.NoError(t, os.Symlink("tagged", j("link")))
	require.NoError(t, os.Lchown(j("link"), 7, 8))
	e.write(rel+"/a", "linked")
	require.NoError(t, os.MkdirAll(j("sub"), 0o755))
	require.NoError(t, os.Link(j("a"), j("sub/b")))
	// Times the import keeps to the nanosecond.
	old := time.Date(2020, 1, 2, 3, 4, 5, 678901234, time.UTC)
	require.NoError(t, unix.UtimesNanoAt(unix.AT_FDCWD, j("root-owned"),
		[]unix.Timespec{unix.NsecToTimespec(old.Add(time.Hour).UnixNano()), unix.NsecToTimespec(old.UnixNano())}, 0))
	return dir
}

// hostState is what lstat and llistxattr say of every entry beneath dir,
// in the session's terms.
type hostState struct {
	kind         vfs.Kind
	mode         uint32 // st_mode: type and 12 permission bits
	uid, gid     uint32
	mtime, atime int64
	rdev         uint64
	size         int64
	ino          uint64
	xattrs       map[string]string
}

func hostStates(t *testing.T, dir string) map[string]hostState {
	out := map[string]hostState{}
	// WalkDir, not Walk: it stats a directory before reading it, which
	// moves its atime under relatime.
	require.NoError(t, filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		require.NoError(t, err)
		rel, _ := filepath.Rel(dir, path)
		var st unix.Stat_t
		require.NoError(t, unix.Lstat(path, &st))
		hs := hostState{kind: vfs.KindFromUnix(st.Mode), mode: st.Mode, uid: st.Uid, gid: st.Gid, mtime: st.Mtim.Nano(), atime: st.Atim.Nano(),
			ino: st.Ino, xattrs: map[string]string{}}
		switch hs.kind {
		case vfs.KindCharDev, vfs.KindBlockDev:
			hs.rdev = st.Rdev
		case vfs.KindFile, vfs.KindSymlink:
			hs.size = st.Size
		}
		buf := make([]byte, 4096)
		n, err := unix.Llistxattr(path, buf)
		if err == nil {
			for _, name := range strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00") {
				if name == "" || !xattrNamespace(name, true) {
					continue
				}
				v := make([]byte, 4096)
				m, err := unix.Lgetxattr(path, name, v)
				require.NoError(t, err)
				hs.xattrs[name] = string(v[:m])
			}
		}
		if rel == "." {
			rel = ""
		}
		if hs.kind == vfs.KindDir {
			hs.atime = 0 // reading a directory (the test, the import) moves it under relatime
		}
		out[rel] = hs
		return nil
	}))
	return out
}

func nodeState(n vfs.Node) hostState {
	hs := hostState{kind: n.Kind, mode: n.UnixMode(), uid: n.Uid, gid: n.Gid, mtime: n.Mtime, atime: n.Atime,
		rdev: n.Rdev, xattrs: map[string]string{}}
	if n.Kind == vfs.KindFile || n.Kind == vfs.KindSymlink {
		hs.size = n.Size
	}
	if n.IsDir() {
		hs.atime = 0
	}
	for k, v := range n.Xattrs.Map() {
		hs.xattrs[k] = string(v)
	}
	return hs
}

// requireSameAsHost compares every node beneath mount in tree with the
// host entry it came from (inode numbers aside).
func requireSameAsHost(t *testing.T, want map[string]hostState, tree vfs.Tree, mount vfs.Path) {
	t.Helper()
	got := map[string]hostState{}
	require.NoError(t, tree.Walk(mount, func(p vfs.Path, n vfs.Node) error {
		rel := strings.TrimPrefix(strings.TrimPrefix(string(p), string(mount)), "/")
		got[rel] = nodeState(n)
		return nil
	}))
	for rel := range want {
		w := want[rel]
		w.ino = 0
		want[rel] = w
	}
	require.Equal(t, want, got)
}

// TestImportKeepsPOSIXMetadata: an import as root keeps the host's owners,
// all twelve mode bits, times, attributes (user.* and trusted.*), fifos,
// sockets, devices and hard links (one node, two names).
func TestImportKeepsPOSIXMetadata(t *testing.T) {
	needRoot(t)
	e := newEnv(t)
	dir := posixHost(t, e, "p")
	want := hostStates(t, dir)
	snap, rep, err := e.im.Import(ctx, e.repo, []Mount{{HostPath: dir, MountPath: "/w"}}, nil)
	require.NoError(t, err)
	require.Empty(t, rep.Skipped)
	require.Equal(t, int64(2), rep.Special)
	require.Equal(t, int64(1), rep.Links)
	requireSameAsHost(t, want, snap.Tree, "w")

	a, _, _ := snap.Tree.Lookup("w/a")
	b, _, _ := snap.Tree.Lookup("w/sub/b")
	require.Equal(t, a.Ino, b.Ino)
	require.Equal(t, uint32(2), a.Nlink)
	require.Equal(t, []vfs.Path{"w/a", "w/sub/b"}, snap.Tree.LinkNames(a.Ino))

	// A re-import (through the cache) sees a chmod, chown and xattr change.
	require.NoError(t, unix.Chmod(filepath.Join(dir, "root-owned"), 0o600))
	require.NoError(t, os.Lchown(filepath.Join(dir, "tagged"), 3, 4))
	require.NoError(t, unix.Lsetxattr(filepath.Join(dir, "tagged"), "user.k", []byte("w"), 0))
	snap2, _, err := e.im.Import(ctx, e.repo, []Mount{{HostPath: dir, MountPath: "/w"}}, nil)
	require.NoError(t, err)
	ro, _, _ := snap2.Tree.Lookup("w/root-owned")
	require.Equal(t, uint32(0o100600), ro.UnixMode())
	tg, _, _ := snap2.Tree.Lookup("w/tagged")
	require.Equal(t, [2]uint32{3, 4}, [2]uint32{tg.Uid, tg.Gid})
	v, _ := tg.Xattrs.Get("user.k")
	require.Equal(t, "w", string(v))
}

// TestImportNotRoot: a daemon that is not root leaves devices out (with a
// reason) and imports only user.* attributes; owners are still the
// host's.
func TestImportNotRootRules(t *testing.T) {
	needRoot(t)
	e := newEnv(t)
	dir := posixHost(t, e, "p")
	isRoot = false
	defer func() { isRoot = true }()
	snap, rep, err := e.im.Import(ctx, e.repo, []Mount{{HostPath: dir, MountPath: "/"}}, nil)
	require.NoError(t, err)
	require.Equal(t, map[string]string{filepath.Join(dir, "null"): SkipDevice}, skipsOf(rep))
	tg, _, _ := snap.Tree.Lookup("tagged")
	require.Equal(t, []string{"user.k"}, tg.Xattrs.Names())
	uo, _, _ := snap.Tree.Lookup("user-owned")
	require.Equal(t, [2]uint32{1000, 1001}, [2]uint32{uo.Uid, uo.Gid})
}

// TestReadXattrsBounds: attributes over the engine's bounds are left out
// by name, the rest kept; other namespaces are ignored.
func TestReadXattrsBounds(t *testing.T) {
	vals := map[string][]byte{
		"user.small":     []byte("s"),
		"user.huge":      make([]byte, vfs.MaxXattrValue+1),
		"system.acl":     []byte("a"),
		"trusted.t":      []byte("t"),
		"security.label": []byte("l"),
	}
	for i := range 5 {
		vals["user.big"+string(rune('0'+i))] = make([]byte, vfs.MaxXattrValue)
	}
	var names []string
	for k := range vals {
		names = append(names, k)
	}
	slices.Sort(names)
	list := strings.Join(names, "\x00") + "\x00"
	x := xattrIO{
		list: func(buf []byte) (int, error) {
			if len(buf) == 0 {
				return len(list), nil
			}
			if len(buf) < len(list) {
				return len(list), unix.ERANGE
			}
			return copy(buf, list), nil
		},
		get: func(name string, buf []byte) (int, error) {
			v := vals[name]
			if len(buf) == 0 {
				return len(v), nil
			}
			if len(buf) < len(v) {
				return len(v), unix.ERANGE
			}
			return copy(buf, v), nil
		},
	}
	xs, over := readXattrs(x, false)
	require.Equal(t, []string{"user.big0", "user.big1", "user.big2", "user.small"}, xs.Names())
	require.Equal(t, []string{"user.big3", "user.big4", "user.huge"}, over)
	xs, _ = readXattrs(x, true)
	require.Contains(t, xs.Names(), "trusted.t")
	require.Contains(t, xs.Names(), "security.label")
	require.NotContains(t, xs.Names(), "system.acl")
}

// TestMaterializeRoundTrip: what an import kept survives snapshot → fork
// → materialize: the materialized tree has the host's owners, modes,
// times, attributes, special files and hard links.
func TestMaterializeRoundTrip(t *testing.T) {
	needRoot(t)
	e := newEnv(t)
	dir := posixHost(t, e, "p")
	want := hostStates(t, dir)
	snap, _, err := e.im.Import(ctx, e.repo, []Mount{{HostPath: dir, MountPath: "/"}}, nil)
	require.NoError(t, err)
	f, err := e.repo.Fork(ctx, snapshot.Source{Snapshot: snap.ID}, snapshot.SessionOptions{ID: "fork"})
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "out")
	rep, err := e.repo.Materialize(ctx, snapshot.Source{Session: f}, out)
	require.NoError(t, err)
	require.Empty(t, rep.Skipped)
	require.Equal(t, int64(1), rep.Links)
	sub, _, _ := f.Tree().Lookup("sub")
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(filepath.Join(out, "sub"), &st))
	require.Equal(t, sub.Atime, st.Atim.Nano(), "a directory's atime, before anything reads it")
	got := hostStates(t, out)
	require.Equal(t, got["a"].ino, got["sub/b"].ino, "hard links stay links")
	for _, m := range []map[string]hostState{want, got} {
		for rel, hs := range m {
			hs.ino = 0
			m[rel] = hs
		}
	}
	require.Equal(t, want, got)
}
