package patch

import (
	"errors"
	"fmt"
)

// Sentinel errors a RejectError wraps, for callers to branch on with
// errors.Is. A file that does not exist is reported with the error
// Files.ReadFile returned, which matches fs.ErrNotExist.
var (
	// ErrIsDir is returned by Files.ReadFile for a directory, and wrapped
	// by a RejectError when a hunk names a directory as a file.
	ErrIsDir = errors.New("is a directory")
	// ErrNotDir is wrapped when a file would have to be created beneath a
	// path that is a file.
	ErrNotDir = errors.New("not a directory")
	// ErrBinary is wrapped when an update targets a file that is not UTF-8
	// text (it holds a NUL byte or invalid UTF-8).
	ErrBinary = errors.New("binary file")
	// ErrNoMatch is wrapped when a chunk's "@@" context or its lines are
	// not found in the file.
	ErrNoMatch = errors.New("lines not found")
	// ErrEmpty is wrapped when a patch has no hunks.
	ErrEmpty = errors.New("no file operations")
)

// ParseError is a patch text that is not a valid V4A patch.
type ParseError struct {
	// Line is the 1-based line of the patch text the problem is on.
	Line int
	// Msg says what is wrong and how to fix it, for a model to act on.
	Msg string
}

// Error returns the message with its line.
func (e *ParseError) Error() string {
	return fmt.Sprintf("invalid patch at line %d: %s", e.Line, e.Msg)
}

// RejectError is a hunk that does not apply to the tree. Plan returns the
// first one; nothing has changed.
type RejectError struct {
	// Path is the file the failing hunk names, as written in the patch
	// (its "*** Move to:" destination when that is what failed).
	Path string
	// Line is the 1-based patch line of the failing hunk, or of the chunk
	// within it whose lines were not found.
	Line int
	// Msg says what is wrong and how to fix it, for a model to act on.
	Msg string
	// Err is the cause: one of this package's sentinels, or the error
	// Files.ReadFile returned (fs.ErrNotExist for a missing file).
	Err error
}

// Error returns the message with its line and path, where known.
func (e *RejectError) Error() string {
	msg := e.Msg
	if e.Path != "" {
		msg = e.Path + ": " + msg
	}
	if e.Line > 0 {
		msg = fmt.Sprintf("patch line %d: %s", e.Line, msg)
	}
	return msg
}

// Unwrap returns the cause.
func (e *RejectError) Unwrap() error { return e.Err }
