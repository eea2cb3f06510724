//go:build linux

package mount_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/vfs"
)

// TestAllowOtherEnforcesPermissions is the attack of issue 11 (finding 4):
// a mount that lets other users in must still hold them to the files'
// permission bits. Before, allow_other came without default_permissions,
// the FUSE server checked nothing, and uid 65534 read a root 0600 file and
// chmod'ed it.
func TestAllowOtherEnforcesPermissions(t *testing.T) {
	// sharedMount: allow_other, at a directory the other user can reach.
	e, m := sharedMount(t, map[string]string{"secret": "TOP SECRET\n", "public": "hello\n"})
	_, err := e.S.Chmod(context.Background(), vfs.MustPath("secret"), 0o600)
	require.NoError(t, err)
	dir := m.Dir()
	asNobody := func(name string, args ...string) (string, error) { return runAs(t, 65534, 65534, name, args...) }
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
