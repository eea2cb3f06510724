package edit

import (
	"strings"
	"unicode"
)

// LineOf returns the 1-based line of content on which byte offset
// byteOffset lies: one more than the number of '\n' before it. Offsets
// outside content are clamped to it, so LineOf never panics.
func LineOf(content string, byteOffset int) int {
	byteOffset = max(0, min(byteOffset, len(content)))
	return 1 + strings.Count(content[:byteOffset], "\n")
}

// lineIndex is LF-normalised content split into lines.
type lineIndex struct {
	lines  []string // without their '\n'; a final '\n' does not start a line
	starts []int    // byte offset of each line in the content
}

// splitLines splits LF content into lines. "" has no lines; "a\n" and "a"
// have one.
func splitLines(s string) lineIndex {
	if s == "" {
		return lineIndex{}
	}
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	ix := lineIndex{lines: make([]string, 0, n), starts: make([]int, 0, n)}
	for off := 0; off < len(s); {
		j := strings.IndexByte(s[off:], '\n')
		if j < 0 {
			j = len(s) - off
		}
		ix.lines = append(ix.lines, s[off:off+j])
		ix.starts = append(ix.starts, off)
		off += j + 1
	}
	return ix
}

// patternLines splits an LF old_string into the lines it must match: one
// trailing newline ends its last line rather than adding an empty one.
func patternLines(old string) []string {
	return strings.Split(strings.TrimSuffix(old, "\n"), "\n")
}

// leading returns the leading white space of line, as textmatch's trim
// passes see it (unicode.IsSpace).
func leading(line string) string {
	return line[:len(line)-len(strings.TrimLeftFunc(line, unicode.IsSpace))]
}

// isBlank reports whether line is empty or only white space.
func isBlank(line string) bool {
	return len(leading(line)) == len(line)
}
