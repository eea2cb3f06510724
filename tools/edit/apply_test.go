package edit

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// applied is the expectation for one successful edit.
type applied struct {
	pass  string
	lines []int
}

type applyCase struct {
	name    string
	content string
	edits   []Edit
	want    string    // the new content, when the edits succeed
	applied []applied // per edit; count is len(lines)
	err     error     // the expected error (compared with require.Equal)
}

func one(old, new string) []Edit { return []Edit{{Old: old, New: new}} }

func all(old, new string) []Edit { return []Edit{{Old: old, New: new, ReplaceAll: true}} }

func exact(lines ...int) []applied { return []applied{{"exact", lines}} }

func runCases(t *testing.T, cases []applyCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := Apply(c.content, c.edits)
			if c.err != nil {
				require.Nil(t, r)
				require.Equal(t, c.err, err)
				require.NotEmpty(t, err.Error())
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, r.Content)
			require.Len(t, r.Edits, len(c.edits))
			total := 0
			for i, a := range c.applied {
				require.Equal(t, a.pass, r.Edits[i].Pass, "edit %d pass", i)
				require.Equal(t, a.lines, r.Edits[i].Lines, "edit %d lines", i)
				require.Equal(t, len(a.lines), r.Edits[i].Count, "edit %d count", i)
				total += len(a.lines)
			}
			require.Equal(t, total, r.Replacements)
		})
	}
}

func TestExact(t *testing.T) {
	runCases(t, []applyCase{
		{name: "unique", content: "a\nfoo\nb\n", edits: one("foo", "bar"), want: "a\nbar\nb\n", applied: exact(2)},
		{name: "mid-line", content: "let x = 1;\n", edits: one("= 1", "= 2"), want: "let x = 2;\n", applied: exact(1)},
		{
			name: "regex and dollar are literal", content: "s := re.Replace(`a.*b$`, \"$1\\\\n\")\n",
			edits: one("`a.*b$`, \"$1\\\\n\"", "`^[x]+$`, \"${1}$$\\\\\""), want: "s := re.Replace(`^[x]+$`, \"${1}$$\\\\\")\n", applied: exact(1),
		},
		{name: "dot does not match any char", content: "axb\na.b\n", edits: one("a.b", "ok"), want: "axb\nok\n", applied: exact(2)},
		{name: "backslash n is not a newline", content: "a\\nb\na\nb\n", edits: one(`a\nb`, "X"), want: "X\na\nb\n", applied: exact(1)},
		{
			name: "ambiguous", content: "foo\nbar\nfoo\nbaz foo\n", edits: one("foo", "x"),
			err: &AmbiguousError{Index: 0, Lines: []int{1, 3, 4}, Pass: "exact"},
		},
		{name: "replace all", content: "foo\nbar\nfoo\nbaz foo\n", edits: all("foo", "x"), want: "x\nbar\nx\nbaz x\n", applied: exact(1, 3, 4)},
		{name: "replace all one match", content: "foo bar", edits: all("bar", "baz"), want: "foo baz", applied: exact(1)},
		{name: "replace all counts each occurrence on a line", content: "x x x\nx", edits: all("x", "y"), want: "y y y\ny", applied: exact(1, 1, 1, 2)},
		{name: "deletion", content: "a\nb\nc", edits: one("b\n", ""), want: "a\nc", applied: exact(2)},
		{name: "delete everything", content: "only\n", edits: one("only\n", ""), want: "", applied: exact(1)},
		{name: "delete a whole line without its break", content: "a\nb\nc\n", edits: one("b", ""), want: "a\nc\n", applied: exact(2)},
		{name: "delete whole lines without the last break", content: "a\nb\nc", edits: one("a\nb", ""), want: "c", applied: exact(1)},
		{name: "delete the last line, no final newline", content: "a\nb", edits: one("b", ""), want: "a", applied: exact(2)},
		{name: "delete the only line", content: "b\n", edits: one("b", ""), want: "", applied: exact(1)},
		{name: "delete mid-line is literal", content: "a b c\n", edits: one("b", ""), want: "a  c\n", applied: exact(1)},
		{name: "delete line prefix is literal", content: "ab\nc\n", edits: one("a", ""), want: "b\nc\n", applied: exact(1)},
		{name: "delete CRLF line", content: "a\r\nb\r\nc\r\n", edits: one("b", ""), want: "a\r\nc\r\n", applied: exact(2)},
		{name: "delete all whole lines", content: "x\nx\nx", edits: all("x", ""), want: "", applied: exact(1, 2, 3)},
		{name: "delete all, mixed whole and partial", content: "x\nax\nx\n", edits: all("x", ""), want: "a\n", applied: exact(1, 2, 3)},
		{name: "delete adjacent spans stay apart", content: "\n\nb\nb", edits: all("\nb", ""), want: "\n", applied: exact(2, 3)},
		{name: "insert with trailing newline", content: "a\nc\n", edits: one("a\n", "a\nb\n"), want: "a\nb\nc\n", applied: exact(1)},
		{name: "unicode", content: "héllo wörld\n日本語テキスト\n", edits: one("日本語", "中文"), want: "héllo wörld\n中文テキスト\n", applied: exact(2)},
		{name: "old starting with newline reports its line", content: "a\nb\n", edits: one("\nb", "\nB"), want: "a\nB\n", applied: exact(1)},
		{name: "no final newline kept", content: "a\nb", edits: one("b", "c"), want: "a\nc", applied: exact(2)},
		{name: "final newline kept", content: "a\nb\n", edits: one("b", "c"), want: "a\nc\n", applied: exact(2)},
		{name: "trailing newline in old and new", content: "x\nfoo\nfoobar\n", edits: one("foo\n", "bar\n"), want: "x\nbar\nfoobar\n", applied: exact(2)},
		{
			name: "without trailing newline the same old is ambiguous", content: "x\nfoo\nfoobar\n", edits: one("foo", "bar"),
			err: &AmbiguousError{Index: 0, Lines: []int{2, 3}, Pass: "exact"},
		},
		{name: "exact is literal about a final newline", content: "a\nlast\n", edits: one("last\n", "LAST"), want: "a\nLAST", applied: exact(2)},
	})
}

