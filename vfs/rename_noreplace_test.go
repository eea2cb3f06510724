package vfs_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/vfstest"
)

// TestRenameNoReplaceExistingSelf: NoReplace fails with already_exists
// whenever the destination exists, as renameat2(RENAME_NOREPLACE) does,
// even when the destination is the source itself or another name of its
// node (where a plain rename does nothing). Found by TestModel.
func TestRenameNoReplaceExistingSelf(t *testing.T) {
	s, err := vfs.Create(ctx, vfstest.Options(t, vfstest.NewBlobs()), vfs.Tree{}, "")
	require.NoError(t, err)
	defer s.Close()
	write(t, s, "f", "x")
	_, err = s.Link(ctx, p("f"), p("g"))
	require.NoError(t, err)
	_, err = s.Mkdir(ctx, p("d"), vfs.MkdirOptions{})
	require.NoError(t, err)

	for _, c := range []struct{ from, to string }{{"f", "f"}, {"f", "g"}, {"g", "f"}, {"d", "d"}} {
		before := s.Tree()
		err := s.Rename(ctx, p(c.from), p(c.to), vfs.RenameOptions{NoReplace: true})
		require.ErrorIs(t, err, vfs.ErrExists, "rename %s -> %s without replacing", c.from, c.to)
		require.Equal(t, before.Encode(), s.Tree().Encode(), "a refused rename changes nothing")
		// Without NoReplace it is still a successful no-op.
		require.NoError(t, s.Rename(ctx, p(c.from), p(c.to), vfs.RenameOptions{}))
	}
	// A missing source is still not_found, not already_exists.
	err = s.Rename(ctx, p("missing"), p("f"), vfs.RenameOptions{NoReplace: true})
	require.ErrorIs(t, err, vfs.ErrNotFound)
	n, err := s.Stat(ctx, p("f"))
	require.NoError(t, err)
	require.Equal(t, uint32(2), n.Nlink)
}
