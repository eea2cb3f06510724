package search

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/vfs"
)

// The differential tests run both engines on the same trees and options
// and require deep-equal results (but for the Engine field).

// diffPatterns mean the same to RE2 and to Rust's regex once rewritten
// (see pattern.go); they avoid nothing the rewrite handles, only what RE2
// cannot parse.
var diffPatterns = []string{
	"foo", "Foo", "foo bar", `\bfoo\b`, `^foo`, `bar$`, `a\.b`, `a.b`, `[xy]`, `\d+`, `\d{2,}`,
	`\w+\s+\w+`, `^$`, `^\s*$`, `ß`, `straße`, `é`, `.`, `\p{Greek}+`, `caf.`, `(foo|bar){2}`,
	`^.{5,}$`, `[^a-z ]`, `\S+$`, `\(x\)`, `\[y\]`, `(?i)FOO`, `(?i:σ)`, `\Bo`, `o\B`, `\x{3A3}`,
	`[[:upper:]]`, `[[:^alpha:]]$`, `^\W`, `(?s).$`, `\Afoo`, `foo\z`, "", `x*`, `\t`, `\r`,
	`[\s\S]`, `(?U)a+`, `func \w+Handler`, `é+$`, `(?i)ǅ`, `K`, `(?i)k`, `(?i)ſ`, `Σ\b`,
}

// diffWords make up the random files' lines.
var diffWords = []string{
	"foo", "Foo", "FOO", "bar", "foo bar", "a.b", "axb", "(x)", "[y]", "café", "Straße", "STRASSE",
	"ΣΊΣΥΦΟΣ", "σίσυφος", "ǅ", "ǆ", "K", "k", "ſ", "K", "12", "345", "func", "fooHandler",
	"\t", " ", "", "x", "xx", "naïve", "日本語", "🙂", "\r", "o", "_", "-",
}

// randomTree builds a random tree: files with random lines (LF or CRLF,
// with or without a final line break, sometimes empty, sometimes binary or
// written through a handle), shared contents, and .gitignore files.
func randomTree(r *rand.Rand) map[string]string {
	dirs := []string{"", "src/", "src/pkg/", "lib/", "build/", ".hidden/", "docs/gen/", "sub/deep/"}
	names := []string{"a.go", "b.txt", "c.md", "d.log", "keep.log", "secret.txt", "é.txt", "Z.go", "-x.txt", "top.txt"}
	files := map[string]string{}
	var contents []string
	for range 4 + r.IntN(20) {
		path := dirs[r.IntN(len(dirs))] + names[r.IntN(len(names))]
		var content string
		switch k := r.IntN(20); {
		case k == 0:
			content = ""
		case k == 1 && len(contents) > 0:
			content = contents[r.IntN(len(contents))] // shared blob
		default:
			eol := "\n"
			if r.IntN(4) == 0 {
				eol = "\r\n"
			}
			var b strings.Builder
			for range r.IntN(12) {
				for w := range r.IntN(5) {
					if w > 0 {
						b.WriteByte(' ')
					}
					b.WriteString(diffWords[r.IntN(len(diffWords))])
				}
				b.WriteString(eol)
			}
			content = b.String()
			if r.IntN(4) == 0 {
				content = strings.TrimSuffix(content, eol)
			}
			if r.IntN(15) == 0 {
				content += "\x00binary"
			}
		}
		contents = append(contents, content)
		if r.IntN(8) == 0 {
			content = viaHandle + content
		}
		files[path] = content
	}
	ignores := []string{"*.log", "!keep.log", "build/", "/top.txt", "gen/", "*.md", "!c.md", "secret.txt", "src/pkg/", "**/deep/**", "!**/a.go"}
	for _, dir := range dirs[:4] {
		if r.IntN(2) == 0 {
			var b strings.Builder
			for range 1 + r.IntN(4) {
				b.WriteString(ignores[r.IntN(len(ignores))] + "\n")
			}
			files[dir+".gitignore"] = b.String()
		}
	}
	return files
}