// Occurrences that overlap count as separate candidates: an edit must name
// one place, and "aa" in "aaa" names two. replace_all replaces the leftmost
// non-overlapping ones, as strings.ReplaceAll does.
func TestOverlapping(t *testing.T) {
	runCases(t, []applyCase{
		{name: "aa in aaa is ambiguous", content: "aaa", edits: one("aa", "X"), err: &AmbiguousError{Lines: []int{1, 1}, Pass: "exact"}},
		{name: "aa in aaa replace all", content: "aaa", edits: all("aa", "X"), want: "Xa", applied: exact(1)},
		{name: "aba in abababa", content: "abababa", edits: all("aba", "X"), want: "XbX", applied: exact(1, 1)},
		{name: "aba in abababa ambiguous", content: "abababa", edits: one("aba", "X"), err: &AmbiguousError{Lines: []int{1, 1, 1}, Pass: "exact"}},
		{name: "across lines", content: "a\na\na\n", edits: one("a\na", "b"), err: &AmbiguousError{Lines: []int{1, 2}, Pass: "exact"}},
		{name: "across lines replace all", content: "a\na\na\n", edits: all("a\na", "b"), want: "b\na\n", applied: exact(1)},
		{name: "no overlap: unique", content: "aab", edits: one("ab", "X"), want: "aX", applied: exact(1)},
		{name: "periodic pattern long run", content: strings.Repeat("ab", 1000), edits: all("abab", "X"), want: strings.Repeat("X", 500), applied: exact(ones(500)...)},
	})
}

func ones(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = 1
	}
	return s
}

