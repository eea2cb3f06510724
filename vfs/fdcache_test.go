package vfs_test

import (
	"fmt"
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/vfstest"
)

func openFDs(t *testing.T) int {
	if runtime.GOOS != "linux" {
		// Real Windows has no /proc; under Wine it lists Wine's own
		// descriptors too, which come and go on their own.
		t.Skip("counts descriptors in /proc/self/fd: Linux only")
	}
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(entries)
}

// TestUpperFilesDoNotHoldDescriptors writes many files through handles and
// checks that the session does not keep a descriptor per upper file.
func TestUpperFilesDoNotHoldDescriptors(t *testing.T) {
	defer vfs.SetUpperFDLimit(vfs.SetUpperFDLimit(8))
	s, _ := vfstest.NewSession(t)
	before := openFDs(t)
	const n = 200
	for i := range n {
		h, err := s.OpenFile(ctx, p(fmt.Sprintf("f%03d", i)), os.O_RDWR|os.O_CREATE, 0o644)
		require.NoError(t, err)
		_, err = h.WriteAt([]byte(fmt.Sprintf("content %d", i)), 0)
		require.NoError(t, err)
		require.NoError(t, h.Close())
	}
	require.LessOrEqual(t, openFDs(t)-before, 8+2, "descriptors are bounded by the cache")
	for i := range n {
		require.Equal(t, fmt.Sprintf("content %d", i), read(t, s, fmt.Sprintf("f%03d", i)))
		h, err := s.OpenFile(ctx, p(fmt.Sprintf("f%03d", i)), os.O_RDWR, 0)
		require.NoError(t, err)
		_, err = h.WriteAt([]byte("C"), 0)
		require.NoError(t, err)
		require.NoError(t, h.Close())
	}
	require.Equal(t, "Content 7", read(t, s, "f007"))
}
