package vfs_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/vfstest"
)

// TestNonCanonicalPathsAreRefused: a Path that is not canonical ("/x",
// "a//b", "a/../b") reaching the Go API must be refused before it is
// journaled. Accepted, it made a journal that the session could not replay:
// the next open failed and the whole session was lost.
func TestNonCanonicalPathsAreRefused(t *testing.T) {
	bad := []vfs.Path{"/x", "x/", "a//b", "a/./b", "a/../b", "..", "."}
	for _, p := range bad {
		t.Run(string(p), func(t *testing.T) {
			blobs := vfstest.NewBlobs()
			opts := vfstest.Options(t, blobs)
			s, err := vfs.Create(ctx, opts, vfs.Tree{}, "")
			require.NoError(t, err)
			_, err = s.Mkdir(ctx, "a", vfs.MkdirOptions{})
			require.NoError(t, err)
			before := s.Info().Seq

			attempts := map[string]error{}
			_, attempts["mkdir"] = s.Mkdir(ctx, p, vfs.MkdirOptions{})
			_, attempts["write"] = s.WriteFile(ctx, p, strings.NewReader("x"), vfs.WriteOptions{})
			attempts["rename to"] = s.Rename(ctx, "a", p, vfs.RenameOptions{})
			attempts["remove"] = s.Remove(ctx, p, vfs.RemoveOptions{Recursive: true})
			for name, err := range attempts {
				require.Error(t, err, name)
				require.Equal(t, vfs.CodeInvalidPath, vfs.CodeOf(err), "%s: %v", name, err)
			}
			require.Equal(t, before, s.Info().Seq, "nothing was journaled")

			s2 := reopen(t, s, opts)
			n, ok, _ := s2.Tree().Lookup("a")
			require.True(t, ok)
			require.True(t, n.IsDir())
		})
	}
}
