//go:build linux

package mount_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/mount"
	"github.com/vfsd/vfsd/mount/mounttest"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// TestConformance runs the backends' shared suite against the FUSE mount.
func TestConformance(t *testing.T) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("/dev/fuse is not available")
	}
	mounttest.Run(t, func(t *testing.T) (*vfs.Session, mount.Backend) {
		ctx := context.Background()
		root := t.TempDir()
		repo, err := snapshot.OpenLocalRepo(ctx, filepath.Join(root, "repo"), snapshot.RepoOptions{})
		require.NoError(t, err)
		t.Cleanup(func() { repo.Close() })
		s, err := repo.NewSession(ctx, snapshot.SessionOptions{ID: "conf"})
		require.NoError(t, err)
		dir := filepath.Join(root, "mnt")
		require.NoError(t, os.Mkdir(dir, 0o755))
		m, err := mount.New(s, dir, mount.Options{})
		if err != nil {
			t.Skipf("FUSE mount unavailable: %v", err)
		}
		t.Cleanup(func() { m.Unmount() })
		return s, m
	}, nil)
}

// TestPrivilegeAttacks replays the finding "the mount has no
// nosuid,nodev" against the FUSE mount, let in to other users
// (allow_other) as the daemon's --allow-other does.
func TestPrivilegeAttacks(t *testing.T) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("/dev/fuse is not available")
	}
	mounttest.RunPrivilegeAttacks(t, func(t *testing.T, dir string, allow bool) (*vfs.Session, mount.Backend) {
		ctx := context.Background()
		repo, err := snapshot.OpenLocalRepo(ctx, filepath.Join(t.TempDir(), "repo"), snapshot.RepoOptions{})
		require.NoError(t, err)
		t.Cleanup(func() { repo.Close() })
		s, err := repo.NewSession(ctx, snapshot.SessionOptions{ID: "priv"})
		require.NoError(t, err)
		m, err := mount.New(s, dir, mount.Options{AllowOther: true, AllowSetID: allow, AllowDevices: allow})
		if err != nil {
			t.Skipf("FUSE mount unavailable: %v", err)
		}
		t.Cleanup(func() { m.Unmount() })
		return s, m
	})
}
