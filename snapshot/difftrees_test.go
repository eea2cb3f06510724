package snapshot_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// DiffTrees compares two trees of a session's history where its events
// changed them: the result is what a whole-tree diff says about those
// paths.
func TestDiffTreesScoped(t *testing.T) {
	repo, _, _ := newRepo(t)
	ctx := context.Background()
	s, err := repo.NewSession(ctx, snapshot.SessionOptions{})
	require.NoError(t, err)
	w := func(p, c string) {
		_, err := s.WriteFile(ctx, vfs.MustPath(p), strings.NewReader(c), vfs.WriteOptions{CreateParents: true})
		require.NoError(t, err)
	}
	w("keep/a.txt", "a\n")
	w("dir/b.txt", "old\n")
	w("gone.txt", "bye\n")
	before := s.Info().Seq
	w("dir/b.txt", "new\n")
	w("dir/sub/c.txt", "c\n")
	require.NoError(t, s.Remove(ctx, vfs.MustPath("gone.txt"), vfs.RemoveOptions{}))
	after := s.Info().Seq
	var scope []vfs.Change
	require.NoError(t, s.History(ctx, before, after, func(_ uint64, e *vfs.Event) error {
		scope = append(scope, e.Changes()...)
		return nil
	}))
	a, err := s.TreeAt(ctx, before)
	require.NoError(t, err)
	b, err := s.TreeAt(ctx, after)
	require.NoError(t, err)
	d, err := repo.DiffTrees(ctx, a, b, scope, snapshot.DiffOptions{Text: true})
	require.NoError(t, err)
	var got []string
	for _, e := range d.Entries {
		got = append(got, string(e.Change)+" "+string(e.Path))
	}
	require.Equal(t, []string{"modified dir/b.txt", "added dir/sub", "added dir/sub/c.txt", "deleted gone.txt"}, got)
	require.Equal(t, 2, d.Added)
	require.Contains(t, d.Entries[0].Text, "-old\n+new\n")
	whole, err := repo.DiffTrees(ctx, a, b, nil, snapshot.DiffOptions{})
	require.NoError(t, err)
	require.Len(t, whole.Entries, len(d.Entries), "the whole-tree diff agrees")
}
