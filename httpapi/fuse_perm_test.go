//go:build linux

package httpapi_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
)

// TestFuseMountAllowOtherChecksPermissions mounts through the daemon's
// route with allow_other (finding 4 of issue 11): the mount reports and
// enforces default_permissions, so uid 65534 can neither read a 0600 file
// nor chmod it, while --uid gives a chosen user the owner's rights.
func TestFuseMountAllowOtherChecksPermissions(t *testing.T) {
	if !fuseAvailable() {
		t.Skip("needs /dev/fuse and root")
	}
	s := start(t, newConfig(t))
	ctx := context.Background()
	_, err := s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "o"})
	require.NoError(t, err)
	call(t, s.c, "o", "write_file", `{"path":"secret","inline_text":"TOP SECRET\n"}`, "ok")
	parent, err := os.MkdirTemp("", "vfsd-allow-other-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(parent) })
	require.NoError(t, os.Chmod(parent, 0o755))
	dir := filepath.Join(parent, "m")
	require.NoError(t, os.Mkdir(dir, 0o755))
	asUser := func(uid uint32, name string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = "/"
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	// Without allow_other the kernel checks too, unless asked not to.
	fm, err := s.c.Mount(ctx, "o", api.MountRequest{Dir: dir})
	require.NoError(t, err)
	require.True(t, fm.DefaultPermissions, "default_permissions is the default")
	require.NoError(t, s.c.Unmount(ctx, "o", dir))
	fm, err = s.c.Mount(ctx, "o", api.MountRequest{Dir: dir, NoDefaultPermissions: true})
	require.NoError(t, err)
	require.False(t, fm.DefaultPermissions)
	require.NoError(t, s.c.Unmount(ctx, "o", dir))
	fm, err = s.c.Mount(ctx, "o", api.MountRequest{Dir: dir, AllowOther: true, NoDefaultPermissions: true})
	require.NoError(t, err)
	require.True(t, fm.DefaultPermissions, "allow_other always comes with the kernel's checks")
	require.NoError(t, s.c.Unmount(ctx, "o", dir))

	fm, err = s.c.Mount(ctx, "o", api.MountRequest{Dir: dir, AllowOther: true})
	require.NoError(t, err)
	require.True(t, fm.DefaultPermissions)
	require.NoError(t, os.Chmod(filepath.Join(dir, "secret"), 0o600), "the owner (root) may chmod")
	fi, err := os.Stat(filepath.Join(dir, "secret"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	out, err := asUser(65534, "cat", filepath.Join(dir, "secret"))
	require.Error(t, err, "uid 65534 read a 0600 file: %s", out)
	out, err = asUser(65534, "chmod", "0666", filepath.Join(dir, "secret"))
	require.Error(t, err, "uid 65534 chmod'ed a file it does not own: %s", out)
	require.NoError(t, s.c.Unmount(ctx, "o", dir))

	// The container's user, named as the owner, has the owner's rights.
	fm, err = s.c.Mount(ctx, "o", api.MountRequest{Dir: dir, AllowOther: true, UID: 65534, GID: 65534})
	require.NoError(t, err)
	require.True(t, fm.DefaultPermissions)
	out, err = asUser(65534, "cat", filepath.Join(dir, "secret"))
	require.NoError(t, err, "%s", out)
	require.Equal(t, "TOP SECRET\n", out)
	out, err = asUser(65533, "cat", filepath.Join(dir, "secret"))
	require.Error(t, err, "another uid still cannot: %s", out)
	require.NoError(t, s.c.Unmount(ctx, "o", dir))
}
