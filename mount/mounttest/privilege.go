//go:build linux

package mounttest

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/mount"
	"github.com/vfsd/vfsd/vfs"
)

// NobodyUID is the unprivileged host user the privilege attacks run as.
const NobodyUID = 65534

// DirFactory mounts a fresh, empty session at dir, an empty directory
// every host user can reach, as the daemon mounts it by default: other
// users let in (for the FUSE mount, allow_other: the only way another
// user reaches it) and set-ID bits, file capabilities and device nodes
// not honoured unless allow (the admin's opt-in) says so. It unmounts at
// t's cleanup and skips t where the backend cannot mount.
type DirFactory func(t *testing.T, dir string, allow bool) (*vfs.Session, mount.Backend)

// RunPrivilegeAttacks is the finding "the mount has no nosuid,nodev"
// replayed against a backend. uid 0 inside the mount (anyone who is root
// there: a vfsd run command, even without capabilities) makes a
// set-user-ID-root copy of id, a copy of cat with a file capability and a
// device node; then nobody on the host runs the copies through the mount
// path and root opens the device through it. The mount must keep all
// three as data (pjdfstest and tar need chmod 4755, setxattr and mknod to
// stick) but honour none: nobody's euid stays its own, it gains no
// capability, and the device does not open (EACCES). With the admin's
// opt-in (allow) they are honoured, as on any mount without nosuid,nodev.
// It needs root and setpriv(1), and skips without them.
func RunPrivilegeAttacks(t *testing.T, mk DirFactory) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the attack makes root-owned set-ID files and device nodes")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("needs setpriv(1) (util-linux) to run a program as nobody")
	}
	for _, bin := range []string{"/usr/bin/id", "/usr/bin/cat"} {
		if _, err := os.Stat(bin); err != nil {
			t.Skipf("needs %s to copy", bin)
		}
	}
	a := attacker{setpriv: setpriv}
	t.Run("SetuidRoot", func(t *testing.T) {
		_, b := mk(t, reachableDir(t), false)
		id := a.setIDCopy(t, b)
		require.Equal(t, "65534", a.asNobody(t, id, "-u"), "nobody ran a set-user-ID-root file in the mount as root")
		require.Equal(t, "65534", a.asNobody(t, id, "-g"), "nobody ran a set-group-ID-root file in the mount with group root")
	})
	t.Run("FileCapability", func(t *testing.T) {
		_, b := mk(t, reachableDir(t), false)
		cat := a.capCopy(t, b)
		require.Equal(t, "0000000000000000", capEff(t, a.asNobody(t, cat, "/proc/self/status")),
			"nobody gained the capability of a file in the mount")
	})
	t.Run("DeviceNode", func(t *testing.T) {
		_, b := mk(t, reachableDir(t), false)
		dev := devNode(t, b)
		f, err := os.OpenFile(dev, os.O_RDWR, 0)
		if err == nil {
			f.Close()
		}
		require.ErrorIs(t, err, unix.EACCES, "a device node in the mount opened")
	})
	t.Run("MountFlags", func(t *testing.T) {
		_, b := mk(t, reachableDir(t), false)
		var st unix.Statfs_t
		require.NoError(t, unix.Statfs(b.Dir(), &st))
		require.NotZero(t, st.Flags&unix.ST_NOSUID, "the mount is not nosuid: %#x", st.Flags)
		require.NotZero(t, st.Flags&unix.ST_NODEV, "the mount is not nodev: %#x", st.Flags)
	})
	// The admin's opt-in does lift both: the options reach the mount.
	t.Run("AdminOptIn", func(t *testing.T) {
		_, b := mk(t, reachableDir(t), true)
		require.Equal(t, "0", a.asNobody(t, a.setIDCopy(t, b), "-u"), "AllowSetID did not lift nosuid")
		f, err := os.OpenFile(devNode(t, b), os.O_RDWR, 0)
		require.NoError(t, err, "AllowDevices did not lift nodev")
		f.Close()
	})
}

// attacker runs the attack's steps.
type attacker struct {
	setpriv string
}

