package textdiff

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// ShowText renders s (a path, a summary) for a person at a terminal:
// unchanged when it is printable UTF-8 — "…", "é", "日本" stay as they are —
// and otherwise quoted as QuotePath quotes, but with printable non-ASCII
// characters kept: control characters, bytes that are not UTF-8, and
// Unicode's invisible format characters (bidirectional overrides, zero-width
// joiners: what makes a name read as another) are escaped, so nothing
// printed can move the cursor, recolour the terminal or disguise itself.
// Patches and diffs keep QuotePath, which git and patch(1) read back.
func ShowText(s string) string {
	if !needsShowQuote(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1, r < 0x80 && needsQuote(byte(r)), hidden(r):
			for _, c := range []byte(s[i : i+n]) {
				writeEscape(&b, c)
			}
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	b.WriteByte('"')
	return b.String()
}

// needsShowQuote reports whether ShowText quotes s.
func needsShowQuote(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n <= 1) || (r < 0x80 && needsQuote(byte(r))) || hidden(r) {
			return true
		}
		i += n
	}
	return false
}

// hidden reports whether r is a non-ASCII character a terminal does not
// show as itself: a control (C1), a format character (bidi controls,
// zero-width characters), a private-use or unassigned code point, or a
// separator other than the space.
func hidden(r rune) bool {
	if r < 0x80 {
		return false
	}
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Co, r) ||
		unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r) || !unicode.IsPrint(r) && !unicode.IsGraphic(r)
}
