//go:build linux

package mount_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/mount"
	"github.com/vfsd/vfsd/tools/toolstest"
)

// TestUnreadableLazyDirectory: through the FUSE mount, in a subprocess,
// a lazily loaded directory whose manifest cannot be read fails lookups,
// listings and creations with EIO, never ENOENT or an empty listing, and
// the rest of the mount works.
func TestUnreadableLazyDirectory(t *testing.T) {
	requireFUSE(t)
	b := toolstest.NewBroken(t, nil)
	m, err := mount.New(b.S, t.TempDir(), mount.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.Unmount()) })
	before := b.Fingerprint()
	cases := []struct {
		name string
		args []string
	}{
		{"stat", []string{"stat", "bad/g.txt"}},
		{"stat a name bad lacks", []string{"stat", "bad/none.txt"}},
		{"readdir", []string{"ls", "bad"}},
		{"read", []string{"cat", "bad/sub/f.txt"}},
		{"create", []string{"sh", "-c", "echo x > bad/new.txt"}},
		{"mkdir", []string{"mkdir", "bad/newdir"}},
		{"find", []string{"find", "."}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := runErr(t, m.Dir(), nil, c.args[0], c.args[1:]...)
			require.Error(t, err, "%v:\n%s", c.args, out)
			require.Contains(t, out, "Input/output error", "%v", c.args)
			require.NotContains(t, out, "No such file")
		})
	}
	require.Equal(t, toolstest.BrokenFiles[b.GoodFile], run(t, m.Dir(), nil, "cat", b.GoodFile))
	require.Equal(t, before, b.Fingerprint(), "the session is unchanged")
}
