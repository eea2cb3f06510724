package vfs

import (
	"errors"
	"fmt"
)

// Code classifies an engine error. Later layers map codes to tool statuses
// and to errno, each in one place; callers branch with errors.Is against the
// sentinel errors below or with CodeOf.
type Code string

// The engine's error codes.
const (
	CodeNotFound       Code = "not_found"       // the path, or one of its parents, does not exist
	CodeExists         Code = "already_exists"  // the path exists and the operation would not replace it
	CodeNotDir         Code = "not_directory"   // a parent, or a directory argument, is not a directory
	CodeIsDir          Code = "is_directory"    // a file operation named a directory
	CodeNotEmpty       Code = "not_empty"       // a directory must be empty (or removal recursive)
	CodeConflict       Code = "conflict"        // an expected version did not match
	CodeInvalidPath    Code = "invalid_path"    // the path could not be canonicalised
	CodeInvalid        Code = "invalid_input"   // another argument was wrong
	CodeInvalidPattern Code = "invalid_pattern" // a glob or pattern does not parse
	CodeTooLarge       Code = "too_large"       // a size limit would be exceeded
	CodeForbidden      Code = "forbidden"       // the policy forbids the operation
	CodeStale          Code = "stale"           // a handle no longer names a file in the session
	CodeClosed         Code = "closed"          // the session or handle is closed
	CodeIO             Code = "io_error"        // the host filesystem or store failed
	CodeNoData         Code = "no_data"         // no such extended attribute (ENODATA)
	CodeNoSpace        Code = "no_space"        // a node's extended attributes are full (ENOSPC)
	CodePermission     Code = "not_permitted"   // the operation is not permitted on this node (EPERM)
)

// Sentinel errors, one per code, for errors.Is.
var (
	ErrNotFound       = &Error{Code: CodeNotFound}
	ErrExists         = &Error{Code: CodeExists}
	ErrNotDir         = &Error{Code: CodeNotDir}
	ErrIsDir          = &Error{Code: CodeIsDir}
	ErrNotEmpty       = &Error{Code: CodeNotEmpty}
	ErrConflict       = &Error{Code: CodeConflict}
	ErrInvalidPath    = &Error{Code: CodeInvalidPath}
	ErrInvalid        = &Error{Code: CodeInvalid}
	ErrInvalidPattern = &Error{Code: CodeInvalidPattern}
	ErrTooLarge       = &Error{Code: CodeTooLarge}
	ErrForbidden      = &Error{Code: CodeForbidden}
	ErrStale          = &Error{Code: CodeStale}
	ErrClosed         = &Error{Code: CodeClosed}
	ErrIO             = &Error{Code: CodeIO}
	ErrNoData         = &Error{Code: CodeNoData}
	ErrNoSpace        = &Error{Code: CodeNoSpace}
	ErrPermission     = &Error{Code: CodePermission}
)

// Error is the engine's error type: what was attempted, on which path, the
// classifying code, a message a person or model can act on, and the
// underlying cause if any.
type Error struct {
	Op   string // the session operation, e.g. "write"
	Path string // the path as given or canonicalised; may be empty
	Code Code
	Msg  string
	Err  error
}

// Error formats the error as "op path: message: cause".
func (e *Error) Error() string {
	msg := e.Msg
	if msg == "" {
		msg = string(e.Code)
	}
	s := msg
	if e.Path != "" {
		s = fmt.Sprintf("%s: %s", e.Path, msg)
	}
	if e.Op != "" {
		s = e.Op + " " + s
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Is matches sentinel errors by code, so errors.Is(err, ErrNotFound) holds
// for every not-found error however it was built.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && t.Op == "" && t.Path == "" && t.Msg == "" && t.Err == nil
}

// CodeOf returns the code of the first *Error in err's chain, CodeIO for any
// other non-nil error, and "" for nil.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeIO
}

func newErr(code Code, op string, p Path, msg string) *Error {
	return &Error{Op: op, Path: p.String(), Code: code, Msg: msg}
}

func invalidPath(input, msg string) *Error {
	return &Error{Op: "parse path", Path: fmt.Sprintf("%q", input), Code: CodeInvalidPath, Msg: msg}
}

func ioErr(op string, p Path, err error) *Error {
	return &Error{Op: op, Path: p.String(), Code: CodeIO, Msg: "I/O failed", Err: err}
}

// withOp fills in the operation of an *Error that lacks one, so reducer
// errors report the session call that caused them.
func withOp(err error, op string) error {
	var e *Error
	if errors.As(err, &e) && e.Op == "" {
		c := *e
		c.Op = op
		return &c
	}
	return err
}
