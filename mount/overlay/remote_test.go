//go:build linux

package overlay_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/mount/overlay"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// TestMountOfRemoteFork: a session forked from a remote snapshot has its
// blobs in the remote, fetched on first read — which the kernel, reading
// the blob directory itself, cannot do. The mount must make them local
// first and keep them from being evicted while it lasts; a fork too large
// for the cache is refused with too_large, naming the FUSE backend.
func TestMountOfRemoteFork(t *testing.T) {
	requireOverlay(t)
	ctx := context.Background()
	remote, err := snapshot.OpenLocal(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { remote.Close() })

	a := newEnv(t)
	require.NoError(t, a.repo.SetRemote(remote, snapshot.RemoteOptions{StateDir: filepath.Join(a.root, "remote")}))
	a.write(t, "src/main.go", "package main\n")
	a.write(t, "README", "hello from A\n")
	snap, err := a.repo.Snapshot(ctx, a.s, "to-share")
	require.NoError(t, err)
	_, err = a.repo.Push(ctx, snap.ID)
	require.NoError(t, err)

	for _, tc := range []struct {
		name       string
		cacheBytes int64
		wantCode   vfs.Code
	}{
		{"fits", 0, ""},
		{"larger than the cache", 4, vfs.CodeTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			repo, err := snapshot.OpenLocalRepo(ctx, filepath.Join(root, "repo"), snapshot.RepoOptions{})
			require.NoError(t, err)
			t.Cleanup(func() { repo.Close() })
			require.NoError(t, repo.SetRemote(remote, snapshot.RemoteOptions{StateDir: filepath.Join(root, "remote"), CacheBytes: tc.cacheBytes}))
			s, err := repo.Fork(ctx, snapshot.Source{Snapshot: snap.ID}, snapshot.SessionOptions{ID: "b"})
			require.NoError(t, err)
			b := &env{repo: repo, s: s, root: root}
			dir := filepath.Join(root, "mnt")
			require.NoError(t, os.MkdirAll(dir, 0o755))
			m, err := overlay.New(ctx, repo, s, dir, b.opts())
			if tc.wantCode != "" {
				require.Error(t, err)
				require.Equal(t, tc.wantCode, vfs.CodeOf(err), "%v", err)
				require.Contains(t, err.Error(), "FUSE backend")
				return
			}
			require.NoError(t, err)
			t.Cleanup(func() { m.Unmount() })
			got, err := os.ReadFile(filepath.Join(dir, "README"))
			require.NoError(t, err)
			require.Equal(t, "hello from A\n", string(got))
			got, err = os.ReadFile(filepath.Join(dir, "src/main.go"))
			require.NoError(t, err)
			require.Equal(t, "package main\n", string(got))
		})
	}
}
