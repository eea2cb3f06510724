//go:build linux

package mount_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/mount"
	"github.com/vfsd/vfsd/tools/toolstest"
	"github.com/vfsd/vfsd/vfs"
)

// requireRoot skips unless the test runs as root (other users, chown,
// mknod of devices).
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: it acts as other users, chowns or makes devices")
	}
}

// sharedMount mounts a session where other users may reach it: at a
// directory whose parents they can enter, with allow_other.
func sharedMount(t *testing.T, files map[string]string) (*toolstest.Env, *mount.Mount) {
	t.Helper()
	requireFUSE(t)
	requireRoot(t)
	e := toolstest.New(t, nil, files)
	parent, err := os.MkdirTemp("", "vfsd-posix-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(parent) })
	require.NoError(t, os.Chmod(parent, 0o755))
	dir := filepath.Join(parent, "m")
	require.NoError(t, os.Mkdir(dir, 0o755))
	m, err := mount.New(e.S, dir, mount.Options{AllowOther: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.Unmount()) })
	return e, m
}

// runAs runs a program (from outside the mount, in /) as uid:gid.
func runAs(t *testing.T, uid, gid uint32, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func lstat(t *testing.T, p string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(p, &st))
	return st
}

func sessionNode(t *testing.T, e *toolstest.Env, p string) vfs.Node {
	t.Helper()
	n, err := e.S.Stat(context.Background(), vfs.MustPath(p))
	require.NoError(t, err)
	return n
}

func tsNs(ts unix.Timespec) int64 { return ts.Sec*1e9 + ts.Nsec }

// TestPosixOwnersAndModes: chown, chgrp, the twelve mode bits, mode 0,
// ctime moving forward, and a tool's chown showing in the mount.
func TestPosixOwnersAndModes(t *testing.T) {
	requireRoot(t)
	e, m := mounted(t, map[string]string{"f": "data", "d/": ""}, mount.Options{})
	dir := m.Dir()
	f := filepath.Join(dir, "f")

	t.Run("chown and back", func(t *testing.T) {
		before := lstat(t, f)
		require.NoError(t, os.Lchown(f, 1000, 1001))
		st := lstat(t, f)
		require.Equal(t, [2]uint32{1000, 1001}, [2]uint32{st.Uid, st.Gid})
		require.Greater(t, tsNs(st.Ctim), tsNs(before.Ctim), "chown moves ctime")
		require.Equal(t, tsNs(before.Mtim), tsNs(st.Mtim), "chown leaves mtime")
		n := sessionNode(t, e, "f")
		require.Equal(t, [2]uint32{1000, 1001}, [2]uint32{n.Uid, n.Gid})
		require.NoError(t, os.Lchown(f, 0, 0))
		st = lstat(t, f)
		require.Equal(t, [2]uint32{0, 0}, [2]uint32{st.Uid, st.Gid})
	})
	t.Run("chgrp", func(t *testing.T) {
		require.NoError(t, os.Lchown(f, -1, 50))
		st := lstat(t, f)
		require.Equal(t, [2]uint32{0, 50}, [2]uint32{st.Uid, st.Gid})
	})
	modes := []struct {
		name string
		mode uint32
	}{
		{"setuid", 0o4755}, {"setgid", 0o2755}, {"sticky", 0o1755}, {"all", 0o7777}, {"none", 0}, {"private", 0o600},
	}
	for _, tc := range modes {
		t.Run("chmod "+tc.name, func(t *testing.T) {
			require.NoError(t, unix.Chmod(f, tc.mode))
			require.Equal(t, tc.mode, lstat(t, f).Mode&0o7777)
			require.Equal(t, tc.mode, sessionNode(t, e, "f").UnixMode()&0o7777)
			require.NoError(t, unix.Chmod(filepath.Join(dir, "d"), tc.mode))
			st := lstat(t, filepath.Join(dir, "d"))
			require.Equal(t, tc.mode|unix.S_IFDIR, st.Mode)
		})
	}
	t.Run("chown drops setuid", func(t *testing.T) {
		require.NoError(t, unix.Chmod(f, 0o6755))
		require.NoError(t, os.Lchown(f, 1000, -1))
		require.Equal(t, uint32(0o755), lstat(t, f).Mode&0o7777, "setuid and (group-executable) setgid go, as on Linux")
		require.NoError(t, os.Lchown(f, 0, 0))
	})
	t.Run("mode 0", func(t *testing.T) {
		g, err := os.OpenFile(filepath.Join(dir, "zero"), os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0)
		require.NoError(t, err)
		require.NoError(t, g.Close())
		require.Equal(t, uint32(unix.S_IFREG), lstat(t, filepath.Join(dir, "zero")).Mode)
		require.NoError(t, unix.Mkdir(filepath.Join(dir, "zerodir"), 0))
		require.Equal(t, uint32(unix.S_IFDIR), lstat(t, filepath.Join(dir, "zerodir")).Mode)
		require.Equal(t, uint32(0), sessionNode(t, e, "zerodir").UnixMode()&0o7777)
	})
	t.Run("a tool's chmod and chown show", func(t *testing.T) {
		st := lstat(t, f) // cached by the kernel now
		_, err := e.S.Chown(context.Background(), vfs.MustPath("f"), 4242, 4343)
		require.NoError(t, err)
		_, err = e.S.Chmod(context.Background(), vfs.MustPath("f"), vfs.ModeFromUnix(0o2711))
		require.NoError(t, err)
		after := lstat(t, f)
		require.Equal(t, [3]uint32{4242, 4343, 0o2711}, [3]uint32{after.Uid, after.Gid, after.Mode & 0o7777})
		require.Greater(t, tsNs(after.Ctim), tsNs(st.Ctim))
	})
}

