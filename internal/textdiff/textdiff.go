// Package textdiff renders unified diffs of text, the one format vfsd shows
// people and models for every change: snapshot diffs, edit and patch
// receipts.
package textdiff

import (
	"strings"

	"github.com/aymanbagabas/go-udiff"
)

// NoFile is the label of the missing side of an added or deleted file.
const NoFile = "/dev/null"

// Unified returns the unified diff (three lines of context) turning old into
// new, labelled oldName and newName, or "" when they are equal. A side that
// does not end in a newline is marked as diff(1) marks it.
//
// The labels are quoted as git quotes paths (QuotePath), so a name with a
// newline or an escape sequence cannot forge a line of the diff.
func Unified(oldName, newName, old, new string) string {
	if old == new {
		return ""
	}
	return udiff.Unified(QuotePath(oldName), QuotePath(newName), old, new)
}

// QuotePath returns p as git prints a path with core.quotePath set (its
// default): unchanged when every byte is printable ASCII other than '"'
// and '\'; otherwise in double quotes, with C escapes for \a \b \t \n
// \v \f \r, '"' and '\', and three-digit octal for every other control
// byte (ESC is \033) and every byte from 0x7f up. The result is one line
// of plain ASCII, safe to print on a terminal, and git and patch(1) read
// it back. Every place that shows a session or host path to a person
// quotes it so.
func QuotePath(p string) string {
	i := 0
	for i < len(p) && !needsQuote(p[i]) {
		i++
	}
	if i == len(p) {
		return p
	}
	var b strings.Builder
	b.Grow(len(p) + 8)
	b.WriteByte('"')
	for j := 0; j < len(p); j++ {
		c := p[j]
		if !needsQuote(c) {
			b.WriteByte(c)
			continue
		}
		writeEscape(&b, c)
	}
	b.WriteByte('"')
	return b.String()
}

// writeEscape writes byte c as QuotePath escapes it.
func writeEscape(b *strings.Builder, c byte) {
	b.WriteByte('\\')
	switch c {
	case '\a':
		b.WriteByte('a')
	case '\b':
		b.WriteByte('b')
	case '\t':
		b.WriteByte('t')
	case '\n':
		b.WriteByte('n')
	case '\v':
		b.WriteByte('v')
	case '\f':
		b.WriteByte('f')
	case '\r':
		b.WriteByte('r')
	case '"', '\\':
		b.WriteByte(c)
	default:
		b.WriteByte('0' + c>>6)
		b.WriteByte('0' + c>>3&7)
		b.WriteByte('0' + c&7)
	}
}

// needsQuote reports whether byte c makes QuotePath quote a path.
func needsQuote(c byte) bool {
	return c < 0x20 || c >= 0x7f || c == '"' || c == '\\'
}

// Counts returns how many lines a unified diff adds and removes.
func Counts(unified string) (added, removed int) {
	for line := range strings.SplitSeq(unified, "\n") {
		switch {
		case strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "---"):
		case strings.HasPrefix(line, "+"):
			added++
		case strings.HasPrefix(line, "-"):
			removed++
		}
	}
	return added, removed
}
