//go:build linux

package mount_test

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/internal/mountinfo"
	"github.com/vfsd/vfsd/mount"
)

// sandboxArgs returns bwrap arguments giving a sandbox the host's programs
// read-only: /usr bound, and /bin, /lib, /lib64, /sbin bound too or, on a
// merged-/usr system, recreated as the symlinks they are.
func sandboxArgs(t *testing.T) []string {
	t.Helper()
	args := []string{"--ro-bind", "/usr", "/usr"}
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
			continue
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(d)
			require.NoError(t, err)
			args = append(args, "--symlink", target, d)
		default:
			args = append(args, "--ro-bind", d, d)
		}
	}
	return append(args, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp")
}

// TestContainerConsumer: a sandboxed process (bubblewrap, as a container
// runtime would) gets the mount bind-mounted as /workspace, edits it, and
// the session sees the edits; the sandbox sees the tools' edits too.
func TestContainerConsumer(t *testing.T) {
	bwrap := requireTool(t, "bwrap")
	requireFUSE(t)
	if out, err := runErr(t, "", nil, bwrap, append(sandboxArgs(t), "true")...); err != nil {
		t.Skipf("bwrap cannot create its namespaces here: %v: %s", err, out)
	}
	e, m := mounted(t, map[string]string{"README.md": "# readme\n", "src/a.txt": "a\n"}, mount.Options{})
	callOK(t, e, "write_file", map[string]any{"path": "from-tool.txt", "inline_text": "written by a tool\n"})

	sandbox := func(script string) string {
		t.Helper()
		args := append([]string{"--bind", m.Dir(), "/workspace"}, sandboxArgs(t)...)
		args = append(args, "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent",
			"--chdir", "/workspace", "sh", "-euc", script)
		return run(t, "", nil, bwrap, args...)
	}
	out := sandbox(`echo edited >> README.md; mkdir -p out; echo hi > out/x; cat from-tool.txt; ` +
		`mv src/a.txt src/b.txt; rm -f nothing; ln -s ../README.md out/readme; ls`)
	require.Contains(t, out, "written by a tool\n")
	require.Equal(t, "# readme\nedited\n", e.Read("README.md"))
	require.Equal(t, "hi\n", e.Read("out/x"))
	require.Equal(t, "a\n", e.Read("src/b.txt"))
	target, err := e.S.Readlink(ctx, "out/readme")
	require.NoError(t, err)
	require.Equal(t, "../README.md", target)

	// And the other way round: a tool's edit, seen in a new sandbox.
	callOK(t, e, "edit_file", map[string]any{"path": "out/x", "old_string": "hi", "new_string": "hello from a tool"})
	require.Equal(t, "hello from a tool\n", sandbox("cat out/x"))
	requireSameTree(t, e.S, m.Dir())
}

// isMountPoint reports whether dir is a mount point of this process's
// mount namespace.
func isMountPoint(t *testing.T, dir string) bool {
	t.Helper()
	ms, err := mountinfo.Read()
	require.NoError(t, err)
	for _, m := range ms {
		if m.MountPoint == dir {
			return true
		}
	}
	return false
}

// TestUnmountWhileOpen: unmounting while a file is open in the mount
// succeeds (lazily): the mount point leaves the mount table at once, the
// open file keeps working, and the server stops once it is closed.
func TestUnmountWhileOpen(t *testing.T) {
	e, m := mounted(t, map[string]string{"open.txt": "still here\n", "d/x": "x\n"}, mount.Options{})
	dir := m.Dir()
	require.True(t, isMountPoint(t, dir))
	f, err := os.OpenFile(filepath.Join(dir, "open.txt"), os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	d, err := os.Open(filepath.Join(dir, "d"))
	require.NoError(t, err)
	defer d.Close()

	require.NoError(t, m.Unmount())
	require.False(t, isMountPoint(t, dir), "the mount point is detached at once")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "the mount point shows the directory under it again")

	// Open files keep working, and still reach the session.
	buf := make([]byte, 64)
	n, err := f.ReadAt(buf, 0)
	require.ErrorIs(t, err, io.EOF)
	require.Equal(t, "still here\n", string(buf[:n]))
	_, err = f.WriteAt([]byte("STILL"), 0)
	require.NoError(t, err)
	names, err := d.Readdirnames(-1)
	require.NoError(t, err)
	require.Equal(t, []string{"x"}, names)
	require.NoError(t, f.Close())
	require.NoError(t, d.Close())
	require.Equal(t, "STILL here\n", e.Read("open.txt"))

	// Released: the server goes away.
	stopped := make(chan struct{})
	go func() { m.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the FUSE server still runs 10s after the last file was closed")
	}
	require.False(t, isMountPoint(t, dir))
	require.NoError(t, m.Unmount(), "unmounting again is harmless")
}
