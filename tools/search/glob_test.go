package search

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/vfs"
)

var globFiles = map[string]string{
	"main.go":            "package main\n",
	"README.md":          "# readme\n",
	"src/a.go":           "package src\n",
	"src/b.txt":          "b\n",
	"src/pkg/c.go":       "package pkg\n",
	"src/pkg/gen/d.go":   "package gen\n",
	"docs/gen/e.md":      "e\n",
	"build/out.go":       "package out\n",
	"vendor/x/y.go":      "package y\n",
	".gitignore":         "build/\n*.log\n",
	"src/.gitignore":     "gen/\n!keep.log\n",
	"src/keep.log":       "kept\n",
	"src/drop.log":       "dropped\n",
	".secret/key.go":     "package key\n",
	"link.go":            asSymlink + "main.go",
	"empty/":             "",
	"sp ace/[x].go":      "package x\n",
	"ünï/cödé.go":        "package u\n",
	"src/pkg/gen/keep.x": "x\n",
}

func TestGlob(t *testing.T) {
	s := memSession(t)
	fill(t, s, globFiles)
	readFile := func(p vfs.Path) ([]byte, error) {
		b, _, err := s.ReadFile(ctx, p)
		return b, err
	}
	hidden := func(p vfs.Path, n vfs.Node) bool { return strings.HasPrefix(p.Base(), ".secret") }
	tests := []struct {
		name  string
		opts  GlobOptions
		want  []string
		trunc bool
	}{
		{
			name: "all Go files, ignored and hidden left out",
			opts: GlobOptions{Pattern: "**/*.go", Hidden: hidden},
			want: []string{"link.go", "main.go", "sp ace/[x].go", "src/a.go", "src/pkg/c.go", "vendor/x/y.go", "ünï/cödé.go"},
		},
		{
			name: "top level only",
			opts: GlobOptions{Pattern: "*.go"},
			want: []string{"link.go", "main.go"},
		},
		{
			name: "relative to a base",
			opts: GlobOptions{Pattern: "*.go", Base: p("src")},
			want: []string{"src/a.go"},
		},
		{
			name: "literal leading directories",
			opts: GlobOptions{Pattern: "src/pkg/**"},
			want: []string{"src/pkg/c.go"},
		},
		{
			name: "literal leading directory that is ignored",
			opts: GlobOptions{Pattern: "build/*.go"},
			want: []string{},
		},
		{
			name: "literal leading directory that is missing",
			opts: GlobOptions{Pattern: "nope/*.go"},
			want: []string{},
		},
		{
			name: "literal leading directory that is a file",
			opts: GlobOptions{Pattern: "main.go/*"},
			want: []string{},
		},
		{
			name: "no ignore",
			opts: GlobOptions{Pattern: "**/*.go", NoIgnore: true},
			want: []string{
				".secret/key.go", "build/out.go", "link.go", "main.go", "sp ace/[x].go", "src/a.go",
				"src/pkg/c.go", "src/pkg/gen/d.go", "vendor/x/y.go", "ünï/cödé.go",
			},
		},
		{
			name: "nested gitignore with negation",
			opts: GlobOptions{Pattern: "**/*.log"},
			want: []string{"src/keep.log"},
		},
		{
			name: "directories",
			opts: GlobOptions{Pattern: "**/gen", Dirs: true, NoIgnore: true},
			want: []string{"docs/gen", "src/pkg/gen"},
		},
		{
			name: "directories are not listed by default",
			opts: GlobOptions{Pattern: "**/gen", NoIgnore: true},
			want: []string{},
		},
		{
			name: "empty directory",
			opts: GlobOptions{Pattern: "e*", Dirs: true},
			want: []string{"empty"},
		},
		{
			name: "braces and classes",
			opts: GlobOptions{Pattern: "{src,docs}/**/[a-e].{go,md}"},
			want: []string{"docs/gen/e.md", "src/a.go", "src/pkg/c.go"},
		},
		{
			name: "escaped brackets",
			opts: GlobOptions{Pattern: `sp ace/\[x\].go`},
			want: []string{"sp ace/[x].go"},
		},
		{
			name: "non-ASCII",
			opts: GlobOptions{Pattern: "ü*/*"},
			want: []string{"ünï/cödé.go"},
		},
		{
			name:  "max results",
			opts:  GlobOptions{Pattern: "**/*.go", MaxResults: 2},
			want:  []string{".secret/key.go", "link.go"},
			trunc: true,
		},
		{
			name: "base is a file",
			opts: GlobOptions{Pattern: "*.go", Base: p("src/a.go")},
			want: []string{"src/a.go"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.ReadFile = readFile
			opts.Sort = SortByPath
			res, err := Glob(ctx, s.Tree(), opts)
			require.NoError(t, err)
			got := []string{}
			for _, e := range res.Entries {
				got = append(got, string(e.Path))
				n, ok, _ := s.Tree().Lookup(e.Path)
				require.True(t, ok)
				require.Equal(t, n, e.Node)
			}
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.trunc, res.Truncated)
		})
	}
}

