//go:build linux

package mount_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/mount"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// TestMountQuota: a process writing through the mount past the session's
// byte quota gets EDQUOT ("Disk quota exceeded"), for writes and for
// truncations alike, and the session stays as it was. (Issue 11: a session
// could fill the disk through its mount.)
func TestMountQuota(t *testing.T) {
	requireFUSE(t)
	dir := t.TempDir()
	repo, err := snapshot.OpenLocalRepo(ctx, filepath.Join(dir, "repo"), snapshot.RepoOptions{
		Quota: func(string) vfs.Quota { return vfs.Quota{MaxBytes: 64 << 10, MaxNodes: 20} },
	})
	require.NoError(t, err)
	t.Cleanup(func() { repo.Close() })
	s, err := repo.NewSession(ctx, snapshot.SessionOptions{ID: "q"})
	require.NoError(t, err)
	// A page's worth, so that appends start on a page boundary: the kernel
	// sends a buffered write that starts mid-page as two FUSE requests.
	_, err = s.WriteFile(ctx, vfs.MustPath("a.txt"), strings.NewReader(strings.Repeat("kept\n", 4096/5)+"!"), vfs.WriteOptions{})
	require.NoError(t, err)
	mp := t.TempDir()
	m, err := mount.New(s, mp, mount.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.Unmount()) })
	before := sessionState(t, s).String()

	for _, c := range []struct {
		name string
		args []string
	}{
		// One write(2) each, larger than the room left: refused whole.
		{"append", []string{"dd", "if=/dev/zero", "of=a.txt", "bs=100000", "count=1", "oflag=append", "conv=notrunc"}},
		{"write with fsync", []string{"dd", "if=/dev/zero", "of=a.txt", "bs=100000", "count=1", "conv=notrunc,fsync"}},
		{"truncate", []string{"truncate", "-s", "3G", "a.txt"}},
	} {
		out, err := runErr(t, mp, nil, c.args[0], c.args[1:]...)
		require.Error(t, err, "%s: %s", c.name, out)
		require.Contains(t, out, "quota", "%s: the process sees EDQUOT", c.name)
		require.Equal(t, before, sessionState(t, s).String(), "%s: the session is unchanged", c.name)
	}
	// The file-count quota: 20 entries in all.
	out, err := runErr(t, mp, nil, "sh", "-c", `for i in $(seq 1 30); do mkdir "d$i" || exit 1; done`)
	require.Error(t, err, out)
	require.Contains(t, out, "quota")
	require.EqualValues(t, 20, s.Info().Nodes-1)
	// Writes in many calls land up to the quota, as on a full disk.
	out, err = runErr(t, mp, nil, "sh", "-c", "head -c 100000 /dev/zero >> a.txt")
	require.Error(t, err, out)
	require.Contains(t, out, "quota")
	require.LessOrEqual(t, s.Info().Bytes, int64(64<<10))
	// Removing makes room again.
	run(t, mp, nil, "sh", "-c", "rmdir d*; rm a.txt; head -c 50000 /dev/zero > b.bin")
	require.EqualValues(t, 50000, s.Info().Bytes)
}
