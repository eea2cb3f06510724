package edit

import (
	"fmt"
	"strconv"
	"strings"
)

// EmptyOldError reports an edit whose old_string is empty; the tool reports
// it as invalid_input_empty_old_string (creating or overwriting a file is
// write_file's job).
type EmptyOldError struct {
	Index int // the failing edit, 0-based
}

// Error describes the failure.
func (e *EmptyOldError) Error() string {
	return fmt.Sprintf("edit %d: old_string is empty; give the text to replace (use write_file to create or overwrite a file)", e.Index)
}

// NoChangeError reports an edit whose old_string and new_string are
// identical (after line endings are normalised), so it could change
// nothing; the tool reports it as invalid_input.
type NoChangeError struct {
	Index int // the failing edit, 0-based
}

// Error describes the failure.
func (e *NoChangeError) Error() string {
	return fmt.Sprintf("edit %d: old_string and new_string are identical; nothing to change", e.Index)
}

// NotFoundError reports an edit whose old_string matched nowhere, neither
// exactly nor under any line-based pass.
type NotFoundError struct {
	Index int // the failing edit, 0-based
	// Closest is the region of the content the edit saw most similar to
	// old_string, to show the caller what is there instead; nil when that
	// content was empty or had too many lines to compare (ExactOnly).
	Closest *Region
	// ExactOnly is true when the content has more lines than the
	// line-based passes index (about a million): only the exact stage ran.
	ExactOnly bool
}

// Error describes the failure and, when known, where the closest text is.
func (e *NotFoundError) Error() string {
	if e.ExactOnly {
		return fmt.Sprintf("edit %d: old_string not found exactly, and the file has too many lines to try whitespace-insensitive matches; copy old_string exactly", e.Index)
	}
	if e.Closest == nil {
		return fmt.Sprintf("edit %d: old_string not found: the file is empty", e.Index)
	}
	c := e.Closest
	lines := "line " + strconv.Itoa(c.StartLine)
	if c.EndLine != c.StartLine {
		lines = fmt.Sprintf("lines %d-%d", c.StartLine, c.EndLine)
	}
	return fmt.Sprintf("edit %d: old_string not found; the most similar text is at %s (%.0f%% similar); read the file again and copy old_string exactly",
		e.Index, lines, c.Similarity*100)
}

// Region is a run of whole lines of a file: the most similar place to an
// old_string that was not found. It has as many lines as old_string, except
// where the best alignment hangs over the start or end of the file (or
// old_string is longer than the file): then it is the part inside the file.
type Region struct {
	StartLine int // 1-based, inclusive
	EndLine   int // 1-based, inclusive
	// Text is the region's lines joined by "\n" (line breaks normalised to
	// LF, no final line break).
	Text string
	// Similarity is in [0, 1]: the mean over old_string's lines of each
	// line's similarity to the file line it is paired with (1 for lines
	// equal once trimmed and with punctuation folded, below 1 otherwise,
	// see closest.go; 0 for lines paired with nothing).
	Similarity float64
}

// AmbiguousError reports an edit whose old_string matched in more than one
// place while ReplaceAll was false.
type AmbiguousError struct {
	Index int    // the failing edit, 0-based
	Lines []int  // the 1-based start line of every candidate (the first 100), ascending
	Pass  string // the stage or pass that found them: "exact", "trim_end", "trim" or "unicode_punctuation"
	More  int    // candidates beyond Lines, not listed
}

// Total returns how many candidates there are.
func (e *AmbiguousError) Total() int { return len(e.Lines) + e.More }

// maxListed caps how many candidate lines the message names.
const maxListed = 20

// Error describes the failure with the candidates' lines.
func (e *AmbiguousError) Error() string {
	var b strings.Builder
	for i, l := range e.Lines {
		if i == maxListed {
			fmt.Fprintf(&b, ", … (%d more)", e.Total()-maxListed)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(l))
	}
	how := ""
	if e.Pass != "" && e.Pass != "exact" {
		how = " (matching " + e.Pass + ")"
	}
	return fmt.Sprintf("edit %d: old_string matches %d places%s, starting at lines %s; add surrounding lines to make it unique, or set replace_all",
		e.Index, e.Total(), how, b.String())
}

// TooLargeError reports an edit whose result would be larger than
// Limits.MaxBytes; nothing was built.
type TooLargeError struct {
	Index int   // the failing edit, 0-based
	Size  int64 // the size the result would have
	Limit int64 // Limits.MaxBytes
}

// Error describes the failure.
func (e *TooLargeError) Error() string {
	return fmt.Sprintf("edit %d: the result would be %d bytes, over the limit of %d; make smaller edits, or write the file with write_file", e.Index, e.Size, e.Limit)
}

// TooManyError reports an edit that would take the replacements past
// Limits.MaxReplacements; its matches were counted, not collected.
type TooManyError struct {
	Index int // the failing edit, 0-based
	Count int // the replacements this edit would make
	Limit int // the replacements left for it under Limits.MaxReplacements
}

// Error describes the failure.
func (e *TooManyError) Error() string {
	return fmt.Sprintf("edit %d: old_string matches %d places, over the limit of %d replacements; narrow old_string", e.Index, e.Count, e.Limit)
}
