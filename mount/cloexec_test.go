//go:build linux

package mount_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/mount"
)

// TestFuseDeviceNotInherited: a program the serving process starts — rg
// from the daemon, the sandboxed command of vfsd run's embedded daemon, a
// test's client — inherits no descriptor of /dev/fuse. With one it could
// read and answer the mount's FUSE requests (forge any file's content), and
// the mount outlives the server as long as it runs: a process that then
// closes a file of the mount waits for an answer nobody gives, for ever.
func TestFuseDeviceNotInherited(t *testing.T) {
	mounted(t, map[string]string{"a.txt": "a"}, mount.Options{})
	// The child lists its own descriptors; it does not touch the mount.
	out, err := exec.Command("/bin/sh", "-c", `for f in /proc/self/fd/*; do readlink "$f"; done; true`).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.NotContains(t, string(out), "/dev/fuse", "descriptors of the child:\n%s", strings.TrimSpace(string(out)))
}