// TestPosixTimes: utimensat with UTIME_OMIT and UTIME_NOW, to the
// nanosecond; ctime moves to now and never back.
func TestPosixTimes(t *testing.T) {
	e, m := mounted(t, map[string]string{"f": "data"}, mount.Options{})
	f := filepath.Join(m.Dir(), "f")
	st0 := lstat(t, f)

	past := unix.Timespec{Sec: 1_000_000_000, Nsec: 123_456_789}
	older := unix.Timespec{Sec: 900_000_000, Nsec: 987_654_321}
	omit := unix.Timespec{Nsec: unix.UTIME_OMIT}
	now := unix.Timespec{Nsec: unix.UTIME_NOW}

	require.NoError(t, unix.UtimesNanoAt(unix.AT_FDCWD, f, []unix.Timespec{past, older}, unix.AT_SYMLINK_NOFOLLOW))
	st1 := lstat(t, f)
	require.Equal(t, past, st1.Atim)
	require.Equal(t, older, st1.Mtim)
	require.Greater(t, tsNs(st1.Ctim), tsNs(st0.Ctim), "ctime moves forward even when the times go back")

	require.NoError(t, unix.UtimesNanoAt(unix.AT_FDCWD, f, []unix.Timespec{omit, past}, 0))
	st2 := lstat(t, f)
	require.Equal(t, past, st2.Atim, "UTIME_OMIT leaves atime")
	require.Equal(t, past, st2.Mtim)

	require.NoError(t, unix.UtimesNanoAt(unix.AT_FDCWD, f, []unix.Timespec{now, omit}, 0))
	st3 := lstat(t, f)
	require.Equal(t, past, st3.Mtim, "UTIME_OMIT leaves mtime")
	require.Equal(t, st3.Ctim, st3.Atim, "UTIME_NOW sets atime to the change's time")
	require.Greater(t, tsNs(st3.Ctim), tsNs(st2.Ctim))

	n := sessionNode(t, e, "f")
	require.Equal(t, tsNs(past), n.Mtime)
	require.Equal(t, tsNs(st3.Ctim), n.Ctime)
}

