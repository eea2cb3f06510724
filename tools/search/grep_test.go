package search

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/vfs"
)

// grepFiles is the tree most Grep cases search.
var grepFiles = map[string]string{
	"a.go":              "package a\n\nfunc Foo() {}\nfunc bar() {}\n",
	"b.txt":             "Foo\nfoo\nFOO\nfoo bar\n",
	"ctx.txt":           "l1\nm\nl3\nl4\nl5\nm\nl7\nl8\nl9\nl10\nm\n",
	"crlf.txt":          "foo\r\nbar\r\nfoo bar\r\n",
	"nofinal.txt":       "first\nlast",
	"empty.txt":         "",
	"blank.txt":         "\n",
	"regexchars.txt":    "a.b(c)\naxb(c)\n[x]\n",
	"uni.txt":           "café\nnaïve résumé\nΣίσυφος\nstraße\n",
	"bin.dat":           "foo\x00bar\n",
	"handle.txt":        viaHandle + "foo from a handle\n",
	"handle.bin":        viaHandle + "foo\x00binary\n",
	"dup1.txt":          "shared foo\n",
	"dup2.txt":          "shared foo\n",
	"link":              asSymlink + "a.go",
	"sub/x.go":          "package sub\nfunc Foo() {}\n",
	"sub/deep/y.md":     "# Foo\n",
	".hidden/h.txt":     "foo hidden\n",
	".gitignore":        "*.log\n!keep.log\nbuild/\n",
	"debug.log":         "foo in a log\n",
	"keep.log":          "foo kept\n",
	"build/out.txt":     "foo built\n",
	"sub/.gitignore":    "secret.txt\n!/deep/\n",
	"sub/secret.txt":    "foo secret\n",
	"sub/deep/long.txt": strings.Repeat("é", 20) + "foo\n",
	"late.data":         viaHandle + strings.Repeat("text\n", 2000) + "\x00\nfoo after a NUL\n",
	"huge.data":         "before\n" + strings.Repeat("x", 200_000) + " foo\nafter\n",
}

