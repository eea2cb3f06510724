package mount_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/mount"
	"github.com/vfsd/vfsd/vfs"
)

// TestMmapCoherence: a shared mapping of a file in the mount sees a tool's
// rewrite of the file (the kernel's pages of it are invalidated), and what a
// program writes through a shared writable mapping reaches the session once
// it syncs the mapping (msync), as on a local file system.
func TestMmapCoherence(t *testing.T) {
	const size = 8192
	e, m := mounted(t, map[string]string{"map.bin": strings.Repeat("a", size)}, mount.Options{})
	path := filepath.Join(m.Dir(), "map.bin")

	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	mem, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	require.NoError(t, err)
	defer syscall.Munmap(mem)
	require.Equal(t, byte('a'), mem[0])
	require.Equal(t, byte('a'), mem[size-1])

	// A tool rewrites the file, same size: the mapping shows the new bytes.
	callOK(t, e, "write_file", map[string]any{"path": "map.bin", "inline_text": strings.Repeat("b", size)})
	require.Eventually(t, func() bool { return mem[0] == 'b' && mem[size-1] == 'b' }, 5*time.Second, 10*time.Millisecond,
		"the mapping sees the tool's rewrite")

	// The program writes through the mapping and syncs it: the session has it.
	copy(mem[100:], "written through mmap")
	require.NoError(t, unix.Msync(mem, unix.MS_SYNC))
	require.NoError(t, f.Sync())
	got, _, err := e.S.ReadFile(t.Context(), vfs.MustPath("map.bin"))
	require.NoError(t, err)
	require.Len(t, got, size)
	require.Equal(t, "written through mmap", string(got[100:120]))
	require.Equal(t, strings.Repeat("b", 100), string(got[:100]))
}