// TestPosixSpecialFiles: a fifo used by two processes, a Unix socket bound
// in the mount and connected to from another process, a character device.
func TestPosixSpecialFiles(t *testing.T) {
	requireRoot(t)
	e, m := mounted(t, nil, mount.Options{})
	dir := m.Dir()

	t.Run("fifo", func(t *testing.T) {
		fifo := filepath.Join(dir, "fifo")
		require.NoError(t, unix.Mkfifo(fifo, 0o640))
		st := lstat(t, fifo)
		require.Equal(t, uint32(unix.S_IFIFO|0o640), st.Mode)
		require.Equal(t, vfs.KindFifo, sessionNode(t, e, "fifo").Kind)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		writer := exec.CommandContext(ctx, "/bin/sh", "-c", `echo "through the fifo" > "$0"`, fifo)
		require.NoError(t, writer.Start())
		out, err := exec.CommandContext(ctx, "cat", fifo).CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.NoError(t, writer.Wait())
		require.Equal(t, "through the fifo\n", string(out))
	})
	t.Run("unix socket", func(t *testing.T) {
		sock := filepath.Join(dir, "sock")
		l, err := net.Listen("unix", sock)
		require.NoError(t, err)
		defer l.Close()
		require.Equal(t, uint32(unix.S_IFSOCK), lstat(t, sock).Mode&unix.S_IFMT)
		require.Equal(t, vfs.KindSocket, sessionNode(t, e, "sock").Kind)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		client := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestPosixSocketClientProcess$")
		client.Env = append(os.Environ(), sockClientEnv+"="+sock)
		var out strings.Builder
		client.Stdout, client.Stderr = &out, &out
		require.NoError(t, client.Start())
		go func() { <-ctx.Done(); l.Close() }()
		c, err := l.Accept()
		require.NoError(t, err)
		got, err := io.ReadAll(bufio.NewReader(c))
		c.Close()
		require.NoError(t, err)
		require.NoError(t, client.Wait(), "%s", out.String())
		require.Equal(t, "hello from another process", string(got))
	})
	t.Run("char device", func(t *testing.T) {
		dev := filepath.Join(dir, "null")
		require.NoError(t, unix.Mknod(dev, unix.S_IFCHR|0o644, int(unix.Mkdev(1, 3))))
		st := lstat(t, dev)
		require.Equal(t, uint32(unix.S_IFCHR|0o644), st.Mode)
		require.Equal(t, unix.Mkdev(1, 3), st.Rdev)
		n := sessionNode(t, e, "null")
		require.Equal(t, vfs.KindCharDev, n.Kind)
		require.Equal(t, unix.Mkdev(1, 3), n.Rdev)
		big := filepath.Join(dir, "big")
		require.NoError(t, unix.Mknod(big, unix.S_IFBLK|0o600, int(unix.Mkdev(259, 70000))))
		require.Equal(t, unix.Mkdev(259, 70000), lstat(t, big).Rdev, "large majors and minors survive")
	})
}

// sockClientEnv names the socket TestPosixSocketClientProcess connects to.
const sockClientEnv = "VFSD_TEST_SOCK_CLIENT"

// TestPosixSocketClientProcess is TestPosixSpecialFiles's socket client,
// in a process of its own; it does nothing in a normal run.
func TestPosixSocketClientProcess(t *testing.T) {
	path := os.Getenv(sockClientEnv)
	if path == "" {
		t.Skip("the socket client of TestPosixSpecialFiles")
	}
	c, err := net.Dial("unix", path)
	require.NoError(t, err)
	_, err = c.Write([]byte("hello from another process"))
	require.NoError(t, err)
	require.NoError(t, c.Close())
}

