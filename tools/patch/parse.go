package patch

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The markers of the format.
const (
	beginMarker     = "*** Begin Patch"
	endMarker       = "*** End Patch"
	addMarker       = "*** Add File: "
	deleteMarker    = "*** Delete File: "
	updateMarker    = "*** Update File: "
	moveMarker      = "*** Move to: "
	eofMarker       = "*** End of File"
	contextMarker   = "@@ "
	bareContextMark = "@@"
)

const validHeaders = "'*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'"

// line is a line of the patch text and its 1-based number there.
type line struct {
	text string
	n    int
}

// Parse parses V4A patch text. Failures are *ParseError.
//
// Like Codex, Parse is lenient: the text may be surrounded by white space;
// the "*** Begin Patch", "*** End Patch" and hunk header lines may carry
// white space around them; the patch may be wrapped in a heredoc
// ("<<'EOF'" ... "EOF", also as "apply_patch <<'EOF'"); lines may end in
// CRLF; and the first chunk of an update may omit its "@@" line. Beyond
// Codex, blank lines between hunks are skipped, "@@" and "*** End of File"
// may carry trailing white space, "*** Move to:" may be indented, and
// stacked "@@ class" / "@@ method" lines (as Codex's instructions
// describe) narrow the search step by step. A patch without any hunk is an
// error here, where Codex fails it only when applying.
func Parse(text string) (*Patch, error) {
	if !utf8.ValidString(text) {
		return nil, &ParseError{Line: invalidUTF8Line(text), Msg: "the patch is not valid UTF-8 text; send the patch as UTF-8"}
	}
	lines, last := splitLines(text)
	if len(lines) == 0 {
		return nil, &ParseError{Line: last, Msg: "the patch is empty; it must start with '*** Begin Patch' and end with '*** End Patch'"}
	}
	body, err := envelope(lines)
	if err != nil {
		return nil, err
	}
	p := &Patch{}
	for i := 0; i < len(body); {
		if isBlank(body[i].text) {
			i++
			continue
		}
		h, n, err := parseHunk(body[i:])
		if err != nil {
			return nil, err
		}
		p.Hunks = append(p.Hunks, h)
		i += n
	}
	if len(p.Hunks) == 0 {
		return nil, &ParseError{
			Line: lines[len(lines)-1].n,
			Msg:  "the patch has no file operations; put " + validHeaders + " sections between '*** Begin Patch' and '*** End Patch'",
		}
	}
	return p, nil
}

// splitLines splits text the way Codex reads it, text.trim().lines(): the
// text without surrounding white space, split at "\n" with one "\r" before
// it dropped. It also returns the number of the text's last line, for
// errors about an empty patch.
func splitLines(text string) ([]line, int) {
	trimmed := strings.TrimLeftFunc(text, unicode.IsSpace)
	first := 1 + strings.Count(text[:len(text)-len(trimmed)], "\n")
	trimmed = strings.TrimRightFunc(trimmed, unicode.IsSpace)
	if trimmed == "" {
		return nil, max(1, strings.Count(text, "\n"))
	}
	var out []line
	n := first
	for {
		i := strings.IndexByte(trimmed, '\n')
		if i < 0 {
			out = append(out, line{text: trimmed, n: n})
			break
		}
		out = append(out, line{text: strings.TrimSuffix(trimmed[:i], "\r"), n: n})
		trimmed = trimmed[i+1:]
		n++
	}
	return out, out[len(out)-1].n
}

// envelope checks the "*** Begin Patch" and "*** End Patch" lines, looking
// inside a heredoc wrapper when they are not the first and last lines, and
// returns the lines between them.
func envelope(lines []line) ([]line, error) {
	body, err := markers(lines)
	if err == nil {
		return body, nil
	}
	if len(lines) >= 4 {
		if delim, ok := heredocStart(lines[0].text); ok {
			last := strings.TrimRightFunc(lines[len(lines)-1].text, unicode.IsSpace)
			if strings.HasSuffix(last, delim) {
				return markers(lines[1 : len(lines)-1])
			}
		}
	}
	return nil, err
}

