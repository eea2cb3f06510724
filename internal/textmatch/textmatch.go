// Package textmatch finds a run of lines inside a file's lines the way
// agents' patch and edit tools do: exactly first, then with decreasing
// strictness. apply_patch and edit_file share it so that a context which
// locates in one tool locates in the other.
//
// The passes, in order, follow Codex's apply-patch (seek_sequence.rs):
//
//  1. Exact: the lines are equal.
//  2. TrimEnd: equal after removing trailing white space.
//  3. Trim: equal after removing leading and trailing white space.
//  4. Punct: equal after Trim and mapping typographic dashes, quotes and
//     spaces to their ASCII forms (Normalize).
//
// A search returns the first pass that matches anywhere, and within it the
// first position; callers that need every match use All.
package textmatch

import (
	"strings"
	"unicode"
)

// Pass is the strictness at which lines matched.
type Pass int

// The passes, strictest first.
const (
	Exact Pass = iota
	TrimEnd
	Trim
	Punct
)

// Passes lists every pass, strictest first.
var Passes = []Pass{Exact, TrimEnd, Trim, Punct}

// String names the pass as receipts report it.
func (p Pass) String() string {
	switch p {
	case Exact:
		return "exact"
	case TrimEnd:
		return "trim_end"
	case Trim:
		return "trim"
	case Punct:
		return "unicode_punctuation"
	}
	return "unknown"
}

// Key returns the form of line compared under pass p.
func (p Pass) Key(line string) string {
	switch p {
	case TrimEnd:
		return strings.TrimRightFunc(line, unicode.IsSpace)
	case Trim:
		return strings.TrimFunc(line, unicode.IsSpace)
	case Punct:
		return Normalize(strings.TrimFunc(line, unicode.IsSpace))
	}
	return line
}

// Equal reports whether a and b match under pass p.
func (p Pass) Equal(a, b string) bool {
	if p == Exact {
		return a == b
	}
	return p.Key(a) == p.Key(b)
}

// Normalize maps typographic dashes, quotes and spaces to the ASCII
// hyphen, apostrophe, double quote and space that models type in their place.
func Normalize(s string) string {
	if isPlainASCII(s) {
		return s
	}
	return strings.Map(normalizeRune, s)
}

func isPlainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func normalizeRune(r rune) rune {
	switch r {
	case '\u2010', '\u2011', '\u2012', '\u2013', '\u2014', '\u2015', '\u2212':
		return '-'
	case '\u2018', '\u2019', '\u201A', '\u201B':
		return '\''
	case '\u201C', '\u201D', '\u201E', '\u201F':
		return '"'
	case '\u00A0', '\u2002', '\u2003', '\u2004', '\u2005', '\u2006', '\u2007', '\u2008',
		'\u2009', '\u200A', '\u202F', '\u205F', '\u3000':
		return ' '
	}
	return r
}

// Seek returns the index of the first occurrence of pattern in lines at or
// after start, and the pass that found it; ok is false when no pass finds
// it. An empty pattern matches at start.
//
// With eof (a Codex hunk marked "*** End of File"), the one position whose
// match ends at the last line is tried first, under every pass; if pattern
// does not sit there, the search falls back to the ordinary one from start,
// as Codex's seek_sequence documents. The end position is only tried when
// it is at or after start, so a match never lands before start.
func Seek(lines, pattern []string, start int, eof bool) (at int, pass Pass, ok bool) {
	if len(pattern) == 0 {
		return start, Exact, true
	}
	if len(pattern) > len(lines) {
		return 0, 0, false
	}
	if start < 0 {
		start = 0
	}
	if end := len(lines) - len(pattern); eof && end >= start {
		for _, p := range Passes {
			if matchAt(lines, keysOf(pattern, p), end, p) {
				return end, p, true
			}
		}
	}
	for _, p := range Passes {
		if i, ok := seekPass(lines, pattern, start, p); ok {
			return i, p, true
		}
	}
	return 0, 0, false
}

// All returns every index at which pattern occurs in lines under the first
// pass that finds any occurrence, and that pass. Occurrences may overlap.
func All(lines, pattern []string) (at []int, pass Pass) {
	if len(pattern) == 0 || len(pattern) > len(lines) {
		return nil, Exact
	}
	for _, p := range Passes {
		keys := keysOf(pattern, p)
		lineKeys := keysOf(lines, p) // each line's key once per pass, not once per window
		for i := 0; i+len(pattern) <= len(lines); i++ {
			if matchAt(lineKeys, keys, i, Exact) {
				at = append(at, i)
			}
		}
		if len(at) > 0 {
			return at, p
		}
	}
	return nil, Exact
}

func seekPass(lines, pattern []string, from int, p Pass) (int, bool) {
	keys := keysOf(pattern, p)
	for i := from; i+len(pattern) <= len(lines); i++ {
		if matchAt(lines, keys, i, p) {
			return i, true
		}
	}
	return 0, false
}

func keysOf(pattern []string, p Pass) []string {
	if p == Exact {
		return pattern
	}
	keys := make([]string, len(pattern))
	for i, l := range pattern {
		keys[i] = p.Key(l)
	}
	return keys
}

func matchAt(lines, keys []string, i int, p Pass) bool {
	for j, k := range keys {
		if p.Key(lines[i+j]) != k {
			return false
		}
	}
	return true
}