// randomOptions draws a search.
func randomOptions(r *rand.Rand) GrepOptions {
	globs := []string{"", "", "*.go", "**/*.txt", "src/**", "*.{go,md}", "sub/**/*", "[a-c].*"}
	paths := []vfs.Path{"", "", "", "src", "sub", "b.txt"}
	o := GrepOptions{
		Pattern:         diffPatterns[r.IntN(len(diffPatterns))],
		Path:            paths[r.IntN(len(paths))],
		Glob:            globs[r.IntN(len(globs))],
		CaseInsensitive: r.IntN(3) == 0,
		Output:          OutputMode(r.IntN(3)),
		NoIgnore:        r.IntN(4) == 0,
		MaxLineBytes:    []int{0, 0, 3, 10}[r.IntN(4)],
	}
	if r.IntN(4) == 0 {
		o.Pattern = diffWords[r.IntN(len(diffWords))]
		o.FixedStrings = true
	}
	if r.IntN(2) == 0 {
		o.Before, o.After = r.IntN(4), r.IntN(4)
	}
	if r.IntN(3) == 0 {
		o.MaxResults = 1 + r.IntN(6)
	}
	if r.IntN(3) == 0 {
		o.Hidden = func(p vfs.Path, n vfs.Node) bool {
			return strings.HasPrefix(p.Base(), ".") || strings.Contains(string(p), "secret")
		}
	}
	return o
}

// requireSame runs both engines and requires identical results.
func requireSame(t *testing.T, s *vfs.Session, o GrepOptions, msg string) *GrepResult {
	t.Helper()
	o.Engine = EngineNative
	nat, natErr := Grep(ctx, s, o)
	o.Engine = EngineRG
	rg, rgErr := Grep(ctx, s, o)
	if natErr != nil || rgErr != nil {
		require.Equal(t, natErr, rgErr, msg)
		return nil
	}
	require.Equal(t, EngineRG, rg.Engine)
	rg.Engine = EngineNative
	require.Equal(t, nat, rg, msg)
	return nat
}

func describeOptions(o GrepOptions) string {
	return fmt.Sprintf("pattern=%q path=%q glob=%q i=%v F=%v B=%d A=%d out=%v max=%d noignore=%v hidden=%v maxline=%d",
		o.Pattern, o.Path, o.Glob, o.CaseInsensitive, o.FixedStrings, o.Before, o.After, o.Output,
		o.MaxResults, o.NoIgnore, o.Hidden != nil, o.MaxLineBytes)
}

// TestEnginesAgreeHandWritten runs every pattern, with and without context,
// case folding and fixed strings, over the hand-written tree.
func TestEnginesAgreeHandWritten(t *testing.T) {
	haveRG(t)
	s := localSession(t)
	fill(t, s, grepFiles)
	matched := 0
	for _, pat := range append(append([]string{}, diffPatterns...), diffWords...) {
		for _, o := range []GrepOptions{
			{Pattern: pat},
			{Pattern: pat, CaseInsensitive: true, Before: 1, After: 2},
			{Pattern: pat, FixedStrings: true, After: 1},
			{Pattern: pat, Output: OutputCount, NoIgnore: true},
			{Pattern: pat, Output: OutputFilesWithMatches, MaxResults: 2},
			{Pattern: pat, MaxResults: 3, Before: 2, MaxLineBytes: 4},
		} {
			res := requireSame(t, s, o, describeOptions(o))
			if res != nil && (len(res.Matches) > 0 || len(res.Files) > 0) {
				matched++
			}
		}
	}
	require.Greater(t, matched, 100, "the patterns must find something")
}

// TestEnginesAgreeRandom runs random searches over random trees.
func TestEnginesAgreeRandom(t *testing.T) {
	haveRG(t)
	trees, queries := 12, 60
	if testing.Short() {
		trees = 3
	}
	for seed := range trees {
		r := rand.New(rand.NewPCG(uint64(seed), 42))
		files := randomTree(r)
		s := localSession(t)
		fill(t, s, files)
		for q := range queries {
			o := randomOptions(r)
			requireSame(t, s, o, fmt.Sprintf("seed %d query %d: %s\ntree: %q", seed, q, describeOptions(o), files))
		}
	}
}