// TestPosixHardLinks: link(2), writes through one name read through the
// other, nlink through unlink and rename over a link, directory nlink.
func TestPosixHardLinks(t *testing.T) {
	e, m := mounted(t, map[string]string{"a": "first"}, mount.Options{})
	dir := m.Dir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")

	before := lstat(t, a)
	require.NoError(t, os.Link(a, b))
	sa, sb := lstat(t, a), lstat(t, b)
	require.Equal(t, sa.Ino, sb.Ino)
	require.Equal(t, uint64(2), sa.Nlink)
	require.Equal(t, uint64(2), sb.Nlink)
	require.Greater(t, tsNs(sa.Ctim), tsNs(before.Ctim), "link moves ctime")
	require.Equal(t, uint32(2), sessionNode(t, e, "b").Nlink)

	require.NoError(t, os.WriteFile(b, []byte("written through b"), 0o644))
	got, err := os.ReadFile(a)
	require.NoError(t, err)
	require.Equal(t, "written through b", string(got))
	require.Equal(t, "written through b", e.Read("a"))

	require.NoError(t, os.Remove(a))
	require.Equal(t, uint64(1), lstat(t, b).Nlink)

	// Rename over a link: the replaced name's node loses a link.
	c := filepath.Join(dir, "c")
	require.NoError(t, os.Link(b, c))
	require.Equal(t, uint64(2), lstat(t, b).Nlink)
	z := filepath.Join(dir, "z")
	require.NoError(t, os.WriteFile(z, []byte("z"), 0o644))
	require.NoError(t, os.Rename(z, c))
	require.Equal(t, uint64(1), lstat(t, b).Nlink)
	got, err = os.ReadFile(c)
	require.NoError(t, err)
	require.Equal(t, "z", string(got))

	// A tool's link shows too.
	_, err = e.S.Link(context.Background(), vfs.MustPath("b"), vfs.MustPath("t"))
	require.NoError(t, err)
	require.Equal(t, uint64(2), lstat(t, b).Nlink)
	require.Equal(t, lstat(t, b).Ino, lstat(t, filepath.Join(dir, "t")).Ino)

	// Directories: 2 + subdirectories; no hard links.
	d := filepath.Join(dir, "d")
	require.NoError(t, os.Mkdir(d, 0o755))
	require.NoError(t, os.Mkdir(filepath.Join(d, "x"), 0o755))
	require.NoError(t, os.Mkdir(filepath.Join(d, "y"), 0o755))
	require.Equal(t, uint64(4), lstat(t, d).Nlink)
	require.NoError(t, os.Remove(filepath.Join(d, "x")))
	require.Equal(t, uint64(3), lstat(t, d).Nlink)
	require.ErrorIs(t, os.Link(d, filepath.Join(dir, "dl")), syscall.EPERM)
}