// reachableDir is an empty directory beneath directories every user may
// traverse (t.TempDir's are 0700), removed at t's cleanup after the
// mount in it is gone.
func reachableDir(t *testing.T) string {
	t.Helper()
	parent, err := os.MkdirTemp("", "vfsd-privattack-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(parent) }) // runs after the factory's unmount
	require.NoError(t, os.Chmod(parent, 0o755))
	dir := filepath.Join(parent, "mnt")
	require.NoError(t, os.Mkdir(dir, 0o755))
	return dir
}

// copyInto copies host file src into the mount as name, root-owned.
func copyInto(t *testing.T, b mount.Backend, src, name string) string {
	t.Helper()
	in, err := os.Open(src)
	require.NoError(t, err)
	defer in.Close()
	dst := filepath.Join(b.Dir(), name)
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, errors.Join(err, out.Close()))
	require.NoError(t, os.Chown(dst, 0, 0))
	return dst
}

// setIDCopy makes a set-user-ID and set-group-ID root copy of id in the
// mount, and checks the bits are kept, in the mount and in the session.
func (a attacker) setIDCopy(t *testing.T, b mount.Backend) string {
	t.Helper()
	id := copyInto(t, b, "/usr/bin/id", "id")
	require.NoError(t, unix.Chmod(id, 0o6755))
	st := lstat(t, id)
	require.EqualValues(t, 0o6755, st.Mode&0o7777, "chmod 6755 did not stick in the mount")
	require.Zero(t, st.Uid)
	require.NoError(t, b.Sync(context.Background()))
	return id
}

// capCopy makes a copy of cat in the mount with the file capability
// CAP_DAC_READ_SEARCH (permitted and effective), and checks it is kept.
func (a attacker) capCopy(t *testing.T, b mount.Backend) string {
	t.Helper()
	cat := copyInto(t, b, "/usr/bin/cat", "cat")
	// struct vfs_cap_data, revision 2: magic_etc, then permitted and
	// inheritable for capabilities 0-31 and 32-63, little-endian.
	const capRevision2, capFlagsEffective, capDacReadSearch = 0x02000000, 0x1, 2
	v := make([]byte, 20)
	binary.LittleEndian.PutUint32(v[0:], capRevision2|capFlagsEffective)
	binary.LittleEndian.PutUint32(v[4:], 1<<capDacReadSearch)
	require.NoError(t, unix.Setxattr(cat, "security.capability", v, 0))
	got := make([]byte, 64)
	n, err := unix.Getxattr(cat, "security.capability", got)
	require.NoError(t, err, "the file capability did not stick in the mount")
	require.Equal(t, v, got[:n])
	return cat
}

// devNode makes a character device 1,3 (the host's /dev/null) in the
// mount, mode 0666, and checks it is kept.
func devNode(t *testing.T, b mount.Backend) string {
	t.Helper()
	dev := filepath.Join(b.Dir(), "null")
	require.NoError(t, unix.Mknod(dev, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))))
	require.NoError(t, unix.Chmod(dev, 0o666))
	st := lstat(t, dev)
	require.EqualValues(t, unix.S_IFCHR, st.Mode&unix.S_IFMT, "mknod did not stick in the mount")
	require.Equal(t, unix.Mkdev(1, 3), st.Rdev)
	return dev
}

// asNobody runs program with args as nobody (uid and gid 65534, no
// supplementary groups, no capabilities) and returns its output, trimmed.
// setpriv and sh are host binaries: it is sh that executes the program
// from the mount, never this process (which may serve the mount: go-fuse's
// deadlocks).
func (a attacker) asNobody(t *testing.T, program string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// setpriv keeps its capabilities across the uid change
	// (PR_SET_KEEPCAPS) until it executes: the shell it runs has none, and
	// executes the program as nobody through and through.
	cmd := exec.CommandContext(ctx, a.setpriv, append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "--",
		"/bin/sh", "-c", `exec "$0" "$@"`, program}, args...)...)
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "as nobody: %s %v:\n%s", program, args, out)
	return strings.TrimSpace(string(out))
}

// capEff is the CapEff field of a /proc/PID/status.
func capEff(t *testing.T, status string) string {
	t.Helper()
	for _, l := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(l, "CapEff:"); ok {
			return strings.TrimSpace(v)
		}
	}
	require.Fail(t, "no CapEff in the status", status)
	return ""
}
