package search

import (
	"fmt"

	"github.com/vfsd/vfsd/vfs"
)

// Kinds of PatternError.
const (
	// KindInvalidRegex is a Grep pattern that is not valid RE2 syntax, or
	// that could match a line break (searches are line by line).
	KindInvalidRegex = "invalid_regex"
	// KindInvalidPattern is a glob (Grep's Glob filter, Glob's Pattern)
	// that doublestar rejects, that is empty (Glob), or whose {...} groups
	// combine into too many alternatives.
	KindInvalidPattern = "invalid_pattern"
)

// PatternError reports a pattern that cannot be used. It is returned before
// any I/O. It unwraps to a *vfs.Error with code vfs.CodeInvalidPattern, so
// vfs.CodeOf and errors.Is(err, vfs.ErrInvalidPattern) classify it like the
// engine's own pattern errors.
type PatternError struct {
	Kind    string // KindInvalidRegex or KindInvalidPattern
	Pattern string // the pattern as given
	Msg     string // what is wrong, for a person or a model
	Err     error  // the parser's error, if any
}

// Error formats the error as "kind "pattern": message: cause".
func (e *PatternError) Error() string {
	s := fmt.Sprintf("%s %q: %s", e.Kind, e.Pattern, e.Msg)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the error as a *vfs.Error of code vfs.CodeInvalidPattern,
// which in turn unwraps to the parser's error.
func (e *PatternError) Unwrap() error {
	return &vfs.Error{Op: "search", Code: vfs.CodeInvalidPattern, Msg: e.Msg, Err: e.Err}
}

// invalidInput is the error for an option out of range.
func invalidInput(op, msg string) error {
	return &vfs.Error{Op: op, Code: vfs.CodeInvalid, Msg: msg}
}

// ScanLimitError reports a Grep whose files, after every filter, hold more
// files or bytes than GrepOptions.MaxFiles or MaxBytes allow. It is
// returned before any file is read.
type ScanLimitError struct {
	Path  vfs.Path // the path searched
	What  string   // "files" or "bytes"
	Found int64    // how many the search would read
	Limit int64    // the limit
}

// Error says what is over the limit and what to do.
func (e *ScanLimitError) Error() string {
	return fmt.Sprintf("searching %s would read %d %s, more than one search may read (%d); search a subdirectory or narrow the glob", e.Path, e.Found, e.What, e.Limit)
}
