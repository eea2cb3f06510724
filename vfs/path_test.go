package vfs

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestParsePath(t *testing.T) {
	long := strings.Repeat("a", 256)
	tests := []struct {
		in   string
		want Path
		err  string // substring of the error; "" means success
	}{
		{in: "a", want: "a"},
		{in: "src/a.go", want: "src/a.go"},
		{in: "./src//a.go", want: "src/a.go"},
		{in: "/src/a.go", want: "src/a.go"},
		{in: "//src///a.go/", want: "src/a.go"},
		{in: "/", want: Root},
		{in: ".", want: Root},
		{in: "./.", want: Root},
		{in: "a/./b/.", want: "a/b"},
		{in: "a\nb", want: "a\nb"},
		{in: "dir with space/ünïcødé", want: "dir with space/ünïcødé"},
		{in: `back\slash`, want: `back\slash`},
		{in: "...", want: "..."},
		{in: "..a/b..", want: "..a/b.."},
		{in: strings.Repeat("a", 255), want: Path(strings.Repeat("a", 255))},
		{in: "", err: "empty"},
		{in: "..", err: `".."`},
		{in: "../etc/passwd", err: `".."`},
		{in: "a/../../b", err: `".."`},
		{in: "/a/..", err: `".."`},
		{in: "a/..", err: `".."`},
		{in: "a\x00b", err: "NUL"},
		{in: "a/\xff", err: "UTF-8"},
		{in: long, err: "255"},
		{in: "a/" + long, err: "255"},
		{in: strings.Repeat("a/", 2048), err: "4095"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParsePath(tt.in)
			if tt.err != "" {
				require.Error(t, err)
				require.ErrorIs(t, err, ErrInvalidPath)
				require.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestPathHelpers(t *testing.T) {
	p := MustPath("a/b/c.txt")
	require.Equal(t, Path("a/b"), p.Parent())
	require.Equal(t, "c.txt", p.Base())
	require.Equal(t, 3, p.Depth())
	require.Equal(t, []string{"a", "b", "c.txt"}, p.Segments())
	require.Equal(t, "/a/b/c.txt", p.String())
	require.Equal(t, "/", Root.String())
	require.Equal(t, Root, MustPath("a").Parent())
	require.Equal(t, Root, Root.Parent())
	require.Equal(t, Path("x"), Root.Join("x"))
	require.Equal(t, Path("a/x"), MustPath("a").Join("x"))

	require.True(t, p.HasPrefix("a/b"))
	require.True(t, p.HasPrefix(Root))
	require.True(t, p.HasPrefix(p))
	require.False(t, MustPath("a/bc").HasPrefix("a/b"), "prefix must match whole segments")
	require.False(t, MustPath("root_evil").HasPrefix("root"))

	require.Equal(t, Path("x/y/c.txt"), p.Rebase("a/b", "x/y"))
	require.Equal(t, Path("b/c.txt"), p.Rebase("a", Root))
	require.Equal(t, Path("z/a/b/c.txt"), p.Rebase(Root, "z"))
	require.Equal(t, Path("q"), p.Rebase(p, "q"))

	var anc []Path
	p.Ancestors(func(a Path) bool { anc = append(anc, a); return true })
	require.Equal(t, []Path{"a/b", "a", Root}, anc)
}

func TestComparePathsKeepsSubtreesTogether(t *testing.T) {
	paths := []Path{"a-b", "a/x", "a", "a.txt", Root, "a/x/y", "b", "a/z", "a0"}
	slices.SortFunc(paths, ComparePaths)
	require.Equal(t, []Path{Root, "a", "a/x", "a/x/y", "a/z", "a-b", "a.txt", "a0", "b"}, paths)
	require.Equal(t, 0, ComparePaths("a/b", "a/b"))
	// subtreeEnd sorts after the whole subtree and before the next sibling.
	require.Equal(t, 1, ComparePaths(subtreeEnd("a"), "a/zzz/zzz"))
	require.Equal(t, -1, ComparePaths(subtreeEnd("a"), "a-b"))
	require.Equal(t, -1, ComparePaths(subtreeEnd("a"), "a\x02"))
}

// FuzzParsePath proves that no input canonicalises to a path outside the
// session root, and that canonical paths are stable and well formed.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"a", "/a/b", "./a//b/", "..", "a/../b", "a\x00", "\xff", "/", ".", "a/./.", "....//..", "/..//../"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		p, err := ParsePath(in)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidPath)
			return
		}
		s := string(p)
		require.True(t, utf8.ValidString(s))
		require.NotContains(t, s, "\x00")
		require.False(t, strings.HasPrefix(s, "/") || strings.HasSuffix(s, "/"), "slash at an end: %q", s)
		require.LessOrEqual(t, len(s), MaxPathBytes)
		for _, seg := range p.Segments() {
			require.NotContains(t, []string{"", ".", ".."}, seg)
			require.LessOrEqual(t, len(seg), MaxSegmentBytes)
		}
		again, err := ParsePath(p.String())
		require.NoError(t, err)
		require.Equal(t, p, again, "the displayed form must parse back to the same path")
		// Joined under a root directory it stays beneath that directory.
		root := filepath.FromSlash("/srv/session")
		joined := filepath.Join(root, s)
		require.True(t, joined == root || strings.HasPrefix(joined, root+string(filepath.Separator)), "%q escapes to %q", in, joined)
	})
}
