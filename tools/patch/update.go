package patch

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/vfsd/vfsd/internal/textmatch"
)

// sourceLine is a line of a file being updated and the ending it had:
// "\n", "\r\n", or "" for a last line without one.
type sourceLine struct {
	text string
	eol  string
}

// sourceFile is a file's text as lines that keep their endings, as Codex's
// text_file.rs holds it when it preserves line endings.
type sourceFile struct {
	lines []sourceLine
	// eol is the file's preferred ending, the one its first line ending
	// has ("\n" for a file without any), given to every inserted line.
	eol string
}

// parseSource splits content at "\n"; a "\r" before it belongs to the
// ending. A final ending does not start another line.
func parseSource(content string) *sourceFile {
	f := &sourceFile{lines: make([]sourceLine, 0, strings.Count(content, "\n")+1)}
	for content != "" {
		i := strings.IndexByte(content, '\n')
		if i < 0 {
			f.lines = append(f.lines, sourceLine{text: content})
			break
		}
		l := sourceLine{text: content[:i], eol: "\n"}
		if strings.HasSuffix(l.text, "\r") {
			l = sourceLine{text: l.text[:len(l.text)-1], eol: "\r\n"}
		}
		if f.eol == "" {
			f.eol = l.eol
		}
		f.lines = append(f.lines, l)
		content = content[i+1:]
	}
	if f.eol == "" {
		f.eol = "\n"
	}
	return f
}

// texts returns the lines without their endings: what chunks match.
func (f *sourceFile) texts() []string {
	out := make([]string, len(f.lines))
	for i, l := range f.lines {
		out[i] = l.text
	}
	return out
}

// replacement replaces n lines from at with lines.
type replacement struct {
	at, n int
	lines []string
}

// apply applies replacements, sorted by position and not overlapping.
// Inserted lines take the preferred ending; every line that has no ending
// then gets it, so the result always ends with a line ending (Codex adds
// a final newline to every file it updates).
func (f *sourceFile) apply(reps []replacement) {
	out := make([]sourceLine, 0, len(f.lines))
	next := 0
	for _, r := range reps {
		at := min(max(r.at, next), len(f.lines))
		out = append(out, f.lines[next:at]...)
		for _, text := range r.lines {
			out = append(out, sourceLine{text: text, eol: f.eol})
		}
		next = min(max(r.at+r.n, at), len(f.lines))
	}
	out = append(out, f.lines[next:]...)
	for i := range out {
		if out[i].eol == "" {
			out[i].eol = f.eol
		}
	}
	f.lines = out
}

// String returns the file's content.
func (f *sourceFile) String() string {
	size := 0
	for _, l := range f.lines {
		size += len(l.text) + len(l.eol)
	}
	var b strings.Builder
	b.Grow(size)
	for _, l := range f.lines {
		b.WriteString(l.text)
		b.WriteString(l.eol)
	}
	return b.String()
}

// chunkError is a chunk that does not apply: its index and what is wrong.
type chunkError struct {
	chunk int
	msg   string
}

// updateContent applies chunks to content, as Codex's
// derive_new_contents_from_chunks does when it preserves line endings.
func updateContent(content string, chunks []Chunk, path string) (string, *chunkError) {
	f := parseSource(content)
	reps, cerr := replacements(f.texts(), chunks, path)
	if cerr != nil {
		return "", cerr
	}
	f.apply(reps)
	return f.String(), nil
}

// replacements locates every chunk in lines, in order, and returns the
// replacements sorted by position (Codex's compute_replacements).
//
// A chunk's "@@" context is looked for from where the previous chunk
// ended, and its old lines from the line after the context. A chunk
// without old lines (a pure addition) is appended at the end of the file,
// wherever its context is. When old lines ending in an empty line are not
// found, they are looked for again without it (it stands for the file's
// final newline), and an empty last new line is dropped with it.
func replacements(lines []string, chunks []Chunk, path string) ([]replacement, *chunkError) {
	var reps []replacement
	cursor := 0
	for ci, c := range chunks {
		if c.Context != "" {
			at, _, ok := textmatch.Seek(lines, []string{c.Context}, cursor, false)
			if !ok {
				return nil, &chunkError{ci, contextMissing(lines, c.Context, cursor, path)}
			}
			cursor = at + 1
		}
		if len(c.Old) == 0 {
			if len(c.New) > 0 {
				reps = append(reps, replacement{at: len(lines), lines: c.New})
			}
			continue
		}
		pattern, repl := c.Old, c.New
		at, _, ok := textmatch.Seek(lines, pattern, cursor, c.EOF)
		if !ok && pattern[len(pattern)-1] == "" {
			pattern = pattern[:len(pattern)-1]
			if len(repl) > 0 && repl[len(repl)-1] == "" {
				repl = repl[:len(repl)-1]
			}
			at, _, ok = textmatch.Seek(lines, pattern, cursor, c.EOF)
		}
		if !ok {
			return nil, &chunkError{ci, linesMissing(lines, c.Old, cursor, path)}
		}
		reps = append(reps, split(at, pattern, repl, c.Unchanged)...)
		cursor = at + len(pattern)
	}
	slices.SortStableFunc(reps, func(a, b replacement) int { return cmp.Compare(a.at, b.at) })
	return reps, nil
}