func TestLineEndings(t *testing.T) {
	runCases(t, []applyCase{
		{name: "CRLF file, LF old and new", content: "one\r\ntwo\r\nthree\r\n", edits: one("one\ntwo\n", "1\n2\n"), want: "1\r\n2\r\nthree\r\n", applied: exact(1)},
		{name: "CRLF file, CRLF old and new", content: "one\r\ntwo\r\nthree\r\n", edits: one("two\r\nthree", "2\r\n3"), want: "one\r\n2\r\n3\r\n", applied: exact(2)},
		{name: "CRLF file, new adds lines", content: "a\r\nb\r\n", edits: one("b", "b\nc\nd"), want: "a\r\nb\r\nc\r\nd\r\n", applied: exact(2)},
		{name: "CRLF file without final newline", content: "a\r\nb", edits: one("b", "c\nd"), want: "a\r\nc\r\nd", applied: exact(2)},
		{name: "CRLF file keeps final CRLF", content: "a\r\nb\r\n", edits: one("b\n", "c\n"), want: "a\r\nc\r\n", applied: exact(2)},
		{name: "CRLF file, delete a line", content: "a\r\nb\r\nc\r\n", edits: one("b\n", ""), want: "a\r\nc\r\n", applied: exact(2)},
		{name: "CRLF file, old starts at a break", content: "a\r\nb\r\nc", edits: one("\nb", ""), want: "a\r\nc", applied: exact(1)},
		{name: "LF file stays LF with CRLF new", content: "a\nb\n", edits: one("a", "x\r\ny"), want: "x\ny\nb\n", applied: exact(1)},
		{name: "LF file, CRLF old", content: "a\nb\nc\n", edits: one("a\r\nb\r\n", "B\r\n"), want: "B\nc\n", applied: exact(1)},
		{name: "mixed tie is LF, untouched breaks kept", content: "a\r\nb\nc\r\nd\n", edits: one("c", "c1\nc2"), want: "a\r\nb\nc1\nc2\r\nd\n", applied: exact(3)},
		{name: "mixed majority CRLF", content: "a\r\nb\r\nc\n", edits: one("b", "x\ny"), want: "a\r\nx\r\ny\r\nc\n", applied: exact(2)},
		{name: "mixed majority LF", content: "a\nb\nc\r\nd", edits: one("d", "x\r\ny"), want: "a\nb\nc\r\nx\ny", applied: exact(4)},
		{name: "lone CR is content", content: "a\rb\nc\n", edits: one("a\rb", "ab"), want: "ab\nc\n", applied: exact(1)},
		{name: "CR before CRLF stays", content: "a\r\r\nb\r\n", edits: one("b", "B"), want: "a\r\r\nB\r\n", applied: exact(2)},
		{name: "CRLF line numbers", content: "x\r\ny\r\nz\r\ny\r\n", edits: all("y", "Y"), want: "x\r\nY\r\nz\r\nY\r\n", applied: exact(2, 4)},
		{name: "identical after normalising", content: "a\r\nb", edits: one("a\r\nb", "a\nb"), err: &NoChangeError{}},
		{name: "CRLF file trailing newline only via EOF", content: "a\r\nb", edits: one("b\r\n", "c\r\n"), want: "a\r\nc", applied: exact(2)},
	})
}

func TestInvalid(t *testing.T) {
	runCases(t, []applyCase{
		{name: "empty old", content: "abc", edits: one("", "x"), err: &EmptyOldError{}},
		{name: "empty old on empty file", content: "", edits: one("", "x"), err: &EmptyOldError{}},
		{name: "identical", content: "abc", edits: one("b", "b"), err: &NoChangeError{}},
		{name: "identical even when absent", content: "abc", edits: one("zz", "zz"), err: &NoChangeError{}},
		{name: "empty file", content: "", edits: one("x", "y"), err: &NotFoundError{}},
		{name: "replace all zero matches on empty file", content: "", edits: all("x", "y"), err: &NotFoundError{}},
		{name: "blank old never matches by lines", content: "a\n\nb\n", edits: one("   ", "x"), err: &NotFoundError{Closest: &Region{StartLine: 2, EndLine: 2, Text: "", Similarity: 1}}},
		{name: "no edits", content: "abc", edits: nil, want: "abc"},
	})
}

