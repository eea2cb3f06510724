//go:build linux

// Package mounttest is the conformance suite every mount backend passes
// (mount.Backend: the FUSE mount, the kernel overlay): the same POSIX
// checks — owners, modes, times, special files, hard links, extended
// attributes, a tar round trip, tools' changes seen in the mount — made
// through the mount and then checked in the session after Sync.
package mounttest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/mount"
	"github.com/vfsd/vfsd/vfs"
)

// Factory mounts a fresh, empty session and returns it with its mount;
// it unmounts at t's cleanup, and skips t where the backend cannot mount.
type Factory func(t *testing.T) (*vfs.Session, mount.Backend)

// Run runs the suite against the backend mk mounts. known names checks
// the backend is known to fail, with the reason (an issue to fix): they
// are skipped with it.
func Run(t *testing.T, mk Factory, known map[string]string) {
	for _, c := range []struct {
		name string
		root bool
		fn   func(t *testing.T, s *vfs.Session, b mount.Backend)
	}{
		{"OwnersAndModes", true, ownersAndModes},
		{"Times", false, times},
		{"SpecialFiles", true, specialFiles},
		{"HardLinks", false, hardLinks},
		{"Xattrs", false, xattrs},
		{"TarRoundTrip", true, tarRoundTrip},
		{"ToolChangesSeen", false, toolChangesSeen},
	} {
		t.Run(c.name, func(t *testing.T) {
			if reason, ok := known[c.name]; ok {
				t.Skip("known failure: " + reason)
			}
			if c.root && os.Geteuid() != 0 {
				t.Skip("needs root (chown, mknod)")
			}
			s, b := mk(t)
			c.fn(t, s, b)
		})
	}
}

// node syncs b and returns the session's node at p.
func node(t *testing.T, s *vfs.Session, b mount.Backend, p string) vfs.Node {
	t.Helper()
	require.NoError(t, b.Sync(context.Background()))
	n, err := s.Stat(context.Background(), vfs.MustPath(p))
	require.NoError(t, err, "%s in the session", p)
	return n
}

func lstat(t *testing.T, p string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(p, &st))
	return st
}

func ownersAndModes(t *testing.T, s *vfs.Session, b mount.Backend) {
	dir := b.Dir()
	f := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(f, []byte("x"), 0o644))
	require.NoError(t, os.Lchown(f, 1234, 5678))
	require.NoError(t, unix.Chmod(f, 0o4755))
	d := filepath.Join(dir, "sticky")
	require.NoError(t, os.Mkdir(d, 0o755))
	require.NoError(t, unix.Chmod(d, 0o1777))
	g := filepath.Join(dir, "g")
	require.NoError(t, os.WriteFile(g, nil, 0o600))
	require.NoError(t, unix.Chmod(g, 0o2070))
	require.NoError(t, unix.Chmod(filepath.Join(dir, "f"), 0o4755)) // again: chown cleared nothing we set after
	st := lstat(t, f)
	require.EqualValues(t, 1234, st.Uid)
	require.EqualValues(t, 5678, st.Gid)
	require.EqualValues(t, 0o4755, st.Mode&0o7777)
	n := node(t, s, b, "f")
	require.EqualValues(t, 1234, n.Uid)
	require.EqualValues(t, 5678, n.Gid)
	require.EqualValues(t, 0o4755, n.UnixMode()&0o7777)
	require.EqualValues(t, 0o1777, node(t, s, b, "sticky").UnixMode()&0o7777)
	require.EqualValues(t, 0o2070, node(t, s, b, "g").UnixMode()&0o7777)
}

func times(t *testing.T, s *vfs.Session, b mount.Backend) {
	f := filepath.Join(b.Dir(), "t")
	require.NoError(t, os.WriteFile(f, []byte("t"), 0o644))
	at, mt := time.Unix(1_500_000_000, 111_222_333), time.Unix(1_600_000_000, 444_555_666)
	require.NoError(t, os.Chtimes(f, at, mt))
	st := lstat(t, f)
	require.Equal(t, mt.UnixNano(), unix.TimespecToNsec(st.Mtim))
	require.Equal(t, at.UnixNano(), unix.TimespecToNsec(st.Atim))
	n := node(t, s, b, "t")
	require.Equal(t, mt.UnixNano(), n.Mtime)
	require.Equal(t, at.UnixNano(), n.Atime)
}

