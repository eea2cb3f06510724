package textdiff

import (
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
