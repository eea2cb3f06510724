package edit

import (
	"sort"
	"strings"
)

// text is the content one edit sees, in the two forms the engine needs:
// as given, and with every "\r\n" replaced by "\n" for matching.
type text struct {
	orig string // the content as given
	norm string // orig with every "\r\n" replaced by "\n"
	crlf bool   // the file's style: more "\r\n" breaks than bare "\n" ones
	// cr holds, ascending, the offsets in norm of the '\n's that were
	// "\r\n" in orig: norm offset o is orig offset o + (how many are < o).
	cr []int
}

// newText prepares content for matching.
func newText(content string) *text {
	t := &text{orig: content, norm: content}
	pairs := strings.Count(content, "\r\n")
	if pairs == 0 {
		return t
	}
	bare := strings.Count(content, "\n") - pairs
	t.crlf = pairs > bare
	t.cr = make([]int, 0, pairs)
	var b strings.Builder
	b.Grow(len(content) - pairs)
	rest := content
	for {
		j := strings.Index(rest, "\r\n")
		if j < 0 {
			break
		}
		b.WriteString(rest[:j])
		t.cr = append(t.cr, b.Len())
		b.WriteByte('\n')
		rest = rest[j+2:]
	}
	b.WriteString(rest)
	t.norm = b.String()
	return t
}

// origOffset maps an offset in t.norm to the same place in t.orig. An
// offset at a '\n' that was "\r\n" maps to its '\r', so a span never
// separates the two.
func (t *text) origOffset(off int) int {
	return off + sort.SearchInts(t.cr, off)
}

// styled returns s, LF-normalised, with its line breaks in the file's style.
func (t *text) styled(s string) string {
	if t.crlf {
		return strings.ReplaceAll(s, "\n", "\r\n")
	}
	return s
}

// toLF replaces every "\r\n" in s by "\n", in one left-to-right pass (the
// same normalisation newText applies to content).
func toLF(s string) string {
	if !strings.Contains(s, "\r\n") {
		return s
	}
	return strings.ReplaceAll(s, "\r\n", "\n")
}
