package snapshot_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/tools/toolstest"
	"github.com/vfsd/vfsd/vfs"
)

// TestDiffUnreadableLazyDirectory: a diff that needs a lazily loaded
// directory whose manifest cannot be read fails with io_error, never
// lists it as added, deleted or unchanged.
func TestDiffUnreadableLazyDirectory(t *testing.T) {
	b := toolstest.NewBroken(t, nil)
	empty, err := b.Repo.NewSession(ctx, snapshot.SessionOptions{ID: "empty"})
	require.NoError(t, err)
	broken, err := b.Repo.Get(ctx, b.Snapshot)
	require.NoError(t, err)
	scoped := func(paths ...string) []vfs.Change {
		var out []vfs.Change
		for _, p := range paths {
			out = append(out, vfs.Change{Path: vfs.MustPath(p)})
		}
		return out
	}
	cases := []struct {
		name string
		diff func() (*snapshot.Diff, error)
	}{
		{"snapshot to empty", func() (*snapshot.Diff, error) {
			return b.Repo.Diff(ctx, snapshot.Source{Snapshot: b.Snapshot}, snapshot.Source{Session: empty}, snapshot.DiffOptions{})
		}},
		{"empty to session", func() (*snapshot.Diff, error) {
			return b.Repo.Diff(ctx, snapshot.Source{Session: empty}, snapshot.Source{Session: b.S}, snapshot.DiffOptions{})
		}},
		{"trees, scoped beneath the directory", func() (*snapshot.Diff, error) {
			return b.Repo.DiffTrees(ctx, broken.Tree, empty.Tree(), scoped("bad/g.txt"), snapshot.DiffOptions{})
		}},
		{"trees, the other way", func() (*snapshot.Diff, error) {
			return b.Repo.DiffTrees(ctx, empty.Tree(), b.S.Tree(), scoped("bad/sub/f.txt"), snapshot.DiffOptions{})
		}},
		{"trees, both holding the directory", func() (*snapshot.Diff, error) {
			return b.Repo.DiffTrees(ctx, broken.Tree, b.S.Tree(), scoped("bad/g.txt", "bad/sub"), snapshot.DiffOptions{})
		}},
		{"trees, a name the directory lacks", func() (*snapshot.Diff, error) {
			return b.Repo.DiffTrees(ctx, broken.Tree, empty.Tree(), scoped("bad/none.txt"), snapshot.DiffOptions{})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := c.diff()
			require.ErrorIs(t, err, vfs.ErrIO, "%+v", d)
			require.ErrorContains(t, err, "reading a directory of the snapshot failed")
		})
	}
}
