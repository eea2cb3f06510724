//go:build linux

package overlay_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/mount"
	"github.com/vfsd/vfsd/mount/mounttest"
	"github.com/vfsd/vfsd/mount/overlay"
	"github.com/vfsd/vfsd/vfs"
)

// TestConformance runs the backends' shared suite against the overlay.
func TestConformance(t *testing.T) {
	requireOverlay(t)
	mounttest.Run(t, func(t *testing.T) (*vfs.Session, mount.Backend) {
		e := newEnv(t)
		return e.s, e.mount(t)
	}, nil)
}

// TestPrivilegeAttacks replays the finding "the overlay mount has no
// nosuid,nodev" against the overlay backend.
func TestPrivilegeAttacks(t *testing.T) {
	requireOverlay(t)
	mounttest.RunPrivilegeAttacks(t, func(t *testing.T, dir string, allow bool) (*vfs.Session, mount.Backend) {
		e := newEnv(t)
		opts := e.opts()
		opts.AllowSetID, opts.AllowDevices = allow, allow
		m, err := overlay.New(context.Background(), e.repo, e.s, dir, opts)
		require.NoError(t, err)
		t.Cleanup(func() { m.Unmount() })
		return e.s, m
	})
}

// TestAdoptedMountGetsNosuid: a mount a killed daemon left — here one
// without nosuid,nodev, as vfsd mounted before it set them — is held to
// the same flags when a new daemon takes it over rather than kept as it
// was; and a session's set-ID file is not honoured at a later mount.
func TestAdoptedMountGetsNosuid(t *testing.T) {
	requireOverlay(t)
	e := newEnv(t)
	m := e.mount(t)
	require.NoError(t, os.WriteFile(filepath.Join(m.Dir(), "f"), []byte("x"), 0o755))
	require.NoError(t, unix.Chmod(filepath.Join(m.Dir(), "f"), 0o4755))
	m.Abandon()
	require.NoError(t, unix.MountSetattr(unix.AT_FDCWD, m.Dir(), 0,
		&unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}))
	require.Equal(t, uint64(0), mountFlags(t, m.Dir())&(unix.ST_NOSUID|unix.ST_NODEV), "the old mount's flags")
	m2, err := overlay.New(context.Background(), e.repo, e.s, m.Dir(), e.opts())
	require.NoError(t, err)
	t.Cleanup(func() { m2.Unmount() })
	require.Equal(t, uint64(unix.ST_NOSUID|unix.ST_NODEV), mountFlags(t, m2.Dir())&(unix.ST_NOSUID|unix.ST_NODEV),
		"the mount taken over kept its old flags")
	// The file is the session's now, set-ID bit and all: a new mount of
	// it does not honour it either.
	require.NoError(t, m2.Unmount())
	n, err := e.s.Stat(context.Background(), "f")
	require.NoError(t, err)
	require.EqualValues(t, 0o4755, n.UnixMode()&0o7777)
	m3 := e.mount(t)
	require.Equal(t, uint64(unix.ST_NOSUID|unix.ST_NODEV), mountFlags(t, m3.Dir())&(unix.ST_NOSUID|unix.ST_NODEV))
}

// mountFlags are the ST_* flags of the mount at dir.
func mountFlags(t *testing.T, dir string) uint64 {
	t.Helper()
	var st unix.Statfs_t
	require.NoError(t, unix.Statfs(dir, &st))
	return uint64(st.Flags)
}
