package edit

import "strings"

// Edit is one replacement an agent asks for: old_string, new_string and
// replace_all.
type Edit struct {
	Old        string // the text to find; must not be empty
	New        string // its replacement; empty deletes
	ReplaceAll bool   // replace every match instead of requiring exactly one
}

// Result is the outcome of a successful Apply.
type Result struct {
	Content      string    // the new content
	Replacements int       // total replacements over all edits
	Edits        []Applied // one per edit, in order
}

// Applied describes how one edit was applied.
type Applied struct {
	// Pass is how old_string was found: "exact" for the literal search (or
	// exact lines, see the package documentation), else the line-based pass
	// that found it: "trim_end", "trim" or "unicode_punctuation".
	Pass string
	// Lines holds the 1-based start line, in the content this edit saw, of
	// each replacement, ascending.
	Lines []int
	Count int // replacements made by this edit
}

// Apply applies edits in order to content, all or nothing: edit i sees the
// result of edits 0..i-1, and if any edit fails Apply returns a nil Result
// and that edit's error (*EmptyOldError, *NoChangeError, *NotFoundError or
// *AmbiguousError, each with the edit's Index). No edits leave content
// unchanged. Apply does no I/O, is deterministic, and does not panic.
func Apply(content string, edits []Edit) (*Result, error) {
	r := &Result{Content: content, Edits: make([]Applied, 0, len(edits))}
	for i, e := range edits {
		next, applied, err := applyOne(r.Content, e, i)
		if err != nil {
			return nil, err
		}
		r.Content = next
		r.Replacements += applied.Count
		r.Edits = append(r.Edits, applied)
	}
	return r, nil
}

// span is a replacement in a text's LF-normalised form: bytes [start, end)
// become text (LF line breaks).
type span struct {
	start, end int
	text       string
}

// applyOne applies edit e, the index-th, to content.
func applyOne(content string, e Edit, index int) (string, Applied, error) {
	if e.Old == "" {
		return "", Applied{}, &EmptyOldError{Index: index}
	}
	old, repl := toLF(e.Old), toLF(e.New)
	if old == repl {
		return "", Applied{}, &NoChangeError{Index: index}
	}
	t := newText(content)

	if at := findAll(t.norm, old); len(at) > 0 {
		lines := lineNumbers(t.norm, at)
		if len(at) > 1 && !e.ReplaceAll {
			return "", Applied{}, &AmbiguousError{Index: index, Lines: lines, Pass: "exact"}
		}
		applied := Applied{Pass: "exact"}
		var spans []span
		next := 0
		for i, p := range at {
			if p < next {
				continue // overlaps the previous replacement
			}
			spans = append(spans, span{start: p, end: p + len(old), text: repl})
			applied.Lines = append(applied.Lines, lines[i])
			next = p + len(old)
		}
		applied.Count = len(spans)
		if e.New == "" && !strings.HasSuffix(old, "\n") {
			deleteWholeLines(t.norm, spans)
		}
		return splice(t, spans), applied, nil
	}

	ix := splitLines(t.norm)
	spans, applied, found, err := matchLines(t, ix, old, repl, e, index)
	if err != nil {
		return "", Applied{}, err
	}
	if !found {
		return "", Applied{}, &NotFoundError{Index: index, Closest: closest(ix.lines, patternLines(old))}
	}
	return splice(t, spans), applied, nil
}

// splice applies spans (ascending, not overlapping, in t.norm's offsets) to
// t.orig, writing each replacement's line breaks in the file's style and
// leaving every byte outside the spans as it was.
func splice(t *text, spans []span) string {
	size := len(t.orig)
	for _, s := range spans {
		size += len(s.text) - (s.end - s.start)
	}
	var b strings.Builder
	b.Grow(max(size, 0))
	last := 0
	for _, s := range spans {
		start := t.origOffset(s.start)
		b.WriteString(t.orig[last:start])
		b.WriteString(t.styled(s.text))
		last = t.origOffset(s.end)
	}
	b.WriteString(t.orig[last:])
	return b.String()
}

// deleteWholeLines widens every deletion span that covers whole lines
// without their final line break (it starts at a line start and ends at a
// line end) to take a line break with it, so the lines go entirely rather
// than leaving an empty one: the break after them, or at the end of a
// file without a final newline the one before them. Spans are ascending
// and stay apart.
func deleteWholeLines(s string, spans []span) {
	prevEnd := 0
	for i := range spans {
		sp := &spans[i]
		lineStart := sp.start == 0 || s[sp.start-1] == '\n'
		switch {
		case !lineStart:
		case sp.end < len(s) && s[sp.end] == '\n':
			if i+1 == len(spans) || spans[i+1].start > sp.end {
				sp.end++
			}
		case sp.end == len(s) && sp.start > prevEnd:
			sp.start--
		}
		prevEnd = sp.end
	}
}