// markers checks that lines start with "*** Begin Patch" and end with
// "*** End Patch", either surrounded by white space, and returns the lines
// between them.
func markers(lines []line) ([]line, error) {
	first := strings.TrimSpace(lines[0].text)
	last := lines[len(lines)-1]
	if len(lines) >= 2 && first == beginMarker && strings.TrimSpace(last.text) == endMarker {
		return lines[1 : len(lines)-1], nil
	}
	if first != beginMarker {
		return nil, &ParseError{Line: lines[0].n, Msg: fmt.Sprintf(
			"the first line of the patch must be '*** Begin Patch', got '%s'", clip(lines[0].text))}
	}
	return nil, &ParseError{Line: last.n, Msg: fmt.Sprintf(
		"the last line of the patch must be '*** End Patch', got '%s'; end the patch with '*** End Patch' on its own line", clip(last.text))}
}

// heredocStart recognises the first line of a heredoc wrapper: "<<EOF",
// "<<'EOF'" or "<<\"EOF\"" as Codex accepts it, also with another
// delimiter, a space after "<<", or the command in front, as a shell
// script would have it ("apply_patch <<'EOF'"). It returns the delimiter.
func heredocStart(s string) (string, bool) {
	s = strings.TrimSpace(s)
	for _, cmd := range []string{"apply_patch", "applypatch"} {
		if rest, ok := strings.CutPrefix(s, cmd); ok {
			if rest = strings.TrimLeft(rest, " \t"); strings.HasPrefix(rest, "<<") {
				s = rest
			}
			break
		}
	}
	s, ok := strings.CutPrefix(s, "<<")
	if !ok {
		return "", false
	}
	s = strings.TrimLeft(s, " \t")
	if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		s = s[1 : len(s)-1]
	}
	if s == "" || strings.ContainsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || strings.ContainsRune(`'"<>|&;()`+"`", r)
	}) {
		return "", false
	}
	return s, true
}

// parseHunk parses the hunk at the start of lines, whose first line is not
// blank, and returns it with the number of lines it takes.
func parseHunk(lines []line) (Hunk, int, error) {
	head := lines[0]
	first := strings.TrimSpace(head.text)
	if path, ok := strings.CutPrefix(first, addMarker); ok {
		h := Hunk{Op: OpAdd, Path: strings.TrimSpace(path), Line: head.n}
		var b strings.Builder
		n := 1
		for ; n < len(lines); n++ {
			text, ok := strings.CutPrefix(lines[n].text, "+")
			if !ok {
				break
			}
			b.WriteString(text)
			b.WriteByte('\n')
		}
		h.Contents = b.String()
		return h, n, nil
	}
	if path, ok := strings.CutPrefix(first, deleteMarker); ok {
		return Hunk{Op: OpDelete, Path: strings.TrimSpace(path), Line: head.n}, 1, nil
	}
	path, ok := strings.CutPrefix(first, updateMarker)
	if !ok {
		return Hunk{}, 0, &ParseError{Line: head.n, Msg: fmt.Sprintf(
			"'%s' is not a valid hunk header. Valid hunk headers: %s", clip(first), validHeaders)}
	}
	h := Hunk{Op: OpUpdate, Path: strings.TrimSpace(path), Line: head.n}
	n := 1
	if n < len(lines) {
		if to, ok := moveTarget(lines[n].text); ok {
			if to == "" {
				return Hunk{}, 0, &ParseError{Line: lines[n].n, Msg: "'*** Move to:' needs the destination path after it, as in '*** Move to: src/new_name.py'"}
			}
			h.MoveTo = to
			n++
		}
	}
	for n < len(lines) {
		text := lines[n].text
		if isBlank(text) {
			n++
			continue
		}
		if strings.HasPrefix(text, "*") {
			break
		}
		c, used, err := parseChunk(lines[n:], len(h.Chunks) == 0)
		if err != nil {
			return Hunk{}, 0, err
		}
		h.Chunks = append(h.Chunks, c)
		n += used
	}
	if len(h.Chunks) == 0 {
		return Hunk{}, 0, &ParseError{Line: head.n, Msg: fmt.Sprintf(
			"Update file hunk for path '%s' is empty; follow the header with '@@' and the lines to change, each starting with ' ' (context), '-' (removed) or '+' (added)",
			h.Path)}
	}
	return h, n, nil
}

