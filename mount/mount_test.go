//go:build linux

package mount_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/mount"
	"github.com/vfsd/vfsd/tools/toolstest"
)

var ctx = context.Background()

// requireFUSE skips unless this process can mount FUSE filesystems.
func requireFUSE(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		if _, err := exec.LookPath("fusermount3"); err != nil {
			t.Skip("FUSE tests need root or fusermount3 (apt-get install fuse3)")
		}
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("FUSE tests need /dev/fuse")
	}
}

// mounted returns a session with files, mounted at a temporary directory.
func mounted(t *testing.T, files map[string]string, opts mount.Options) (*toolstest.Env, *mount.Mount) {
	t.Helper()
	requireFUSE(t)
	e := toolstest.New(t, nil, files)
	dir := t.TempDir()
	m, err := mount.New(e.S, dir, opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.Unmount()) })
	return e, m
}

func TestMountReadWrite(t *testing.T) {
	e, m := mounted(t, map[string]string{"README.md": "# hi\n", "src/main.go": "package main\n"}, mount.Options{})
	dir := m.Dir()

	data, err := os.ReadFile(filepath.Join(dir, "src/main.go"))
	require.NoError(t, err)
	require.Equal(t, "package main\n", string(data))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 2)

	// Mount write → visible to the session and to read_file at once.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "new.txt"), []byte("from the mount"), 0o644))
	require.Equal(t, "from the mount", e.Read("new.txt"))
	r := toolstest.Receipt(t, e.Call("read_file", `{"path":"new.txt"}`))
	require.Equal(t, "from the mount", r["inline_text"])

	// Tool write → visible in the mount at once, despite long cache timeouts.
	require.True(t, e.Call("write_file", `{"path":"README.md","inline_text":"# changed by a tool\n"}`).OK())
	data, err = os.ReadFile(filepath.Join(dir, "README.md"))
	require.NoError(t, err)
	require.Equal(t, "# changed by a tool\n", string(data))
	require.True(t, e.Call("rename", `{"from":"src","to":"lib"}`).OK())
	_, err = os.Stat(filepath.Join(dir, "src"))
	require.ErrorIs(t, err, os.ErrNotExist)
	data, err = os.ReadFile(filepath.Join(dir, "lib/main.go"))
	require.NoError(t, err)
	require.Equal(t, "package main\n", string(data))

	// Inode numbers are the engine's, stable across copy-up.
	var before, after syscall.Stat_t
	require.NoError(t, syscall.Stat(filepath.Join(dir, "lib/main.go"), &before))
	f, err := os.OpenFile(filepath.Join(dir, "lib/main.go"), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString("// more\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, syscall.Stat(filepath.Join(dir, "lib/main.go"), &after))
	require.Equal(t, before.Ino, after.Ino)
	require.Equal(t, "package main\n// more\n", e.Read("lib/main.go"))
}

// TestReaddirDotEntries lists "." and ".." as any POSIX file system does
// (go-fuse adds neither), with their inode numbers, through ls -ai in a
// subprocess (Go's os.ReadDir hides both).
func TestReaddirDotEntries(t *testing.T) {
	_, m := mounted(t, map[string]string{"a.txt": "a", "sub/b.txt": "b"}, mount.Options{})
	dir := m.Dir()
	out := run(t, dir, nil, "ls", "-a", ".", "sub")
	require.Equal(t, ".:\n.\n..\na.txt\nsub\n\nsub:\n.\n..\nb.txt\n", out)
	out = run(t, dir, nil, "ls", "-ai", "sub")
	fields := strings.Fields(out)
	require.Len(t, fields, 6, out)
	require.Equal(t, strconv.FormatUint(inoOf(t, filepath.Join(dir, "sub")), 10), fields[0], "the inode of . is the directory's")
	require.Equal(t, strconv.FormatUint(inoOf(t, dir), 10), fields[2], "the inode of .. is its parent's")
}
