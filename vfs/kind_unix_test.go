//go:build unix

package vfs_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/vfs"
)

// TestKindFromUnixMatchesSystem: the engine's file type bits are this
// system's S_IF* constants.
func TestKindFromUnixMatchesSystem(t *testing.T) {
	for mode, k := range map[uint32]vfs.Kind{
		unix.S_IFREG: vfs.KindFile, unix.S_IFDIR: vfs.KindDir, unix.S_IFLNK: vfs.KindSymlink, unix.S_IFIFO: vfs.KindFifo,
		unix.S_IFSOCK: vfs.KindSocket, unix.S_IFCHR: vfs.KindCharDev, unix.S_IFBLK: vfs.KindBlockDev,
	} {
		require.Equal(t, k, vfs.KindFromUnix(mode|0o644), "%o", mode)
		require.Equal(t, mode, vfs.Node{Kind: k}.UnixMode()&unix.S_IFMT, "%s", k)
	}
	require.EqualValues(t, unix.S_IFMT, 0o170000)
}
