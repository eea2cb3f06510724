//go:build unix && (!linux || vfsd_osroot)

package hostmount

import (
	"net"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestImportSpecialFilesSkipped: the os.Root layer skips fifos and
// sockets, and says why.
func TestImportSpecialFilesSkipped(t *testing.T) {
	e := newEnv(t)
	e.write("p/ok", "ok")
	require.NoError(t, syscall.Mkfifo(filepath.Join(e.root, "p/fifo"), 0o644))
	l, err := net.Listen("unix", filepath.Join(e.root, "p/sock"))
	require.NoError(t, err)
	defer l.Close()
	got, rep := e.load(Mount{HostPath: filepath.Join(e.root, "p"), MountPath: "/"})
	require.Equal(t, map[string]string{"": "dir", "ok": "ok"}, got)
	require.Equal(t, map[string]string{e.host("p/fifo"): SkipSpecialHere, e.host("p/sock"): SkipSpecialHere}, skipsOf(rep))
}
