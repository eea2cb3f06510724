package aos

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/vfsd/vfsd/internal/textmatch"
	"github.com/vfsd/vfsd/tools/edit"
)

// The document's fuzzy matching (host.fs.edit_file, behaviour 3) is
// "whitespace-normalized comparison" and "quote/dash normalization
// equivalence". vfsd's edit engine (tools/edit) already tries, after the
// exact search, whole lines with trailing white space ignored, with
// leading and trailing white space ignored, and with typographic
// punctuation folded; that is the first fuzzy stage here. The second,
// below, is what those line passes cannot find: text compared anywhere —
// inside a line or across lines — with every run of white space (line
// breaks included) equal to any other run, and typographic quotes, dashes
// and spaces equal to their ASCII forms.

// maxFuzzyBytes bounds the content the in-line fuzzy stage indexes: it
// keeps two offsets per byte (8 bytes a byte).
const maxFuzzyBytes = 8 << 20

// folded is text in its fuzzy form with a map back to the original.
type folded struct {
	norm string
	// start[i] and end[i] are the bytes of the original rune normalised
	// byte i came from (a run of white space maps to the whole run).
	start, end []int32
}

// fold returns s's fuzzy form: white-space runs become one space,
// typographic quotes, dashes and spaces their ASCII forms.
func fold(s string) folded {
	f := folded{start: make([]int32, 0, len(s)), end: make([]int32, 0, len(s))}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r >= utf8.RuneSelf {
			r = []rune(textmatch.Normalize(string(r)))[0]
		}
		if unicode.IsSpace(r) {
			j := i + n
			for j < len(s) {
				r2, n2 := utf8.DecodeRuneInString(s[j:])
				if r2 >= utf8.RuneSelf {
					r2 = []rune(textmatch.Normalize(string(r2)))[0]
				}
				if !unicode.IsSpace(r2) {
					break
				}
				j += n2
			}
			b.WriteByte(' ')
			f.start, f.end = append(f.start, int32(i)), append(f.end, int32(j))
			i = j
			continue
		}
		k := b.Len()
		b.WriteRune(r)
		for ; k < b.Len(); k++ {
			f.start, f.end = append(f.start, int32(i)), append(f.end, int32(i+n))
		}
		i += n
	}
	f.norm = b.String()
	return f
}

// foldNeedle is old_string's fuzzy form, without leading and trailing
// white space.
func foldNeedle(old string) string {
	return strings.Trim(fold(old).norm, " ")
}

// fuzzySpan is one fuzzy match: bytes [Start, End) of the content.
type fuzzySpan struct{ Start, End int }

// FuzzyFind returns the non-overlapping places of content that match old
// under the in-line fuzzy comparison, leftmost first. A match starts and
// ends at a non-space character. old made only of white space matches
// nothing.
func FuzzyFind(content, old string) []fuzzySpan {
	needle := foldNeedle(old)
	if needle == "" {
		return nil
	}
	f := fold(content)
	var out []fuzzySpan
	for off := 0; off <= len(f.norm)-len(needle); {
		i := strings.Index(f.norm[off:], needle)
		if i < 0 {
			break
		}
		s, e := off+i, off+i+len(needle)
		out = append(out, fuzzySpan{Start: int(f.start[s]), End: int(f.end[e-1])})
		off = e
	}
	return out
}

// toLF replaces every "\r\n" with "\n".
func toLF(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }

// crlfStyle reports whether content's line breaks are mostly "\r\n".
func crlfStyle(content string) bool {
	crlf := strings.Count(content, "\r\n")
	return crlf > strings.Count(content, "\n")-crlf
}

func isBlankRun(s string) bool { return strings.TrimLeft(s, " \t") == "" }

// FuzzyReplace replaces the matches spans (from FuzzyFind, ascending) of
// content with new_string, fitted to each match:
//
//   - white space that old_string begins or ends with was not part of the
//     match, so new_string loses the same leading and trailing white space
//     when it has it;
//   - when a match starts a line's text, the lines after new_string's
//     first are re-indented from old_string's indentation to the file's
//     (edit.Reindent: tabs for spaces, or a shift);
//   - an empty new_string that removes all of a line's text removes the
//     line;
//   - inserted line breaks take the file's style (LF or CRLF).
func FuzzyReplace(content string, spans []fuzzySpan, old, repl string) string {
	old, repl = toLF(old), toLF(repl)
	lead := old[:len(old)-len(strings.TrimLeftFunc(old, unicode.IsSpace))]
	trail := old[len(strings.TrimRightFunc(old, unicode.IsSpace)):]
	core := repl
	if lead != "" && strings.HasPrefix(core, lead) {
		core = core[len(lead):]
	}
	if trail != "" && strings.HasSuffix(core, trail) {
		core = core[:len(core)-len(trail)]
	}
	from := lead[strings.LastIndexByte(lead, '\n')+1:]
	crlf := crlfStyle(content)
	var b strings.Builder
	b.Grow(len(content))
	last := 0
	for _, sp := range spans {
		start, end := sp.Start, sp.End
		lineStart := strings.LastIndexByte(content[:start], '\n') + 1
		atLineText := isBlankRun(content[lineStart:start])
		text := core
		switch {
		case text == "" && atLineText:
			lineEnd := len(content)
			if j := strings.IndexByte(content[end:], '\n'); j >= 0 {
				lineEnd = end + j
			}
			if isBlankRun(strings.TrimSuffix(content[end:lineEnd], "\r")) {
				start, end = lineStart, lineEnd
				if end < len(content) {
					end++ // the line break goes with the line
				} else if start > 0 {
					start-- // the last line: the break before it goes
					if start > 0 && content[start-1] == '\r' {
						start--
					}
				}
			}
		case atLineText && strings.Contains(text, "\n"):
			if to := content[lineStart:start]; to != from {
				i := strings.IndexByte(text, '\n')
				text = text[:i+1] + edit.Reindent(text[i+1:], from, to)
			}
		}
		if crlf {
			text = strings.ReplaceAll(text, "\n", "\r\n")
		}
		b.WriteString(content[last:max(start, last)])
		b.WriteString(text)
		last = max(end, last)
	}
	b.WriteString(content[last:])
	return b.String()
}