func TestGrep(t *testing.T) {
	cases := []struct {
		name  string
		opts  GrepOptions
		want  []string
		trunc bool
	}{
		{
			name: "literal across files in path order",
			opts: GrepOptions{Pattern: "Foo", Path: p("sub")},
			want: []string{"sub/deep/y.md:1:# Foo", "sub/x.go:2:func Foo() {}"},
		},
		{
			name: "regex with ASCII \\w",
			opts: GrepOptions{Pattern: `func \w+\(`, Path: p("a.go")},
			want: []string{"a.go:3:func Foo() {}", "a.go:4:func bar() {}"},
		},
		{
			name: "case insensitive",
			opts: GrepOptions{Pattern: "foo", CaseInsensitive: true, Path: p("b.txt")},
			want: []string{"b.txt:1:Foo", "b.txt:2:foo", "b.txt:3:FOO", "b.txt:4:foo bar"},
		},
		{
			name: "case insensitive non-ASCII",
			opts: GrepOptions{Pattern: "ΣΊΣΥΦΟΣ", CaseInsensitive: true, Path: p("uni.txt")},
			want: []string{"uni.txt:3:Σίσυφος"},
		},
		{
			name: "fixed strings with regex characters",
			opts: GrepOptions{Pattern: "a.b(c)", FixedStrings: true, Path: p("regexchars.txt")},
			want: []string{"regexchars.txt:1:a.b(c)"},
		},
		{
			name: "the same as a regex matches more",
			opts: GrepOptions{Pattern: "a.b", Path: p("regexchars.txt")},
			want: []string{"regexchars.txt:1:a.b(c)", "regexchars.txt:2:axb(c)"},
		},
		{
			name: "fixed bracket",
			opts: GrepOptions{Pattern: "[x]", FixedStrings: true, Path: p("regexchars.txt")},
			want: []string{"regexchars.txt:3:[x]"},
		},
		{
			name: "context windows merge, matches are never context",
			opts: GrepOptions{Pattern: "^m$", Before: 1, After: 2, Path: p("ctx.txt")},
			want: []string{
				"ctx.txt-1-l1", "ctx.txt:2:m", "ctx.txt-3-l3", "ctx.txt-4-l4",
				"ctx.txt-5-l5", "ctx.txt:6:m", "ctx.txt-7-l7", "ctx.txt-8-l8",
				"ctx.txt-10-l10", "ctx.txt:11:m",
			},
		},
		{
			name: "before context clipped at the file start",
			opts: GrepOptions{Pattern: "^l1$", Before: 3, Path: p("ctx.txt")},
			want: []string{"ctx.txt:1:l1"},
		},
		{
			name: "after context clipped at the file end",
			opts: GrepOptions{Pattern: "^l10$", After: 5, Path: p("ctx.txt")},
			want: []string{"ctx.txt:10:l10", "ctx.txt-11-m"},
		},
		{
			name: "CRLF: $ matches before \\r\\n, text without \\r",
			opts: GrepOptions{Pattern: "(foo|bar)$", Path: p("crlf.txt")},
			want: []string{"crlf.txt:1:foo", "crlf.txt:2:bar", "crlf.txt:3:foo bar"},
		},
		{
			name: "no final newline",
			opts: GrepOptions{Pattern: "t$", Path: p("nofinal.txt")},
			want: []string{"nofinal.txt:1:first", "nofinal.txt:2:last"},
		},
		{
			name: "empty lines: an empty file has none, no phantom line after the last",
			opts: GrepOptions{Pattern: "^$", Glob: "{empty,blank,nofinal,b}.txt"},
			want: []string{"blank.txt:1:"},
		},
		{
			name: "empty pattern matches every line",
			opts: GrepOptions{Pattern: "", Path: p("nofinal.txt")},
			want: []string{"nofinal.txt:1:first", "nofinal.txt:2:last"},
		},
		{
			name: "\\A and \\z are line anchors",
			opts: GrepOptions{Pattern: `\Afoo\z`, Path: p("b.txt")},
			want: []string{"b.txt:2:foo"},
		},
		{
			name: "ASCII word boundary",
			opts: GrepOptions{Pattern: `\bna`, Path: p("uni.txt")},
			want: []string{"uni.txt:2:naïve résumé"},
		},
		{
			name: "\\w is ASCII: é is not a word character",
			opts: GrepOptions{Pattern: `caf\w`, Path: p("uni.txt")},
			want: []string{},
		},
		{
			name: "dot is one character",
			opts: GrepOptions{Pattern: `^caf.$`, Path: p("uni.txt")},
			want: []string{"uni.txt:1:café"},
		},
		{
			name: "\\pL classes",
			opts: GrepOptions{Pattern: `^\p{Greek}+$`, Path: p("uni.txt")},
			want: []string{"uni.txt:3:Σίσυφος"},
		},
		{
			name: "gitignore: root, negation, directory, nested, hidden dirs searched, binary and symlinks skipped",
			opts: GrepOptions{Pattern: "foo", FixedStrings: true, Glob: "*.{txt,log,bin,dat}"},
			want: []string{
				".hidden/h.txt:1:foo hidden",
				"b.txt:2:foo", "b.txt:4:foo bar",
				"crlf.txt:1:foo", "crlf.txt:3:foo bar",
				"dup1.txt:1:shared foo", "dup2.txt:1:shared foo",
				"handle.txt:1:foo from a handle",
				"keep.log:1:foo kept",
				"sub/deep/long.txt:1:" + strings.Repeat("é", 20) + "foo",
			},
		},
		{
			name: "no ignore",
			opts: GrepOptions{Pattern: "foo", NoIgnore: true, Glob: "*.{log,txt}", Output: OutputFilesWithMatches},
			want: []string{
				".hidden/h.txt", "b.txt", "build/out.txt", "crlf.txt", "debug.log",
				"dup1.txt", "dup2.txt", "handle.txt", "keep.log", "sub/deep/long.txt", "sub/secret.txt",
			},
		},
		{
			name: "ignored directory named explicitly is searched",
			opts: GrepOptions{Pattern: "foo", Path: p("build")},
			want: []string{"build/out.txt:1:foo built"},
		},
		{
			name: "hidden filter skips subtrees",
			opts: GrepOptions{Pattern: "foo", Output: OutputFilesWithMatches, Glob: "*.txt",
				Hidden: func(p vfs.Path, n vfs.Node) bool { return strings.HasPrefix(p.Base(), ".") || p == "sub" }},
			want: []string{"b.txt", "crlf.txt", "dup1.txt", "dup2.txt", "handle.txt"},
		},
		{
			name: "glob with a slash is relative to Path",
			opts: GrepOptions{Pattern: "Foo", Glob: "sub/**/*.go", Output: OutputFilesWithMatches},
			want: []string{"sub/x.go"},
		},
		{
			name: "glob without a slash matches names at any depth",
			opts: GrepOptions{Pattern: "Foo", Glob: "*.go", Output: OutputFilesWithMatches},
			want: []string{"a.go", "sub/x.go"},
		},
		{
			name: "count",
			opts: GrepOptions{Pattern: "(?i)foo", Path: p("b.txt"), Output: OutputCount},
			want: []string{"b.txt:4"},
		},
		{
			name:  "max results cuts lines and the context past them",
			opts:  GrepOptions{Pattern: "^m$", After: 1, Before: 1, MaxResults: 2, Path: p("ctx.txt")},
			want:  []string{"ctx.txt-1-l1", "ctx.txt:2:m", "ctx.txt-3-l3", "ctx.txt-5-l5", "ctx.txt:6:m", "ctx.txt-7-l7"},
			trunc: true,
		},
		{
			name:  "max results across files",
			opts:  GrepOptions{Pattern: "foo", Glob: "{b,crlf}.txt", MaxResults: 3},
			want:  []string{"b.txt:2:foo", "b.txt:4:foo bar", "crlf.txt:1:foo"},
			trunc: true,
		},
		{
			name: "max results exactly reached is not truncated",
			opts: GrepOptions{Pattern: "foo", Glob: "b.txt", MaxResults: 2},
			want: []string{"b.txt:2:foo", "b.txt:4:foo bar"},
		},
		{
			name:  "max results on files",
			opts:  GrepOptions{Pattern: "Foo", Output: OutputFilesWithMatches, MaxResults: 2},
			want:  []string{"a.go", "b.txt"},
			trunc: true,
		},
		{
			name: "long lines are cut at a character boundary",
			opts: GrepOptions{Pattern: "foo", Path: p("sub/deep/long.txt"), MaxLineBytes: 5},
			want: []string{"sub/deep/long.txt:1:éé"},
		},
		{
			name: "unknown encoding with a NUL past 8 KiB is text",
			opts: GrepOptions{Pattern: "foo", Path: p("late.data"), Before: 1},
			want: []string{"late.data-2001-\x00", "late.data:2002:foo after a NUL"},
		},
		{
			name: "a line longer than the read buffers",
			opts: GrepOptions{Pattern: "foo$", Path: p("huge.data"), Before: 1, After: 1, MaxLineBytes: 3},
			want: []string{"huge.data-1-bef", "huge.data:2:xxx", "huge.data-3-aft"},
		},
		{
			name: "pattern that can never match",
			opts: GrepOptions{Pattern: `[^\x00-\x{10FFFF}]`},
			want: []string{},
		},
		{
			name: "a branch that can never match is pruned",
			opts: GrepOptions{Pattern: `[^\x00-\x{10FFFF}]|^l7$`, Path: p("ctx.txt")},
			want: []string{"ctx.txt:7:l7"},
		},
	}
	for _, sess := range []struct {
		name string
		new  func(testing.TB) *vfs.Session
	}{{"local", localSession}, {"memory", memSession}} {
		s := sess.new(t)
		fill(t, s, grepFiles)
		for _, eng := range engines() {
			for _, tt := range cases {
				t.Run(sess.name+"/"+eng.String()+"/"+tt.name, func(t *testing.T) {
					opts := tt.opts
					opts.Engine = eng
					res, err := Grep(ctx, s, opts)
					require.NoError(t, err)
					require.Equal(t, eng, res.Engine)
					if opts.Output == OutputContent {
						require.Equal(t, tt.want, lines(res))
					} else {
						require.Equal(t, tt.want, files(res))
					}
					require.Equal(t, tt.trunc, res.Truncated)
				})
			}
		}
	}
}

