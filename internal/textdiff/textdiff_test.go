package textdiff

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestUnified(t *testing.T) {
	require.Empty(t, Unified("a", "b", "same\n", "same\n"))
	d := Unified("a/f.txt", "b/f.txt", "one\ntwo\nthree\n", "one\n2\nthree\n")
	require.Equal(t, "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n", d)
	added, removed := Counts(d)
	require.Equal(t, 1, added)
	require.Equal(t, 1, removed)
	d = Unified(NoFile, "b/new", "", "x")
	require.Contains(t, d, "+x\n\\ No newline at end of file")
}

func TestQuotePath(t *testing.T) {
	for in, want := range map[string]string{
		"src/main.go":         "src/main.go",
		"with space":          "with space",
		"a\nb":                `"a\nb"`,
		"tab\there":           `"tab\there"`,
		"esc\x1b[2J":          `"esc\033[2J"`,
		`quote"back\slash`:    `"quote\"back\\slash"`,
		"caf\u00e9":           `"caf\303\251"`,
		"del\x7f":             `"del\177"`,
		"\a\b\v\f\r":          `"\a\b\v\f\r"`,
		"b/x\n+++ b/evil":     `"b/x\n+++ b/evil"`,
		"nul-free\x01control": `"nul-free\001control"`,
	} {
		require.Equal(t, want, QuotePath(in), "%q", in)
	}
	d := Unified("a/x\n+++ b/evil", "b/x\n+++ b/evil", "1\n", "2\n")
	require.True(t, strings.HasPrefix(d, "--- \"a/x\\n+++ b/evil\"\n+++ \"b/x\\n+++ b/evil\"\n@@"), "%q", d)
}

func TestBoundedMatchesUnified(t *testing.T) {
	lines := func(from, to int) string {
		var b strings.Builder
		for i := from; i <= to; i++ {
			fmt.Fprintf(&b, "line %d\n", i)
		}
		return b.String()
	}
	base := lines(1, 40)
	for _, c := range []struct{ name, old, new string }{
		{"middle", base, strings.Replace(base, "line 20\n", "changed\n", 1)},
		{"two hunks", base, strings.Replace(strings.Replace(base, "line 5\n", "x\n", 1), "line 30\n", "y\n", 1)},
		{"first line", base, strings.Replace(base, "line 1\n", "x\n", 1)},
		{"last line", base, strings.Replace(base, "line 40\n", "x\n", 1)},
		{"insert at end", base, base + "more\n"},
		{"drop final newline", base, strings.TrimSuffix(base, "\n")},
		{"add final newline", strings.TrimSuffix(base, "\n"), base},
		{"delete middle", base, strings.Replace(base, lines(10, 12), "", 1)},
		{"insert middle", base, strings.Replace(base, "line 10\n", "line 10\nnew\n", 1)},
		{"from empty", "", base},
		{"to empty", base, ""},
		{"partial line", base, strings.Replace(base, "line 21", "line 21 and more", 1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := Bounded("a/f", "b/f", c.old, c.new, 0)
			require.True(t, ok)
			require.Equal(t, Unified("a/f", "b/f", c.old, c.new), got)
		})
	}
	big := strings.Repeat("x\n", 1<<20)
	_, ok := Bounded("a", "b", big, strings.ReplaceAll(big, "x", "y"), 1<<20)
	require.False(t, ok, "a change spanning 4 MiB is not diffed under a 1 MiB bound")
	d, ok := Bounded("a", "b", big, "y\n"+big[2:], 1<<20)
	require.True(t, ok, "one changed line of a large text is")
	require.Equal(t, "--- a\n+++ b\n@@ -1,4 +1,4 @@\n-x\n+y\n x\n x\n x\n", d)
}
