//go:build linux

package httpapi_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/mount/overlay"
)

// TestMountIsNosuidNodev: a mount the daemon makes, by either backend, is
// nosuid and nodev; allow_setid and allow_devices (admin only, as the
// mount route is) lift them, and the mount records that it was asked.
// (mount/mounttest.RunPrivilegeAttacks attacks the flags themselves.)
func TestMountIsNosuidNodev(t *testing.T) {
	if !fuseAvailable() {
		t.Skip("needs /dev/fuse and root")
	}
	s := start(t, newConfig(t))
	ctx := context.Background()
	_, err := s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "f"})
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "m")
	require.NoError(t, os.Mkdir(dir, 0o755))
	flags := func() uint64 {
		var st unix.Statfs_t
		require.NoError(t, unix.Statfs(dir, &st))
		return uint64(st.Flags) & (unix.ST_NOSUID | unix.ST_NODEV)
	}
	for _, backend := range []string{api.BackendFUSE, api.BackendOverlay} {
		t.Run(backend, func(t *testing.T) {
			if backend == api.BackendOverlay && overlay.Available() != nil {
				t.Skipf("overlay backend unavailable: %v", overlay.Available())
			}
			fm, err := s.c.Mount(ctx, "f", api.MountRequest{Dir: dir, Backend: backend})
			require.NoError(t, err)
			require.False(t, fm.AllowSetID || fm.AllowDevices)
			require.Equal(t, uint64(unix.ST_NOSUID|unix.ST_NODEV), flags(), "a default mount is nosuid,nodev")
			require.NoError(t, s.c.Unmount(ctx, "f", dir))

			fm, err = s.c.Mount(ctx, "f", api.MountRequest{Dir: dir, Backend: backend, AllowSetID: true, AllowDevices: true})
			require.NoError(t, err)
			require.True(t, fm.AllowSetID && fm.AllowDevices)
			require.Zero(t, flags(), "allow_setid and allow_devices lift nosuid and nodev")
			info, err := s.c.Session(ctx, "f")
			require.NoError(t, err)
			require.Len(t, info.FuseMounts, 1)
			require.True(t, info.FuseMounts[0].AllowSetID && info.FuseMounts[0].AllowDevices, "recorded, for the remount at restart")
			require.NoError(t, s.c.Unmount(ctx, "f", dir))
		})
	}
}