// moveTarget recognises a "*** Move to:" line and returns its path.
func moveTarget(text string) (string, bool) {
	t := strings.TrimSpace(text)
	if t == strings.TrimSpace(moveMarker) {
		return "", true
	}
	to, ok := strings.CutPrefix(t, moveMarker)
	return strings.TrimSpace(to), ok
}

// parseChunk parses the chunk at the start of lines and returns it with
// the number of lines it takes. Only the first chunk of an update may
// start without an "@@" line.
func parseChunk(lines []line, first bool) (Chunk, int, error) {
	c := Chunk{Line: lines[0].n}
	i := 0
	if ctx, ok := contextLine(lines[0].text); ok {
		c.Context = ctx
		i = 1
	} else if !first {
		return Chunk{}, 0, &ParseError{Line: lines[0].n, Msg: fmt.Sprintf(
			"Expected update hunk to start with a @@ context marker, got: '%s'. Start each further chunk with '@@' (or '@@ ' and a line of the file, such as a function's first line)",
			clip(lines[0].text))}
	}
	if i >= len(lines) {
		return Chunk{}, 0, &ParseError{Line: c.Line, Msg: "Update hunk does not contain any lines; after '@@' give the lines to change, each starting with ' ' (context), '-' (removed) or '+' (added)"}
	}
	if i == 1 {
		if _, ok := contextLine(lines[1].text); ok {
			// Stacked "@@" lines: this one only moves the search on.
			return c, 1, nil
		}
	}
	parsed := 0
scan:
	for ; i < len(lines); i++ {
		text := lines[i].text
		if strings.TrimRightFunc(text, unicode.IsSpace) == eofMarker {
			if parsed == 0 {
				return Chunk{}, 0, &ParseError{Line: lines[i].n, Msg: "Update hunk does not contain any lines before '*** End of File'; give the lines to change first"}
			}
			c.EOF = true
			i++
			break
		}
		switch {
		case text == "":
			c.Unchanged = append(c.Unchanged, [2]int{len(c.Old), len(c.New)})
			c.Old = append(c.Old, "")
			c.New = append(c.New, "")
		case text[0] == ' ':
			c.Unchanged = append(c.Unchanged, [2]int{len(c.Old), len(c.New)})
			c.Old = append(c.Old, text[1:])
			c.New = append(c.New, text[1:])
		case text[0] == '+':
			c.New = append(c.New, text[1:])
		case text[0] == '-':
			c.Old = append(c.Old, text[1:])
		default:
			if parsed == 0 {
				return Chunk{}, 0, &ParseError{Line: lines[i].n, Msg: fmt.Sprintf(
					"Unexpected line found in update hunk: '%s'. Every line should start with ' ' (context line), '+' (added line), or '-' (removed line)",
					clip(text))}
			}
			// The start of the next chunk or hunk.
			break scan
		}
		parsed++
	}
	return c, i, nil
}

// contextLine recognises an "@@" line and returns its context text ("" for
// a bare "@@", also when white space follows it).
func contextLine(text string) (string, bool) {
	if strings.TrimRightFunc(text, unicode.IsSpace) == bareContextMark {
		return "", true
	}
	return strings.CutPrefix(text, contextMarker)
}

func isBlank(s string) bool {
	return strings.TrimSpace(s) == ""
}

// invalidUTF8Line returns the 1-based line of the first invalid UTF-8 in s.
func invalidUTF8Line(s string) int {
	n := 1
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return n
		}
		if r == '\n' {
			n++
		}
		i += size
	}
	return n
}

// clip shortens a patch line quoted in an error message.
func clip(s string) string {
	const limit = 120
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
