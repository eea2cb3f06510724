package patch

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSourceFile(t *testing.T) {
	tests := []struct {
		content string
		texts   []string
		eol     string
		ended   string // after apply(nil): every line ended
	}{
		{"", []string{}, "\n", ""},
		{"a", []string{"a"}, "\n", "a\n"},
		{"a\n", []string{"a"}, "\n", "a\n"},
		{"a\n\n", []string{"a", ""}, "\n", "a\n\n"},
		{"a\r\nb", []string{"a", "b"}, "\r\n", "a\r\nb\r\n"},
		{"a\nb\r\n", []string{"a", "b"}, "\n", "a\nb\r\n"},
		{"\r\n", []string{""}, "\r\n", "\r\n"},
		{"a\rb\r", []string{"a\rb\r"}, "\n", "a\rb\r\n"},
		{"x\r\r\n", []string{"x\r"}, "\r\n", "x\r\r\n"},
	}
	for _, tt := range tests {
		f := parseSource(tt.content)
		require.Equal(t, tt.texts, f.texts(), "%q", tt.content)
		require.Equal(t, tt.eol, f.eol, "%q", tt.content)
		require.Equal(t, tt.content, f.String(), "%q round trip", tt.content)
		f.apply(nil)
		require.Equal(t, tt.ended, f.String(), "%q", tt.content)
	}
}

func TestSourceFileApply(t *testing.T) {
	f := parseSource("a\r\nb\r\nc\r\n")
	f.apply([]replacement{{at: 0, n: 1, lines: []string{"A", "A2"}}, {at: 2, n: 0, lines: []string{"x"}}, {at: 3, lines: []string{"end"}}})
	require.Equal(t, "A\r\nA2\r\nb\r\nx\r\nc\r\nend\r\n", f.String())

	// Out-of-range or overlapping replacements are clamped, never a panic.
	f = parseSource("a\nb\n")
	f.apply([]replacement{{at: 1, n: 5, lines: []string{"x"}}, {at: 0, n: 1, lines: []string{"y"}}, {at: 9, lines: []string{"z"}}})
	require.Equal(t, "a\nx\ny\nz\n", f.String())
}

func TestSplit(t *testing.T) {
	old := []string{"c1", "r1", "c2", "r2"}
	repl := []string{"c1", "a1", "a2", "c2"}
	got := split(10, old, repl, [][2]int{{0, 0}, {2, 3}})
	require.Equal(t, []replacement{
		{at: 11, n: 1, lines: []string{"a1", "a2"}},
		{at: 13, n: 1, lines: []string{}},
	}, got)
	// Without the pairs, the whole region is replaced.
	require.Equal(t, []replacement{{at: 10, n: 4, lines: repl}}, split(10, old, repl, nil))
	// Only context: nothing to replace.
	require.Empty(t, split(0, []string{"a"}, []string{"a"}, [][2]int{{0, 0}}))
}