func TestGlobSortByMtime(t *testing.T) {
	s := memSession(t)
	fill(t, s, map[string]string{"a.go": "a", "b.go": "b", "c.go": "c"})
	// Rewrite a.go: now the newest.
	_, err := s.WriteFile(ctx, p("a.go"), strings.NewReader("a2"), vfs.WriteOptions{})
	require.NoError(t, err)
	res, err := Glob(ctx, s.Tree(), GlobOptions{Pattern: "*.go"})
	require.NoError(t, err)
	var got []string
	for _, e := range res.Entries {
		got = append(got, string(e.Path))
	}
	require.Equal(t, []string{"a.go", "c.go", "b.go"}, got)

	// Ties keep path order.
	b := vfs.NewTreeBuilder(vfs.Node{Kind: vfs.KindDir, Mode: vfs.DefaultDirMode, Ino: 1})
	for i, name := range []string{"z", "y", "x"} {
		b.Set(p(name), vfs.Node{Kind: vfs.KindFile, Mode: vfs.DefaultFileMode, Ino: uint64(i + 2), Updated: 5})
	}
	res, err = Glob(ctx, b.Tree(), GlobOptions{Pattern: "*"})
	require.NoError(t, err)
	got = got[:0]
	for _, e := range res.Entries {
		got = append(got, string(e.Path))
	}
	require.Equal(t, []string{"x", "y", "z"}, got)

	// Two writes within one millisecond still sort newest first: the
	// order is the nanosecond mtime, not its millisecond mirror.
	b = vfs.NewTreeBuilder(vfs.Node{Kind: vfs.KindDir, Mode: vfs.DefaultDirMode, Ino: 1})
	const ms = int64(1_700_000_000_000)
	b.Set(p("old.ts"), vfs.Node{Kind: vfs.KindFile, Mode: vfs.DefaultFileMode, Ino: 2, Mtime: ms*1e6 + 100, Updated: ms})
	b.Set(p("src.ts"), vfs.Node{Kind: vfs.KindFile, Mode: vfs.DefaultFileMode, Ino: 3, Mtime: ms*1e6 + 900, Updated: ms})
	res, err = Glob(ctx, b.Tree(), GlobOptions{Pattern: "*"})
	require.NoError(t, err)
	got = got[:0]
	for _, e := range res.Entries {
		got = append(got, string(e.Path))
	}
	require.Equal(t, []string{"src.ts", "old.ts"}, got)
}

func TestGlobErrors(t *testing.T) {
	s := memSession(t)
	fill(t, s, map[string]string{"a.go": "a"})
	for _, pat := range []string{"", "[", "[]", "{a", "a}", `a\`, strings.Repeat("{a,*}", 7)} {
		_, err := Glob(ctx, s.Tree(), GlobOptions{Pattern: pat})
		var pe *PatternError
		require.True(t, errors.As(err, &pe), "%q: %v", pat, err)
		require.Equal(t, KindInvalidPattern, pe.Kind)
		require.Equal(t, vfs.CodeInvalidPattern, vfs.CodeOf(err))
	}
	_, err := Glob(ctx, s.Tree(), GlobOptions{Pattern: strings.Repeat("{a,*}", 6)})
	require.NoError(t, err, "64 alternatives are fine")
	_, err = Glob(ctx, s.Tree(), GlobOptions{Pattern: "*", Base: p("missing")})
	require.Equal(t, vfs.CodeNotFound, vfs.CodeOf(err))
	_, err = Glob(ctx, s.Tree(), GlobOptions{Pattern: "*", MaxResults: -1})
	require.Equal(t, vfs.CodeInvalid, vfs.CodeOf(err))
	_, err = Glob(ctx, vfs.Tree{}, GlobOptions{Pattern: "*"})
	require.Equal(t, vfs.CodeInvalid, vfs.CodeOf(err))
}

func TestGlobCancelled(t *testing.T) {
	b := vfs.NewTreeBuilder(vfs.Node{Kind: vfs.KindDir, Mode: vfs.DefaultDirMode, Ino: 1})
	for i := range 1000 {
		b.Set(vfs.Path("f"+strings.Repeat("x", i%50)+string(rune('a'+i%26))+strconv.Itoa(i)), vfs.Node{Kind: vfs.KindFile, Ino: uint64(i + 2)})
	}
	c, cancel := context.WithCancel(ctx)
	cancel()
	_, err := Glob(c, b.Tree(), GlobOptions{Pattern: "**"})
	require.ErrorIs(t, err, context.Canceled)
}