// TestPosixXattrs: set, get, list, remove, and the errors programs probe.
func TestPosixXattrs(t *testing.T) {
	e, m := mounted(t, map[string]string{"f": "data"}, mount.Options{})
	f := filepath.Join(m.Dir(), "f")
	buf := make([]byte, 64)

	_, err := unix.Getxattr(f, "user.missing", buf)
	require.ErrorIs(t, err, unix.ENODATA)
	require.ErrorIs(t, unix.Setxattr(f, "user.k", []byte("v"), unix.XATTR_REPLACE), unix.ENODATA)
	require.NoError(t, unix.Setxattr(f, "user.k", []byte("value"), unix.XATTR_CREATE))
	require.ErrorIs(t, unix.Setxattr(f, "user.k", []byte("v"), unix.XATTR_CREATE), unix.EEXIST)
	require.NoError(t, unix.Setxattr(f, "user.k", []byte("longer value"), unix.XATTR_REPLACE))
	require.NoError(t, unix.Setxattr(f, "user.empty", nil, 0))
	require.NoError(t, unix.Setxattr(f, "trusted.t", []byte("t"), 0))

	sz, err := unix.Getxattr(f, "user.k", nil)
	require.NoError(t, err)
	require.Equal(t, len("longer value"), sz, "a zero-size buffer probes the size")
	_, err = unix.Getxattr(f, "user.k", make([]byte, 3))
	require.ErrorIs(t, err, unix.ERANGE)
	n, err := unix.Getxattr(f, "user.k", buf)
	require.NoError(t, err)
	require.Equal(t, "longer value", string(buf[:n]))
	n, err = unix.Getxattr(f, "user.empty", buf)
	require.NoError(t, err)
	require.Equal(t, 0, n)

	sz, err = unix.Listxattr(f, nil)
	require.NoError(t, err)
	_, err = unix.Listxattr(f, make([]byte, sz-1))
	require.ErrorIs(t, err, unix.ERANGE)
	list := make([]byte, sz)
	n, err = unix.Listxattr(f, list)
	require.NoError(t, err)
	names := strings.Split(strings.TrimSuffix(string(list[:n]), "\x00"), "\x00")
	sort.Strings(names)
	require.Equal(t, []string{"trusted.t", "user.empty", "user.k"}, names)

	v, err := e.S.GetXattr(context.Background(), vfs.MustPath("f"), "user.k")
	require.NoError(t, err)
	require.Equal(t, "longer value", string(v))

	require.NoError(t, unix.Removexattr(f, "user.k"))
	require.ErrorIs(t, unix.Removexattr(f, "user.k"), unix.ENODATA)
	_, err = unix.Getxattr(f, "user.k", buf)
	require.ErrorIs(t, err, unix.ENODATA)

	// user.* only on files and directories, as Linux has it.
	l := filepath.Join(m.Dir(), "l")
	require.NoError(t, os.Symlink("f", l))
	require.ErrorIs(t, unix.Lsetxattr(l, "user.k", []byte("v"), 0), unix.EPERM)
	require.NoError(t, unix.Lsetxattr(l, "trusted.k", []byte("v"), 0))
	require.ErrorIs(t, unix.Setxattr(f, "bogus.k", []byte("v"), 0), unix.EOPNOTSUPP)

	// A tool's change shows.
	_, err = e.S.SetXattr(context.Background(), vfs.MustPath("f"), "user.tool", []byte("t"), 0)
	require.NoError(t, err)
	n, err = unix.Getxattr(f, "user.tool", buf)
	require.NoError(t, err)
	require.Equal(t, "t", string(buf[:n]))
}

// TestPosixOtherUsers: files take their creator's uid and gid; a sticky
// directory stops uid 65534 deleting another user's file but not its own;
// a write by another user clears setuid.
func TestPosixOtherUsers(t *testing.T) {
	e, m := sharedMount(t, map[string]string{"tmp/": "", "suid": "x"})
	dir := m.Dir()
	tmp := filepath.Join(dir, "tmp")
	require.NoError(t, unix.Chmod(tmp, 0o1777))
	require.Equal(t, uint32(0o1777), lstat(t, tmp).Mode&0o7777)

	theirs := filepath.Join(tmp, "theirs")
	require.NoError(t, os.WriteFile(theirs, []byte("x"), 0o666))
	require.NoError(t, os.Lchown(theirs, 1000, 1000))
	out, err := runAs(t, 65534, 65534, "rm", "-f", theirs)
	require.Error(t, err, "uid 65534 deleted uid 1000's file from a sticky directory: %s", out)
	_, err = os.Lstat(theirs)
	require.NoError(t, err)

	mine := filepath.Join(tmp, "mine")
	out, err = runAs(t, 65534, 65533, "touch", mine)
	require.NoError(t, err, "%s", out)
	st := lstat(t, mine)
	require.Equal(t, [2]uint32{65534, 65533}, [2]uint32{st.Uid, st.Gid}, "the creator owns it")
	n := sessionNode(t, e, "tmp/mine")
	require.Equal(t, [2]uint32{65534, 65533}, [2]uint32{n.Uid, n.Gid})
	out, err = runAs(t, 65534, 65534, "mkdir", filepath.Join(tmp, "mydir"))
	require.NoError(t, err, "%s", out)
	require.Equal(t, uint32(65534), lstat(t, filepath.Join(tmp, "mydir")).Uid)
	out, err = runAs(t, 65534, 65534, "rm", "-f", mine)
	require.NoError(t, err, "a user may delete its own file from a sticky directory: %s", out)

	// A non-owner's write clears setuid (the kernel sends the chmod).
	suid := filepath.Join(dir, "suid")
	require.NoError(t, unix.Chmod(suid, 0o4777))
	out, err = runAs(t, 65534, 65534, "/bin/sh", "-c", `echo more >> "$0"`, suid)
	require.NoError(t, err, "%s", out)
	require.Equal(t, uint32(0o777), lstat(t, suid).Mode&0o7777)
	require.Equal(t, uint32(0o777), sessionNode(t, e, "suid").UnixMode()&0o7777)
}