func TestGrepCounters(t *testing.T) {
	s := localSession(t)
	fill(t, s, map[string]string{
		"a.txt":     "hello\n",
		"b.bin":     "x\x00y",
		"c.txt":     "",
		"d.unknown": viaHandle + "zz\x00zz",
		"e.txt":     "hello world\n",
	})
	for _, eng := range engines() {
		res, err := Grep(ctx, s, GrepOptions{Pattern: "hello", Engine: eng})
		require.NoError(t, err)
		require.Equal(t, 3, res.FilesSearched, "a, c and e: binaries are not searched")
		require.Equal(t, int64(6+12), res.BytesSearched)
		require.Equal(t, []string{"a.txt:1:hello", "e.txt:1:hello world"}, lines(res))
	}
}

func TestGrepErrors(t *testing.T) {
	s := memSession(t)
	fill(t, s, map[string]string{"a.txt": "a\n"})
	tests := []struct {
		name string
		opts GrepOptions
		kind string
		code vfs.Code
	}{
		{name: "bad regex", opts: GrepOptions{Pattern: "a(b"}, kind: KindInvalidRegex},
		{name: "Perl lookahead", opts: GrepOptions{Pattern: "a(?=b)"}, kind: KindInvalidRegex},
		{name: "backreference", opts: GrepOptions{Pattern: `(a)\1`}, kind: KindInvalidRegex},
		{name: "line break", opts: GrepOptions{Pattern: `a\nb`}, kind: KindInvalidRegex},
		{name: "fixed line break", opts: GrepOptions{Pattern: "a\nb", FixedStrings: true}, kind: KindInvalidRegex},
		{name: "huge repeat", opts: GrepOptions{Pattern: `a{1001}`}, kind: KindInvalidRegex},
		{name: "bad glob", opts: GrepOptions{Pattern: "a", Glob: "[a"}, kind: KindInvalidPattern},
		{name: "pattern checked before the path", opts: GrepOptions{Pattern: "(", Path: p("missing")}, kind: KindInvalidRegex},
		{name: "missing path", opts: GrepOptions{Pattern: "a", Path: p("missing")}, code: vfs.CodeNotFound},
		{name: "negative context", opts: GrepOptions{Pattern: "a", After: -1}, code: vfs.CodeInvalid},
		{name: "negative max", opts: GrepOptions{Pattern: "a", MaxResults: -1}, code: vfs.CodeInvalid},
		{name: "unknown engine", opts: GrepOptions{Pattern: "a", Engine: 7}, code: vfs.CodeInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Grep(ctx, s, tt.opts)
			require.Error(t, err)
			if tt.kind != "" {
				var pe *PatternError
				require.True(t, errors.As(err, &pe), "%v", err)
				require.Equal(t, tt.kind, pe.Kind)
				require.ErrorIs(t, err, vfs.ErrInvalidPattern)
				require.Equal(t, vfs.CodeInvalidPattern, vfs.CodeOf(err))
				return
			}
			require.Equal(t, tt.code, vfs.CodeOf(err), "%v", err)
		})
	}
}