func TestNotFoundClosest(t *testing.T) {
	content := "package p\n\nfunc a() int {\n\treturn 1\n}\n\nfunc b() int {\n\treturn 2\n}\n"
	_, err := Apply(content, all("func b() string {\n\treturn 2", "x"))
	var nf *NotFoundError
	require.ErrorAs(t, err, &nf)
	require.Equal(t, 0, nf.Index)
	require.NotNil(t, nf.Closest)
	require.Equal(t, 7, nf.Closest.StartLine)
	require.Equal(t, 8, nf.Closest.EndLine)
	require.Equal(t, "func b() int {\n\treturn 2", nf.Closest.Text)
	require.Greater(t, nf.Closest.Similarity, 0.7)
	require.Less(t, nf.Closest.Similarity, 1.0)
	require.Contains(t, err.Error(), "lines 7-8")

	// Ties go to the earliest window.
	_, err = Apply("x\ny\nx\ny\n", one("x\nzzz", "q"))
	require.ErrorAs(t, err, &nf)
	require.Equal(t, &Region{StartLine: 1, EndLine: 2, Text: "x\ny", Similarity: nf.Closest.Similarity}, nf.Closest)

	// An old_string longer than the file: the whole file, lines beyond it
	// scoring 0.
	_, err = Apply("a\nb\n", one("a\nb\nc\nd", "q"))
	require.ErrorAs(t, err, &nf)
	require.Equal(t, &Region{StartLine: 1, EndLine: 2, Text: "a\nb", Similarity: 0.5}, nf.Closest)

	// An extra line at either end of old_string: the window hangs over
	// the file's edge.
	_, err = Apply("a\nb\ndef g():\n    pass\n", one("def g():\n    pass\n\n", "q"))
	require.ErrorAs(t, err, &nf)
	require.Equal(t, &Region{StartLine: 3, EndLine: 4, Text: "def g():\n    pass", Similarity: 2.0 / 3}, nf.Closest)
	_, err = Apply("x = 1\ny = 2\nz = 3\n", one("import os\nx = 1\ny = 2\n", "q"))
	require.ErrorAs(t, err, &nf)
	require.Equal(t, &Region{StartLine: 1, EndLine: 2, Text: "x = 1\ny = 2", Similarity: 2.0 / 3}, nf.Closest)

	// CRLF content: line breaks in Text are LF.
	_, err = Apply("a\r\nb\r\nc\r\n", one("b\nC", "q"))
	require.ErrorAs(t, err, &nf)
	require.Equal(t, "b\nc", nf.Closest.Text)
	require.Equal(t, 2, nf.Closest.StartLine)

	// An empty file has no closest region.
	_, err = Apply("", one("x", "y"))
	require.ErrorAs(t, err, &nf)
	require.Nil(t, nf.Closest)
	require.Contains(t, err.Error(), "empty")
}

func TestMultiEdit(t *testing.T) {
	runCases(t, []applyCase{
		{
			name: "each edit sees the previous result", content: "a b c\n",
			edits:   []Edit{{Old: "a", New: "x"}, {Old: "x b", New: "y"}, {Old: "c", New: "z\nw", ReplaceAll: true}},
			want:    "y z\nw\n",
			applied: []applied{{"exact", []int{1}}, {"exact", []int{1}}, {"exact", []int{1}}},
		},
		{
			name: "lines are in the content the edit saw", content: "a\nb\nc\n",
			edits:   []Edit{{Old: "a\n", New: "0\n1\n2\n"}, {Old: "c", New: "C"}},
			want:    "0\n1\n2\nb\nC\n",
			applied: []applied{{"exact", []int{1}}, {"exact", []int{5}}},
		},
		{
			name: "replacements sum", content: "x y x y x\n",
			edits:   []Edit{{Old: "x", New: "1", ReplaceAll: true}, {Old: "y", New: "2", ReplaceAll: true}},
			want:    "1 2 1 2 1\n",
			applied: []applied{{"exact", []int{1, 1, 1}}, {"exact", []int{1, 1}}},
		},
		{
			name: "edit 1 not found", content: "a b c\n",
			edits: []Edit{{Old: "a", New: "x"}, {Old: "a", New: "y"}, {Old: "c", New: "z"}},
			err:   &NotFoundError{Index: 1, Closest: &Region{StartLine: 1, EndLine: 1, Text: "x b c", Similarity: nf1("x b c", "a")}},
		},
		{
			name: "edit 2 ambiguous after edit 1", content: "a b c\n",
			edits: []Edit{{Old: "a", New: "c"}, {Old: "b", New: "B"}, {Old: "c", New: "z"}},
			err:   &AmbiguousError{Index: 2, Lines: []int{1, 1}, Pass: "exact"},
		},
		{name: "edit 1 empty", content: "a", edits: []Edit{{Old: "a", New: "b"}, {}}, err: &EmptyOldError{Index: 1}},
		{name: "edit 1 no change", content: "a", edits: []Edit{{Old: "a", New: "b"}, {Old: "q", New: "q"}}, err: &NoChangeError{Index: 1}},
	})
}

// nf1 is the similarity closest reports between one-line file and pattern.
func nf1(line, pattern string) float64 {
	a, b := newSignature(line), newSignature(pattern)
	return a.similarity(&b)
}

