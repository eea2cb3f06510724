package vfs_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/vfs"
)

func TestResolveLinkTarget(t *testing.T) {
	for _, c := range []struct {
		dir, target string
		want        vfs.Path
		escapes     bool
	}{
		{"a", "b", "a/b", false},
		{"a", "b/../c", "a/c", false},
		{"a", "../x", "x", false},
		{"a", "../../x", "x", true},
		{"", "..", vfs.Root, true},
		{"a/b", "/etc/passwd", "etc/passwd", true},
		{"a", "/", vfs.Root, true},
	} {
		got, escapes, err := vfs.ResolveLinkTarget(vfs.Path(c.dir), c.target)
		require.NoError(t, err, "%s -> %s", c.dir, c.target)
		require.Equal(t, c.want, got, "%s -> %s", c.dir, c.target)
		require.Equal(t, c.escapes, escapes, "%s -> %s", c.dir, c.target)
	}
}