// TestGrepSharedBlob checks that two paths with the same content are both
// reported although their blob is searched once.
func TestGrepSharedBlob(t *testing.T) {
	s := localSession(t)
	fill(t, s, map[string]string{"x/a.txt": "same\n", "y/b.txt": "same\n", "z/c.txt": "other\n"})
	for _, eng := range engines() {
		res, err := Grep(ctx, s, GrepOptions{Pattern: "same", Engine: eng, Output: OutputCount})
		require.NoError(t, err)
		require.Equal(t, []string{"x/a.txt:1", "y/b.txt:1"}, files(res))
		require.Equal(t, 3, res.FilesSearched)
	}
}

// TestGrepManyBatches runs rg over many more batches than processes, with
// an argument budget small enough to force them.
func TestGrepManyBatches(t *testing.T) {
	haveRG(t)
	s := localSession(t)
	files := map[string]string{}
	for i := range 1000 {
		files[fmt.Sprintf("d%d/f%04d.txt", i%7, i)] = fmt.Sprintf("line %04d\n", i)
	}
	fill(t, s, files)
	defer func(old int) { batchArgBytes = old }(batchArgBytes)
	batchArgBytes = 2000
	for _, mode := range []OutputMode{OutputContent, OutputCount, OutputFilesWithMatches} {
		opts := GrepOptions{Pattern: `line \d+7$`, Output: mode}
		opts.Engine = EngineRG
		res, err := Grep(ctx, s, opts)
		require.NoError(t, err)
		opts.Engine = EngineNative
		nat, err := Grep(ctx, s, opts)
		require.NoError(t, err)
		require.Equal(t, 1000, res.FilesSearched)
		res.Engine = nat.Engine
		require.Equal(t, nat, res)
		if mode == OutputContent {
			require.Len(t, res.Matches, 100)
		} else {
			require.Len(t, res.Files, 100)
		}
	}
}