func specialFiles(t *testing.T, s *vfs.Session, b mount.Backend) {
	dir := b.Dir()
	require.NoError(t, unix.Mkfifo(filepath.Join(dir, "fifo"), 0o640))
	require.NoError(t, unix.Mknod(filepath.Join(dir, "null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))))
	require.NoError(t, os.Symlink("fifo", filepath.Join(dir, "ln")))
	require.EqualValues(t, unix.S_IFIFO, lstat(t, filepath.Join(dir, "fifo")).Mode&unix.S_IFMT)
	require.Equal(t, vfs.KindFifo, node(t, s, b, "fifo").Kind)
	require.EqualValues(t, 0o640, node(t, s, b, "fifo").UnixMode()&0o7777)
	n := node(t, s, b, "null")
	require.Equal(t, vfs.KindCharDev, n.Kind)
	require.Equal(t, unix.Mkdev(1, 3), n.Rdev)
	ln := node(t, s, b, "ln")
	require.Equal(t, vfs.KindSymlink, ln.Kind)
	require.Equal(t, "fifo", ln.Target)
}

func hardLinks(t *testing.T, s *vfs.Session, b mount.Backend) {
	dir := b.Dir()
	a := filepath.Join(dir, "a")
	require.NoError(t, os.WriteFile(a, []byte("shared"), 0o644))
	require.NoError(t, os.Link(a, filepath.Join(dir, "b")))
	sa, sb := lstat(t, a), lstat(t, filepath.Join(dir, "b"))
	require.Equal(t, sa.Ino, sb.Ino)
	require.EqualValues(t, 2, sa.Nlink)
	na, nb := node(t, s, b, "a"), node(t, s, b, "b")
	require.Equal(t, na.Ino, nb.Ino)
	require.EqualValues(t, 2, na.Nlink)
	data, _, err := s.ReadFile(context.Background(), "b")
	require.NoError(t, err)
	require.Equal(t, "shared", string(data))
}

func xattrs(t *testing.T, s *vfs.Session, b mount.Backend) {
	f := filepath.Join(b.Dir(), "x")
	require.NoError(t, os.WriteFile(f, []byte("x"), 0o644))
	require.NoError(t, unix.Setxattr(f, "user.one", []byte("1"), 0))
	require.NoError(t, unix.Setxattr(f, "user.two", []byte("2"), 0))
	require.NoError(t, unix.Removexattr(f, "user.two"))
	buf := make([]byte, 16)
	n, err := unix.Getxattr(f, "user.one", buf)
	require.NoError(t, err)
	require.Equal(t, "1", string(buf[:n]))
	x := node(t, s, b, "x").Xattrs.Map()
	require.Equal(t, map[string][]byte{"user.one": []byte("1")}, x)
}

// tarRoundTrip unpacks an archive with owners, modes, links and xattrs
// into the mount and packs it again: the same listing both ways, and the
// session holds it.
func tarRoundTrip(t *testing.T, s *vfs.Session, b mount.Backend) {
	if _, err := exec.LookPath("tar"); err != nil {
		t.Skip("tar is not installed")
	}
	src := t.TempDir()
	sh(t, src, `mkdir -p a/b && echo hello > a/b/f && ln a/b/f a/hard && ln -s b/f a/sym &&
		chown 1001:1002 a/b/f && chmod 4750 a/b/f && chmod 1775 a && mkfifo a/p &&
		touch -d @1234567890 a/b/f a/p`)
	arch := filepath.Join(t.TempDir(), "a.tar")
	sh(t, src, "tar --xattrs -cpf "+arch+" a")
	sh(t, b.Dir(), "tar --xattrs --same-owner -xpf "+arch)
	require.Equal(t, list(t, src), list(t, b.Dir()))
	n := node(t, s, b, "a/b/f")
	require.EqualValues(t, 1001, n.Uid)
	require.EqualValues(t, 0o4750, n.UnixMode()&0o7777)
	require.Equal(t, int64(1234567890e9), n.Mtime)
	require.EqualValues(t, 2, n.Nlink)
	require.Equal(t, vfs.KindFifo, node(t, s, b, "a/p").Kind)
}

// list describes a tree: path, mode, owner, links, size and mtime of
// non-directories.
func list(t *testing.T, root string) string {
	t.Helper()
	var lines []string
	require.NoError(t, filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		require.NoError(t, err)
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		st := lstat(t, p)
		line := fmt.Sprintf("%s %o %d:%d", rel, st.Mode, st.Uid, st.Gid)
		if !fi.IsDir() {
			line += fmt.Sprintf(" n=%d s=%d m=%d", st.Nlink, st.Size, st.Mtim.Sec)
		}
		lines = append(lines, line)
		return nil
	}))
	return strings.Join(lines, "\n")
}

// sh runs a shell script in dir (a child process: never this one in a
// FUSE mount this process serves).
func sh(t *testing.T, dir, script string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", `cd "$0" && `+script, dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Run(), "%s:\n%s", script, out.String())
}

func toolChangesSeen(t *testing.T, s *vfs.Session, b mount.Backend) {
	ctx := context.Background()
	_, err := s.WriteFile(ctx, "dir/tool.txt", strings.NewReader("by a tool"), vfs.WriteOptions{CreateParents: true})
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(b.Dir(), "dir/tool.txt"))
	require.NoError(t, err)
	require.Equal(t, "by a tool", string(data))
	require.NoError(t, s.Rename(ctx, "dir/tool.txt", "dir/moved.txt", vfs.RenameOptions{}))
	_, err = os.Stat(filepath.Join(b.Dir(), "dir/moved.txt"))
	require.NoError(t, err)
	require.NoError(t, s.Remove(ctx, "dir", vfs.RemoveOptions{Recursive: true}))
	_, err = os.Stat(filepath.Join(b.Dir(), "dir"))
	require.ErrorIs(t, err, os.ErrNotExist)
	// And nothing to take in afterwards: the session is as it was.
	require.NoError(t, b.Sync(ctx))
	_, err = s.Stat(ctx, "dir")
	require.Error(t, err)
}