func TestErrorsAs(t *testing.T) {
	_, err := Apply("a a", []Edit{{Old: "a", New: "b", ReplaceAll: true}, {Old: "b", New: "c"}})
	var amb *AmbiguousError
	require.True(t, errors.As(err, &amb))
	require.Equal(t, 1, amb.Index)
	require.Equal(t, []int{1, 1}, amb.Lines)
	require.Equal(t, "edit 1: old_string matches 2 places, starting at lines 1, 1; add surrounding lines to make it unique, or set replace_all", err.Error())

	_, err = Apply(strings.Repeat("x\n", 30), one("x", "y"))
	require.ErrorAs(t, err, &amb)
	require.Len(t, amb.Lines, 30)
	require.Contains(t, err.Error(), "… (10 more)")

	var empty *EmptyOldError
	_, err = Apply("a", one("", "b"))
	require.ErrorAs(t, err, &empty)
	var same *NoChangeError
	_, err = Apply("a", one("a", "a"))
	require.ErrorAs(t, err, &same)
}

func TestLongLines(t *testing.T) {
	long := strings.Repeat("abcdefghij", 100_000) // 1 MB on one line
	content := "head\n" + long + "NEEDLE" + long + "\ntail\n"
	r, err := Apply(content, one("NEEDLE", "found"))
	require.NoError(t, err)
	require.Equal(t, "head\n"+long+"found"+long+"\ntail\n", r.Content)
	require.Equal(t, []int{2}, r.Edits[0].Lines)

	// Fuzzy on a long line: trailing white space in the file.
	content = "head\n" + long + "   \ntail\n"
	r, err = Apply(content, one(long+"\n", "short\n"))
	require.NoError(t, err)
	require.Equal(t, "head\nshort\ntail\n", r.Content)
	require.Equal(t, "trim_end", r.Edits[0].Pass)

	// Not found: the closest region is the long line.
	_, err = Apply(content, one(long[:500]+"X", "y"))
	var nf *NotFoundError
	require.ErrorAs(t, err, &nf)
	require.Equal(t, 2, nf.Closest.StartLine)
}

func TestLineOf(t *testing.T) {
	s := "ab\ncd\r\n\nef"
	for _, c := range []struct{ off, line int }{
		{-5, 1}, {0, 1}, {2, 1}, {3, 2}, {6, 2}, {7, 3}, {8, 4}, {10, 4}, {99, 4},
	} {
		require.Equal(t, c.line, LineOf(s, c.off), "offset %d", c.off)
	}
	require.Equal(t, 1, LineOf("", 0))
}

// TestApplyLimits: limits are checked before the result is built, so
// chained amplifying edits fail fast with a typed error.
func TestApplyLimits(t *testing.T) {
	chain := make([]Edit, 36)
	for i := range chain {
		chain[i] = Edit{Old: "A", New: "AA", ReplaceAll: true}
	}
	for _, c := range []struct {
		name    string
		content string
		edits   []Edit
		lim     Limits
		err     error
		want    string
	}{
		{name: "chain stops at the byte limit", content: "A", edits: chain, lim: Limits{MaxBytes: 1 << 20},
			err: &TooLargeError{Index: 20, Size: 1 << 21, Limit: 1 << 20}},
		{name: "chain stops at the replacement limit", content: "A", edits: chain, lim: Limits{MaxReplacements: 1000},
			err: &TooManyError{Index: 9, Count: 512, Limit: 1000 - 511}},
		{name: "exactly at the byte limit", content: "AB", edits: []Edit{{Old: "A", New: "AAA"}}, lim: Limits{MaxBytes: 4}, want: "AAAB"},
		{name: "CRLF growth counted", content: "a\r\nb\r\n", edits: []Edit{{Old: "a", New: "x\ny"}}, lim: Limits{MaxBytes: 8},
			err: &TooLargeError{Size: 9, Limit: 8}},
		{name: "fuzzy replacements counted", content: "  x()\n  x()\n", edits: []Edit{{Old: "x() \n", New: "y()\n", ReplaceAll: true}}, lim: Limits{MaxReplacements: 1},
			err: &TooManyError{Count: 2, Limit: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := ApplyLimited(c.content, c.edits, c.lim)
			if c.err != nil {
				require.Equal(t, c.err, err)
				require.Nil(t, r)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, r.Content)
		})
	}
	// Ambiguity in a large content keeps the first candidates and counts
	// the rest.
	_, err := Apply(strings.Repeat("x\n", 5000), []Edit{{Old: "x", New: "y"}})
	var amb *AmbiguousError
	require.ErrorAs(t, err, &amb)
	require.Len(t, amb.Lines, maxCandidates)
	require.Equal(t, 5000, amb.Total())
	require.Contains(t, amb.Error(), "matches 5000 places")
}
