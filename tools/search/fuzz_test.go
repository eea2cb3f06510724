package search

import (
	"errors"
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/vfs"
)

// FuzzGlob globs arbitrary patterns over trees of arbitrary paths (one per
// line; a trailing '/' makes a directory). Nothing may panic; an invalid
// pattern must give a *PatternError; a valid one must list exactly what
// matching every node of the tree with doublestar lists, so the walk's
// shortcuts (starting beneath the pattern's literal directories) never
// change the result.
func FuzzGlob(f *testing.F) {
	tree := "a.go\nsrc/b.go\nsrc/pkg/c.go\nsrc/pkg/\ndocs/x.md\n.hidden/y\nsp ace/[z].txt\nünï/ç.go\n"
	for _, pat := range []string{
		"*.go", "**/*.go", "src/**", "src/pkg/*.go", "{src,docs}/**/*.{go,md}", "[a-c]*", "[!a]*",
		`sp ace/\[z\].txt`, "**", "*", "src/*/", "src//b.go", "./src/b.go", "/src/b.go", "src/../a.go",
		"[", "{", "}", `\`, "[]", "a/**/b", "**/", "ü*/*", "src/pkg", "src/p?g/*", "**/pkg/**/c.go",
	} {
		f.Add(pat, tree, "")
		f.Add(pat, tree, "src")
	}
	f.Fuzz(func(t *testing.T, pattern, paths, base string) {
		b := vfs.NewTreeBuilder(vfs.Node{Kind: vfs.KindDir, Mode: vfs.DefaultDirMode, Ino: 1})
		ino := uint64(1)
		add := func(p vfs.Path, kind vfs.Kind) {
			if n, ok := b.Get(p); ok && (n.IsDir() || kind != vfs.KindDir) {
				return
			}
			ino++
			b.Set(p, vfs.Node{Kind: kind, Mode: vfs.DefaultFileMode, Ino: ino, Updated: int64(ino % 3)})
		}
		for _, line := range strings.Split(paths, "\n") {
			p, err := vfs.ParsePath(line)
			if err != nil || p == vfs.Root {
				continue
			}
			// Parents become directories (replacing files of the same name).
			segs := p.Segments()
			dir := vfs.Root
			for _, seg := range segs[:len(segs)-1] {
				dir = dir.Join(seg)
				add(dir, vfs.KindDir)
			}
			if strings.HasSuffix(line, "/") {
				add(p, vfs.KindDir)
			} else {
				add(p, vfs.KindFile)
			}
		}
		tr := b.Tree()
		basePath, err := vfs.ParsePath(base)
		if err != nil {
			basePath = vfs.Root
		}
		if _, ok, _ := tr.Lookup(basePath); !ok {
			basePath = vfs.Root
		}
		for _, dirs := range []bool{false, true} {
			res, err := Glob(ctx, tr, GlobOptions{Pattern: pattern, Base: basePath, Dirs: dirs, Sort: SortByPath})
			if pattern == "" || !doublestar.ValidatePattern(pattern) || braceProduct(pattern) > maxBraceAlternatives {
				var pe *PatternError
				require.True(t, errors.As(err, &pe), "pattern %q: %v", pattern, err)
				require.Equal(t, KindInvalidPattern, pe.Kind)
				return
			}
			require.NoError(t, err)
			var want []vfs.Path
			baseNode, _, _ := tr.Lookup(basePath)
			_ = tr.Walk(basePath, func(p vfs.Path, n vfs.Node) error {
				var rel string
				switch {
				case !baseNode.IsDir():
					rel = p.Base()
				case p == basePath:
					return nil
				case basePath == vfs.Root:
					rel = string(p)
				default:
					rel = string(p[len(basePath)+1:])
				}
				if (dirs || !n.IsDir()) && doublestar.MatchUnvalidated(pattern, rel) {
					want = append(want, p)
				}
				return nil
			})
			var got []vfs.Path
			for _, e := range res.Entries {
				got = append(got, e.Path)
			}
			require.Equal(t, want, got, "pattern %q base %q dirs %v", pattern, basePath, dirs)
		}
	})
}