func TestMakeBatches(t *testing.T) {
	defer func(old int) { batchArgBytes = old }(batchArgBytes)
	batchArgBytes = 100
	var local []*rgFile
	for i := range 40 {
		local = append(local, &rgFile{path: fmt.Sprintf("/store/blob/%08d", i), size: int64(i * 1000)})
	}
	batches := makeBatches(local, 2)
	seen := map[int]bool{}
	for _, b := range batches {
		args := 0
		for _, k := range b {
			require.False(t, seen[k], "file %d in two batches", k)
			seen[k] = true
			args += len(local[k].path) + 1
		}
		require.LessOrEqual(t, args, 100)
	}
	require.Len(t, seen, 40)
	require.GreaterOrEqual(t, len(batches), 2)

	batches = makeBatches(local[:1], 4)
	require.Equal(t, [][]int{{0}}, batches)
}

func TestGrepCancelled(t *testing.T) {
	s := localSession(t)
	fill(t, s, map[string]string{"a.txt": "a\n"})
	c, cancel := context.WithCancel(ctx)
	cancel()
	for _, eng := range engines() {
		_, err := Grep(c, s, GrepOptions{Pattern: "a", Engine: eng})
		require.ErrorIs(t, err, context.Canceled)
	}
}

// TestGrepSessionPolicy checks that files the session's policy refuses to
// read are left out even without a Hidden filter: the native engine's reads
// are refused, and the rg engine, which reads in place, asks the session.
func TestGrepSessionPolicy(t *testing.T) {
	s := localSessionPolicy(t, func(a vfs.Access, p vfs.Path) error {
		if a == vfs.AccessRead && strings.HasPrefix(string(p), "secret/") {
			return errors.New("secrets are not readable")
		}
		return nil
	})
	fill(t, s, map[string]string{"open/a.txt": "token\n", "secret/b.txt": "token\n", "secret/c.txt": "token too\n"})
	for _, eng := range engines() {
		res, err := Grep(ctx, s, GrepOptions{Pattern: "token", Engine: eng})
		require.NoError(t, err)
		require.Equal(t, []string{"open/a.txt:1:token"}, lines(res), eng.String())
		require.Equal(t, 1, res.FilesSearched)
	}
}
