//go:build linux

package mount_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/posixtest"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/mount"
)

// posixUnsupported lists the go-fuse POSIX tests that exercise what the
// mount deliberately does not do, and why. (Tmpfile is not here: it skips
// itself, finding O_TMPFILE refused with EOPNOTSUPP.)
var posixUnsupported = map[string]string{
	"FcntlFlockLocksFile": "POSIX locks are left to the kernel (no FUSE lock requests): they are " +
		"per process, as POSIX has them, so two descriptors of one process never conflict; the test " +
		"expects open-file-description semantics, which go-fuse's loopback gets from the host's OFD locks",
}

// TestPosix runs go-fuse's POSIX conformance tests, each on a fresh
// session mounted at a fresh directory.
func TestPosix(t *testing.T) {
	requireFUSE(t)
	names := make([]string, 0, len(posixtest.All))
	for name := range posixtest.All {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			if reason, ok := posixUnsupported[name]; ok {
				t.Skip("unsupported: " + reason)
			}
			_, m := mounted(t, nil, mount.Options{})
			posixtest.All[name](t, m.Dir())
		})
	}
}

// TestPosixLocks checks that locks, left to the kernel, exclude other
// processes (flock(2) and POSIX record locks), and that fallocate serves
// what it promises and refuses the rest.
func TestPosixLocks(t *testing.T) {
	_, m := mounted(t, map[string]string{"f": "content"}, mount.Options{})
	path := filepath.Join(m.Dir(), "f")

	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, syscall.Fallocate(int(f.Fd()), 0, 0, 1<<20))
	fi, err := f.Stat()
	require.NoError(t, err)
	require.Equal(t, int64(1<<20), fi.Size(), "mode 0 extends the file")
	require.NoError(t, syscall.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, 2<<20))
	require.ErrorIs(t, syscall.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 0, 4096), syscall.EOPNOTSUPP)

	flock := requireTool(t, "flock")
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX))
	out, err := runErr(t, "", nil, flock, "--nonblock", "--conflict-exit-code", "42", path, "true")
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, out)
	require.Equal(t, 42, exit.ExitCode(), "another process cannot take the lock: %s", out)
	lk := syscall.Flock_t{Type: syscall.F_WRLCK}
	require.NoError(t, syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk))
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_UN))
	run(t, "", nil, flock, "--nonblock", path, "true")
}
