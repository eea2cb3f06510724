package textmatch

import (
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

func TestSeek(t *testing.T) {
	tests := []struct {
		name    string
		lines   []string
		pattern []string
		start   int
		eof     bool
		at      int
		pass    Pass
		ok      bool
	}{
		// The cases of Codex's seek_sequence.rs tests.
		{name: "exact", lines: []string{"foo", "bar", "baz"}, pattern: []string{"bar", "baz"}, at: 1, pass: Exact, ok: true},
		{name: "trailing whitespace", lines: []string{"foo   ", "bar\t\t"}, pattern: []string{"foo", "bar"}, at: 0, pass: TrimEnd, ok: true},
		{name: "leading and trailing whitespace", lines: []string{"    foo   ", "   bar\t"}, pattern: []string{"foo", "bar"}, at: 0, pass: Trim, ok: true},
		{name: "pattern longer than input", lines: []string{"just one line"}, pattern: []string{"too", "many", "lines"}},
		// Edges.
		{name: "empty pattern matches at start", lines: []string{"a"}, start: 1, at: 1, pass: Exact, ok: true},
		{name: "empty pattern on empty file", at: 0, pass: Exact, ok: true},
		{name: "from start on", lines: []string{"x", "y", "x"}, pattern: []string{"x"}, start: 1, at: 2, pass: Exact, ok: true},
		{name: "nothing after start", lines: []string{"x", "y"}, pattern: []string{"x"}, start: 1},
		{name: "start past the end", lines: []string{"x"}, pattern: []string{"x"}, start: 5},
		{name: "negative start is zero", lines: []string{"x"}, pattern: []string{"x"}, start: -3, at: 0, pass: Exact, ok: true},
		{name: "stricter pass wins over an earlier looser match", lines: []string{" a", "a"}, pattern: []string{"a"}, at: 1, pass: Exact, ok: true},
		{name: "no match", lines: []string{"a", "b"}, pattern: []string{"c"}},
		{name: "carriage return is trailing whitespace", lines: []string{"a\r", "b\r"}, pattern: []string{"a", "b"}, at: 0, pass: TrimEnd, ok: true},
		// Unicode punctuation (the last pass).
		{name: "typographic quotes and dashes", lines: []string{"x", "say “hi” — it’s fine"}, pattern: []string{`say "hi" - it's fine`}, at: 1, pass: Punct, ok: true},
		{name: "no-break space inside", lines: []string{"a\u00a0b"}, pattern: []string{"a b"}, at: 0, pass: Punct, ok: true},
		{name: "punctuation after trim", lines: []string{"   ‘q’   "}, pattern: []string{"'q'"}, at: 0, pass: Punct, ok: true},
		// End of file.
		{name: "eof prefers the end", lines: []string{"target", "middle", "target"}, pattern: []string{"target"}, eof: true, at: 2, pass: Exact, ok: true},
		{name: "eof prefers the end even when looser", lines: []string{"target", "middle", "target   "}, pattern: []string{"target"}, eof: true, at: 2, pass: TrimEnd, ok: true},
		{name: "eof falls back to the search from start", lines: []string{"before", "target", "not the target"}, pattern: []string{"target"}, start: 1, eof: true, at: 1, pass: Exact, ok: true},
		{name: "eof never lands before start", lines: []string{"target"}, pattern: []string{"target"}, start: 1, eof: true},
		{name: "eof at start exactly", lines: []string{"a", "b"}, pattern: []string{"b"}, start: 1, eof: true, at: 1, pass: Exact, ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at, pass, ok := Seek(tt.lines, tt.pattern, tt.start, tt.eof)
			require.Equal(t, tt.ok, ok)
			if tt.ok {
				require.Equal(t, tt.at, at)
				require.Equal(t, tt.pass, pass)
			}
		})
	}
}

