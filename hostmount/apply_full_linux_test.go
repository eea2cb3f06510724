//go:build linux

package hostmount

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// TestApplyHostFull fills the host file system half-way through an apply:
// the file that does not fit is a conflict saying so, the others are
// written, and nothing is left behind.
func TestApplyHostFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs as the host folder")
	}
	e := newEnv(t)
	host := filepath.Join(e.root, "proj")
	require.NoError(t, os.MkdirAll(host, 0o755))
	if err := unix.Mount("tmpfs", host, "tmpfs", 0, "size=256k"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(host, unix.MNT_DETACH) })
	e.write("proj/a.txt", "a\n")
	mounts := []Mount{{HostPath: host, MountPath: "/"}}
	s, rep, err := e.im.Stage(ctx, e.repo, snapshot.SessionOptions{}, mounts, nil)
	require.NoError(t, err)
	_, err = s.WriteFile(ctx, vfs.MustPath("big.bin"), strings.NewReader(strings.Repeat("x", 1<<20)), vfs.WriteOptions{})
	require.NoError(t, err)
	_, err = s.WriteFile(ctx, vfs.MustPath("small.txt"), strings.NewReader("small\n"), vfs.WriteOptions{})
	require.NoError(t, err)

	got, err := e.im.Apply(ctx, e.repo, rep.Snapshot, s, mounts, ApplyOptions{})
	require.NoError(t, err)
	require.Len(t, got.Applied, 1)
	require.Equal(t, "/small.txt", got.Applied[0].Path)
	require.Len(t, got.Conflicts, 1)
	require.Equal(t, "/big.bin", got.Conflicts[0].Path)
	require.Contains(t, got.Conflicts[0].Conflict, "full")
	require.NoFileExists(t, filepath.Join(host, "big.bin"))
	leftovers, _ := filepath.Glob(filepath.Join(host, ".*.vfsd-*"))
	require.Empty(t, leftovers)
	again, err := e.im.Apply(ctx, e.repo, got.Import, s, mounts, ApplyOptions{})
	require.NoError(t, err)
	require.Empty(t, again.Applied, "small.txt is in the new base")
	require.Len(t, again.Conflicts, 1)
}
