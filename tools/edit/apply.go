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

// Limits bound the work and memory of ApplyLimited; a zero field is
// unbounded. Both are checked before the text they guard is built, so a
// small request cannot make Apply allocate without bound (36 chained
// "A"→"AA" replace_all edits would otherwise build 2^36 bytes).
type Limits struct {
	// MaxBytes is the largest content any edit may produce.
	MaxBytes int
	// MaxReplacements is the most replacements all edits together may
	// make.
	MaxReplacements int
}

// Apply applies edits in order to content, all or nothing: edit i sees the
// result of edits 0..i-1, and if any edit fails Apply returns a nil Result
// and that edit's error (*EmptyOldError, *NoChangeError, *NotFoundError or
// *AmbiguousError, each with the edit's Index). No edits leave content
// unchanged. Apply does no I/O, is deterministic, and does not panic.
func Apply(content string, edits []Edit) (*Result, error) {
	return ApplyLimited(content, edits, Limits{})
}

// ApplyLimited is Apply within lim: an edit that would make more
// replacements than lim.MaxReplacements allows fails with *TooManyError
// before its matches are collected, and one whose result would be larger
// than lim.MaxBytes fails with *TooLargeError before the result is built.
func ApplyLimited(content string, edits []Edit, lim Limits) (*Result, error) {
	r := &Result{Content: content, Edits: make([]Applied, 0, len(edits))}
	for i, e := range edits {
		left := lim
		if lim.MaxReplacements > 0 {
			left.MaxReplacements = lim.MaxReplacements - r.Replacements
		}
		next, applied, err := applyOne(r.Content, e, i, left)
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

// maxCandidates caps the candidate lines an AmbiguousError carries; More
// counts the rest.
const maxCandidates = 100

// applyOne applies edit e, the index-th, to content within lim
// (MaxReplacements is what is left for this edit).
func applyOne(content string, e Edit, index int, lim Limits) (string, Applied, error) {
	if e.Old == "" {
		return "", Applied{}, &EmptyOldError{Index: index}
	}
	old, repl := toLF(e.Old), toLF(e.New)
	if old == repl {
		return "", Applied{}, &NoChangeError{Index: index}
	}
	t := newText(content)

	if e.ReplaceAll {
		// Count first: the matches' offsets are collected only once their
		// number is known to be within the limit.
		if n := strings.Count(t.norm, old); n > 0 {
			if lim.MaxReplacements > 0 && n > lim.MaxReplacements {
				return "", Applied{}, &TooManyError{Index: index, Count: n, Limit: lim.MaxReplacements}
			}
			at := indexAll(t.norm, old, n)
			applied := Applied{Pass: "exact", Lines: lineNumbers(t.norm, at), Count: n}
			spans := make([]span, n)
			for i, p := range at {
				spans[i] = span{start: p, end: p + len(old), text: repl}
			}
			return finish(t, e, old, spans, applied, index, lim)
		}
	} else if at, total := findAll(t.norm, old, maxCandidates); total > 1 {
		return "", Applied{}, &AmbiguousError{Index: index, Lines: lineNumbers(t.norm, at), Pass: "exact", More: total - len(at)}
	} else if total == 1 {
		applied := Applied{Pass: "exact", Lines: lineNumbers(t.norm, at), Count: 1}
		return finish(t, e, old, []span{{start: at[0], end: at[0] + len(old), text: repl}}, applied, index, lim)
	}

	if lines := strings.Count(t.norm, "\n"); lines > maxFuzzyLines {
		return "", Applied{}, &NotFoundError{Index: index, ExactOnly: true}
	}
	ix := splitLines(t.norm)
	spans, applied, found, err := matchLines(t, ix, old, repl, e, index)
	if err != nil {
		return "", Applied{}, err
	}
	if !found {
		return "", Applied{}, &NotFoundError{Index: index, Closest: closest(ix.lines, patternLines(old))}
	}
	if lim.MaxReplacements > 0 && len(spans) > lim.MaxReplacements {
		return "", Applied{}, &TooManyError{Index: index, Count: len(spans), Limit: lim.MaxReplacements}
	}
	out, err := splice(t, spans, lim.MaxBytes, index)
	return out, applied, err
}

// maxFuzzyLines bounds the lines the line-based passes index (about 40
// bytes a line): past it only the exact stage runs.
const maxFuzzyLines = 1 << 20

// finish applies the exact stage's spans: a deletion of whole lines takes
// their line break with it.
func finish(t *text, e Edit, old string, spans []span, applied Applied, index int, lim Limits) (string, Applied, error) {
	if e.New == "" && !strings.HasSuffix(old, "\n") {
		deleteWholeLines(t.norm, spans)
	}
	out, err := splice(t, spans, lim.MaxBytes, index)
	return out, applied, err
}

// splice applies spans (ascending, not overlapping, in t.norm's offsets) to
// t.orig, writing each replacement's line breaks in the file's style and
// leaving every byte outside the spans as it was. It computes the result's
// exact size first and fails with *TooLargeError, building nothing, when
// that is over maxBytes (0: unbounded).
func splice(t *text, spans []span, maxBytes, index int) (string, error) {
	size := int64(len(t.orig))
	grow := int64(0)
	if t.crlf {
		grow = 1 // each "\n" of a replacement becomes "\r\n"
	}
	for _, s := range spans {
		size += int64(len(s.text)) + grow*int64(strings.Count(s.text, "\n")) - int64(t.origOffset(s.end)-t.origOffset(s.start))
	}
	if maxBytes > 0 && size > int64(maxBytes) {
		return "", &TooLargeError{Index: index, Size: size, Limit: int64(maxBytes)}
	}
	var b strings.Builder
	b.Grow(int(max(size, 0)))
	last := 0
	for _, s := range spans {
		start := t.origOffset(s.start)
		b.WriteString(t.orig[last:start])
		b.WriteString(t.styled(s.text))
		last = t.origOffset(s.end)
	}
	b.WriteString(t.orig[last:])
	return b.String(), nil
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
