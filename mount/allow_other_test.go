package mount_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/mount"
	"github.com/vfsd/vfsd/tools/toolstest"
	"github.com/vfsd/vfsd/vfs"
)

// TestAllowOtherEnforcesPermissions is the attack of issue 11 (finding 4):
// a mount that lets other users in must still hold them to the files'
// permission bits. Before, allow_other came without default_permissions,
// the FUSE server checked nothing, and uid 65534 read a root 0600 file and
// chmod'ed it.
func TestAllowOtherEnforcesPermissions(t *testing.T) {
	requireFUSE(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root: the attacker runs as uid 65534")
	}
	e := toolstest.New(t, nil, map[string]string{"secret": "TOP SECRET\n", "public": "hello\n"})
	_, err := e.S.Chmod(context.Background(), vfs.MustPath("secret"), 0o600)
	require.NoError(t, err)
	// The mount point must be reachable by the other user: t.TempDir's
	// parents are 0700.
	parent, err := os.MkdirTemp("", "vfsd-allow-other-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(parent) })
	require.NoError(t, os.Chmod(parent, 0o755))
	dir := filepath.Join(parent, "m")
	require.NoError(t, os.Mkdir(dir, 0o755))
	m, err := mount.New(e.S, dir, mount.Options{AllowOther: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.Unmount()) })

	asNobody := func(name string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = "/"
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := asNobody("cat", filepath.Join(dir, "public"))
	require.NoError(t, err, "allow_other lets another user read a 0644 file: %s", out)
	require.Equal(t, "hello\n", out)

	out, err = asNobody("cat", filepath.Join(dir, "secret"))
	require.Error(t, err, "uid 65534 read a root 0600 file: %s", out)
	require.Contains(t, out, "Permission denied")
	out, err = asNobody("chmod", "0666", filepath.Join(dir, "secret"))
	require.Error(t, err, "uid 65534 chmod'ed a root file: %s", out)
	out, err = asNobody("touch", filepath.Join(dir, "planted"))
	require.Error(t, err, "uid 65534 created a file in a root 0755 directory: %s", out)

	n, err := e.S.Stat(context.Background(), vfs.MustPath("secret"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), n.Mode.Perm())
	_, err = e.S.Stat(context.Background(), vfs.MustPath("planted"))
	require.Error(t, err)
}
