package vfs_test

import (
	"io/fs"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/vfs"
)

// TestKindFromModes: KindFromUnix and KindFromFileMode invert UnixMode and
// FileMode for every kind, whatever the permission bits; a type no node
// has is no kind.
func TestKindFromModes(t *testing.T) {
	for k := vfs.KindFile; k <= vfs.KindBlockDev; k++ {
		n := vfs.Node{Kind: k, Mode: 0o755 | fs.ModeSetuid | fs.ModeSticky}
		require.Equal(t, k, vfs.KindFromUnix(n.UnixMode()), "%s", k)
		require.Equal(t, k, vfs.KindFromFileMode(n.FileMode()), "%s", k)
	}
	require.Equal(t, vfs.Kind(0), vfs.KindFromUnix(0o644), "no type bits")
	require.Equal(t, vfs.Kind(0), vfs.KindFromUnix(0o170000), "S_IFMT itself")
	require.Equal(t, vfs.Kind(0), vfs.KindFromFileMode(fs.ModeIrregular))
	require.Equal(t, vfs.KindFile, vfs.KindFromFileMode(0o600))
}