// TestPosixTarSameOwner: tar --same-owner -xpf of a tree with several
// owners, modes, a hard link, a fifo and a symlink gives back the same
// tree: diff -r and every file's owner, group, mode, links and type.
func TestPosixTarSameOwner(t *testing.T) {
	requireRoot(t)
	tar := requireTool(t, "tar")
	diff := requireTool(t, "diff")
	_, m := mounted(t, nil, mount.Options{})

	src := t.TempDir()
	orig := filepath.Join(src, "tree")
	type entry struct {
		path     string
		kind     string // file, dir, fifo, symlink (target in content), link (target in content)
		content  string
		mode     uint32
		uid, gid int
	}
	tree := []entry{
		{"", "dir", "", 0o755, 0, 0},
		{"bin", "dir", "", 0o755, 0, 0},
		{"bin/tool", "file", "#!/bin/sh\n", 0o4755, 0, 0},
		{"bin/group", "file", "g\n", 0o2750, 0, 50},
		{"home", "dir", "", 0o755, 0, 0},
		{"home/alice", "dir", "", 0o700, 1000, 1000},
		{"home/alice/notes", "file", "secret\n", 0o600, 1000, 1000},
		{"home/alice/again", "link", "home/alice/notes", 0, 0, 0},
		{"home/bob", "dir", "", 0o2775, 1001, 100},
		{"home/bob/pipe", "fifo", "", 0o620, 1001, 100},
		{"home/bob/latest", "symlink", "../alice/notes", 0, 1001, 100},
		{"shared", "dir", "", 0o1777, 0, 0},
		{"shared/empty", "file", "", 0o444, 65534, 65534},
	}
	for _, en := range tree {
		p := filepath.Join(orig, en.path)
		switch en.kind {
		case "dir":
			require.NoError(t, os.MkdirAll(p, 0o700))
		case "file":
			require.NoError(t, os.WriteFile(p, []byte(en.content), 0o600))
		case "fifo":
			require.NoError(t, unix.Mkfifo(p, 0o600))
		case "symlink":
			require.NoError(t, os.Symlink(en.content, p))
		case "link":
			require.NoError(t, os.Link(filepath.Join(orig, en.content), p))
			continue
		}
		require.NoError(t, os.Lchown(p, en.uid, en.gid))
		if en.kind != "symlink" {
			require.NoError(t, unix.Chmod(p, en.mode))
		}
	}
	archive := filepath.Join(src, "tree.tar")
	run(t, "", nil, tar, "-C", src, "-cf", archive, "tree")
	run(t, "", nil, tar, "--same-owner", "-xpf", archive, "-C", m.Dir())

	got := filepath.Join(m.Dir(), "tree")
	// diff compares no fifos ("is a fifo while ... is a fifo"): statTree does.
	out, err := runErr(t, "", nil, diff, "-r", "--no-dereference", "-x", "pipe", orig, got)
	require.NoError(t, err, "diff -r:\n%s", out)
	require.Equal(t, statTree(t, orig), statTree(t, got))
}

// statTree lists `stat -c '%u %g %a %h %F'` of every entry below root,
// relative names first.
func statTree(t *testing.T, root string) string {
	t.Helper()
	out := run(t, "", nil, "/bin/sh", "-c", `cd "$0" && find . -print0 | sort -z | xargs -0 stat -c '%n %u %g %a %h %F'`, root)
	return out
}