func TestAll(t *testing.T) {
	at, pass := All([]string{"a", " a", "a"}, []string{"a"})
	require.Equal(t, []int{0, 2}, at)
	require.Equal(t, Exact, pass)
	at, pass = All([]string{"a ", "b", " a"}, []string{"a"})
	require.Equal(t, []int{0}, at)
	require.Equal(t, TrimEnd, pass)
	at, pass = All([]string{" a", "b", "  a"}, []string{"a"})
	require.Equal(t, []int{0, 2}, at)
	require.Equal(t, Trim, pass)
	at, _ = All([]string{"a"}, nil)
	require.Empty(t, at)
	at, _ = All([]string{"a"}, []string{"a", "b"})
	require.Empty(t, at)
	at, _ = All([]string{"aa", "aa", "aa"}, []string{"aa", "aa"})
	require.Equal(t, []int{0, 1}, at, "overlapping occurrences")
}

func TestKeyAndEqual(t *testing.T) {
	require.Equal(t, "  x", TrimEnd.Key("  x \t\r"))
	require.Equal(t, "x", Trim.Key("\u3000 x \u00a0"))
	require.Equal(t, `"x" - 'y'`, Punct.Key(" “x” — ‘y’ "))
	require.True(t, Exact.Equal("a", "a"))
	require.False(t, Exact.Equal("a", "a "))
	require.True(t, TrimEnd.Equal("a", "a "))
	require.False(t, TrimEnd.Equal("a", " a"))
	require.True(t, Trim.Equal("a", " a"))
	require.True(t, Punct.Equal("a–b", "a-b"))
	require.Equal(t, []Pass{Exact, TrimEnd, Trim, Punct}, Passes)
	require.Equal(t, "exact", Exact.String())
	require.Equal(t, "trim_end", TrimEnd.String())
	require.Equal(t, "trim", Trim.String())
	require.Equal(t, "unicode_punctuation", Punct.String())
	require.Equal(t, "unknown", Pass(9).String())
}

// TestNormalize checks the table against Codex's normalise().
func TestNormalize(t *testing.T) {
	dashes := "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"
	singles := "\u2018\u2019\u201A\u201B"
	doubles := "\u201C\u201D\u201E\u201F"
	spaces := "\u00A0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200A\u202F\u205F\u3000"
	require.Equal(t, "-------", Normalize(dashes))
	require.Equal(t, "''''", Normalize(singles))
	require.Equal(t, `""""`, Normalize(doubles))
	require.Equal(t, "             ", Normalize(spaces))
	require.Equal(t, "plain ascii", Normalize("plain ascii"))
	require.Equal(t, "café…", Normalize("café…"), "other characters are kept")
}

// TestWhitespaceMatchesRust pins the white space the trim passes remove to
// Rust's char::is_whitespace (the Unicode White_Space property), which
// Codex's trim() and trim_end() use.
func TestWhitespaceMatchesRust(t *testing.T) {
	rust := map[rune]bool{}
	for _, r := range []rune{0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000} {
		rust[r] = true
	}
	for r := rune(0x2000); r <= 0x200A; r++ {
		rust[r] = true
	}
	for r := rune(0); r <= 0x10FFFF; r++ {
		if r >= 0xD800 && r <= 0xDFFF {
			continue
		}
		require.Equal(t, rust[r], unicode.IsSpace(r), "U+%04X", r)
	}
}

func FuzzSeek(f *testing.F) {
	f.Add("a\nb\nc", "b", 0, false)
	f.Add("a \n b\nc", "b\nc", 1, true)
	f.Add("“x”\n", "\"x\"", 0, true)
	f.Fuzz(func(t *testing.T, text, pat string, start int, eof bool) {
		lines := splitLines(text)
		pattern := splitLines(pat)
		at, pass, ok := Seek(lines, pattern, start, eof)
		if !ok {
			return
		}
		if len(pattern) == 0 {
			require.Equal(t, start, at)
			return
		}
		require.GreaterOrEqual(t, at, max(start, 0))
		require.LessOrEqual(t, at+len(pattern), len(lines))
		for j := range pattern {
			require.True(t, pass.Equal(lines[at+j], pattern[j]))
		}
	})
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}
