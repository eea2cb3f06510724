package snapshot_test

// The local store's tests that need Linux: O_TMPFILE, tmpfs and the umask.

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/snapshot/storetest"
)

// tmpfileSupported reports whether dir's filesystem supports O_TMPFILE (and
// /proc, to link such a file, is there).
func tmpfileSupported(t *testing.T, dir string) bool {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o444)
	if err != nil {
		t.Logf("no O_TMPFILE in %s: %v", dir, err)
		return false
	}
	unix.Close(fd)
	_, err = os.Stat("/proc/self/fd")
	return err == nil
}

// TestLocalPutTemporaryFiles checks which temporary files Puts of new
// content use: unnamed ones leave tmp/ untouched; named ones do not. By
// default, Put uses unnamed files on tmpfs.
func TestLocalPutTemporaryFiles(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tf      snapshot.LocalTempFiles
		tmpfs   bool // store in /dev/shm
		unnamed bool // expected
	}{
		{"unnamed", snapshot.LocalTempUnnamed, false, true},
		{"named", snapshot.LocalTempNamed, false, false},
		{"auto/tmpfs", snapshot.LocalTempAuto, true, true},
		{"named/tmpfs", snapshot.LocalTempNamed, true, false},
	} {
		for _, size := range []int{100, 3 << 20} {
			t.Run(fmt.Sprintf("%s/%d", tc.name, size), func(t *testing.T) {
				dir := t.TempDir()
				if tc.tmpfs {
					var sfs unix.Statfs_t
					if err := unix.Statfs("/dev/shm", &sfs); err != nil || sfs.Type != unix.TMPFS_MAGIC {
						t.Skip("/dev/shm is not a tmpfs")
					}
					var err error
					dir, err = os.MkdirTemp("/dev/shm", "vfsd-store-test-")
					require.NoError(t, err)
					t.Cleanup(func() { os.RemoveAll(dir) })
				}
				tempFiles(t, tc.tf)
				s := openLocal(t, dir)
				// Temporary files go to tmp/xx/ subdirectories, made on first
				// use; make them all now to see which the Puts touch.
				var subs []string
				for i := range 256 {
					sub := filepath.Join(dir, "tmp", fmt.Sprintf("%02x", i))
					require.NoError(t, os.Mkdir(sub, 0o700))
					subs = append(subs, sub)
				}
				past := time.Unix(1e9, 0)
				for _, sub := range subs {
					require.NoError(t, os.Chtimes(sub, past, past))
				}
				for _, opts := range []snapshot.PutOptions{{}, {Deferred: true}} {
					data := storetest.Random(uint64(size), size)
					if opts.Deferred {
						data[0]++
					}
					storetest.Put(t, s, snapshot.Blobs, data, opts)
				}
				touched := 0
				for _, sub := range subs {
					fi, err := os.Stat(sub)
					require.NoError(t, err)
					if !fi.ModTime().Equal(past) {
						touched++
					}
					left, err := os.ReadDir(sub)
					require.NoError(t, err)
					require.Empty(t, left)
				}
				if tc.unnamed {
					require.Zero(t, touched, "tmp/ is untouched")
				} else {
					require.NotZero(t, touched, "named temporary files were created in tmp/")
				}
				require.Len(t, storetest.ListAll(t, s, snapshot.Blobs), 2)
			})
		}
	}
}

// TestLocalObjectModeUnderUmask checks that objects are 0444 whatever the
// umask.
func TestLocalObjectModeUnderUmask(t *testing.T) {
	bothTemps(t, func(t *testing.T) {
		old := unix.Umask(0o077)
		defer unix.Umask(old)
		s := openLocal(t, t.TempDir())
		for _, size := range []int{10, 3 << 20} {
			h := storetest.Put(t, s, snapshot.Blobs, storetest.Random(13, size), snapshot.PutOptions{})
			fi, err := os.Stat(s.ObjectPath(snapshot.Blobs, h))
			require.NoError(t, err)
			require.Equal(t, os.FileMode(0o444), fi.Mode().Perm())
		}
	})
}
