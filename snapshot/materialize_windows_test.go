package snapshot

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/vfstest"
)

// TestLinksToDir: a link is made a directory link on Windows when its
// target, resolved in the tree being materialized, is a directory.
func TestLinksToDir(t *testing.T) {
	ctx := context.Background()
	s, _ := vfstest.NewSession(t)
	_, err := s.Mkdir(ctx, vfs.MustPath("a/b"), vfs.MkdirOptions{Parents: true})
	require.NoError(t, err)
	_, err = s.WriteFile(ctx, vfs.MustPath("a/f.txt"), strings.NewReader("x"), vfs.WriteOptions{})
	require.NoError(t, err)
	m := &materializer{tree: s.Tree()}
	for _, c := range []struct {
		link, target string
		dir          bool
	}{
		{"a/l", "b", true},
		{"a/l", "./b/", true},
		{"a/l", "f.txt", false},
		{"a/l", "missing", false},
		{"a/l", "..", true},
		{"l", ".", true},
		{"l", "a", true},
		{"l", "a/b", true},
		{"l", `a\b`, true},
		{"a/b/l", "../../a", true},
		{"l", "../outside", false},
		{"a/l", "../../outside", false},
		{"l", "/abs", false},
		{"l", `C:\abs`, false},
		{"l", "", false},
	} {
		require.Equal(t, c.dir, m.linksToDir(vfs.MustPath(c.link), c.target), "%s -> %s", c.link, c.target)
	}
}