// split turns the replacement of pattern at at by repl into replacements
// of the runs between the context lines, which stay as they are in the
// file.
func split(at int, pattern, repl []string, unchanged [][2]int) []replacement {
	var out []replacement
	oldStart, newStart := 0, 0
	for _, u := range unchanged {
		o, n := u[0], u[1]
		if o >= len(pattern) || n >= len(repl) || o < oldStart || n < newStart || pattern[o] != repl[n] {
			break
		}
		if o != oldStart || n != newStart {
			out = append(out, replacement{at: at + oldStart, n: o - oldStart, lines: repl[newStart:n]})
		}
		oldStart, newStart = o+1, n+1
	}
	if oldStart != len(pattern) || newStart != len(repl) {
		out = append(out, replacement{at: at + oldStart, n: len(pattern) - oldStart, lines: repl[newStart:]})
	}
	return out
}

// contextMissing explains an "@@" line that is not in the file.
func contextMissing(lines []string, ctx string, from int, path string) string {
	msg := fmt.Sprintf("Failed to find context '%s' in %s", clip(ctx), path)
	if from > 0 {
		if _, _, ok := textmatch.Seek(lines, []string{ctx}, 0, false); ok {
			return msg + fmt.Sprintf(" after line %d, where the previous chunk ended; it occurs only earlier. Chunks must be in the order their lines appear in the file", from)
		}
	}
	return msg + "; the text after '@@ ' must be a whole line of the file as it is now (such as a class or function line), or use a bare '@@'"
}

// How much of the file a failure quotes, and how many old lines are scored
// per position when looking for the closest region (bounding the cost).
const (
	quoteLines = 12
	quoteBytes = 1200
	probeLines = 64
	// probeBudget bounds the line comparisons of closest.
	probeBudget = 1 << 24
)

// linesMissing explains old lines that are not in the file: the first of
// them, and the file's current text where they come closest, so that the
// sender sees what to put in the patch instead.
func linesMissing(lines, old []string, from int, path string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Failed to find expected lines in %s:\n%s", path, clip(old[0]))
	if len(old) > 1 {
		fmt.Fprintf(&b, "\n(and %d more lines of this chunk)", len(old)-1)
	}
	if (len(lines)+1)*min(len(old), probeLines) > probeBudget {
		b.WriteString("\nRead the file again and copy the context and '-' lines from its current text.")
		return b.String()
	}
	if at, score := closest(lines, old, from); score > 0 {
		fmt.Fprintf(&b, "\nThe closest region starts at line %d (%d of %d lines match); the file reads there:", at+1, score, min(len(old), probeLines))
		budget := quoteBytes
		for i := at; i < len(lines) && i < at+quoteLines; i++ {
			l := fmt.Sprintf("\n%d: %s", i+1, clip(lines[i]))
			if len(l) > budget {
				b.WriteString("\n...")
				break
			}
			budget -= len(l)
			b.WriteString(l)
		}
		b.WriteString("\nCopy the context and '-' lines from the file's current text.")
	} else if at, score := closest(lines, old, 0); score > 0 {
		fmt.Fprintf(&b, "\nThese lines appear at line %d, before line %d where the previous chunk or '@@' context left off. Chunks must be in the order their lines appear in the file.", at+1, from+1)
	} else {
		fmt.Fprintf(&b, "\nNo line of this chunk appears in the file, which has %d lines; read the file again and copy the lines to change from it.", len(lines))
	}
	return b.String()
}

// closest returns the position at or after from where the most of old's
// first lines match the file ignoring surrounding white space, and how
// many do (0 when none does anywhere). Blank lines do not count.
func closest(lines, old []string, from int) (at, score int) {
	probe := old[:min(len(old), probeLines)]
	keys := make([]string, len(probe))
	for i, l := range probe {
		keys[i] = strings.TrimSpace(l)
	}
	for i := from; i < len(lines); i++ {
		s := 0
		for j, k := range keys {
			if k != "" && i+j < len(lines) && strings.TrimSpace(lines[i+j]) == k {
				s++
			}
		}
		if s > score {
			at, score = i, s
		}
	}
	return at, score
}
