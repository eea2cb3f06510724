//go:build linux

package mount_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/mount"
)

// TestReaderCap: a ReaderCap mount leaves GOMAXPROCS high enough that a P
// stays idle while its server's readers wait in read(2), and serves
// requests as before; other mounts (the default) leave GOMAXPROCS alone.
func TestReaderCap(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })

	runtime.GOMAXPROCS(1)
	_, m := mounted(t, map[string]string{"a.txt": "a\n"}, mount.Options{})
	require.Equal(t, 1, runtime.GOMAXPROCS(0), "a mount leaves GOMAXPROCS alone")
	require.NoError(t, m.Unmount())

	_, m = mounted(t, map[string]string{"a.txt": "a\n"}, mount.Options{ReaderCap: true})
	require.GreaterOrEqual(t, runtime.GOMAXPROCS(0), 4, "three readers and an idle P")
	for range 50 {
		data, err := os.ReadFile(filepath.Join(m.Dir(), "a.txt"))
		require.NoError(t, err)
		require.Equal(t, "a\n", string(data))
	}
}
