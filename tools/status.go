package tools

import (
	"errors"
	"fmt"

	"github.com/vfsd/vfsd/vfs"
)

// Status is the outcome class of a tool call.
type Status string

// The statuses, as DESIGN.md lists them.
const (
	StatusOK             Status = "ok"
	StatusNotFound       Status = "not_found"
	StatusIsDirectory    Status = "is_directory"
	StatusNotDirectory   Status = "not_directory"
	StatusAlreadyExists  Status = "already_exists"
	StatusConflict       Status = "conflict"
	StatusAmbiguous      Status = "ambiguous"
	StatusForbidden      Status = "forbidden"
	StatusTooLarge       Status = "too_large"
	StatusInvalidInput   Status = "invalid_input"
	StatusParseError     Status = "parse_error"
	StatusReject         Status = "reject"
	StatusInvalidRegex   Status = "invalid_regex"
	StatusInvalidPattern Status = "invalid_pattern"
	StatusError          Status = "error"
)

// Code is a stable, machine-readable error code; several codes may share a
// status (invalid_path and unknown_parameter are both invalid_input).
type Code string

// The error codes. Under a policy with NumericCodes (the x07 preset) a
// failure also carries a number (Number): the code of X07's own table
// (FS v1, "Error codes (deterministic, v1)") with the same meaning, and no
// number where that table has none.
const (
	CodeNotFound               Code = "not_found"
	CodeIsDirectory            Code = "is_directory"
	CodeNotDirectory           Code = "not_directory"
	CodeAlreadyExists          Code = "already_exists"
	CodeConflict               Code = "conflict"
	CodeAmbiguous              Code = "ambiguous"
	CodeForbidden              Code = "forbidden"
	CodeTooLarge               Code = "too_large"
	CodeInvalidInput           Code = "invalid_input"
	CodeParseError             Code = "parse_error"
	CodeReject                 Code = "reject"
	CodeInvalidRegex           Code = "invalid_regex"
	CodeInvalidPattern         Code = "invalid_pattern"
	CodeInvalidPath            Code = "invalid_path"
	CodeEmptyOldString         Code = "invalid_input_empty_old_string"
	CodeInlineRequiredTooLarge Code = "inline_required_too_large"
	CodeSessionMismatch        Code = "session_mismatch"
	CodeDirectoryNotEmpty      Code = "directory_not_empty"
	CodeUnknownTool            Code = "unknown_tool"
	CodeInternal               Code = "error"
)

// codeInfo is a code's status and number.
type codeInfo struct {
	status Status
	number int
}

// The numbers are X07's (FS v1's table, 60001–60020): a code gets the
// number of the X07 code that means the same, and 0 (no number) where the
// table has no such code — X07 has no notion of a version conflict, an
// ambiguous edit, a patch or a regular expression, and it numbers every
// malformed parameter by what it is (path, caps) rather than as one
// "invalid input".
var codes = map[Code]codeInfo{
	CodeNotFound:               {StatusNotFound, 60010},      // FS_ERR_NOT_FOUND
	CodeIsDirectory:            {StatusIsDirectory, 60013},   // FS_ERR_IS_DIR
	CodeNotDirectory:           {StatusNotDirectory, 60012},  // FS_ERR_NOT_DIR
	CodeAlreadyExists:          {StatusAlreadyExists, 60011}, // FS_ERR_ALREADY_EXISTS
	CodeConflict:               {StatusConflict, 0},
	CodeAmbiguous:              {StatusAmbiguous, 0},
	CodeForbidden:              {StatusForbidden, 60001}, // FS_ERR_POLICY_DENY
	CodeTooLarge:               {StatusTooLarge, 60016},  // FS_ERR_TOO_LARGE
	CodeInvalidInput:           {StatusInvalidInput, 0},
	CodeParseError:             {StatusParseError, 0},
	CodeReject:                 {StatusReject, 0},
	CodeInvalidRegex:           {StatusInvalidRegex, 0},
	CodeInvalidPattern:         {StatusInvalidPattern, 60003}, // FS_ERR_BAD_PATH (X07's walk: a bad glob)
	CodeInvalidPath:            {StatusInvalidInput, 60003},   // FS_ERR_BAD_PATH
	CodeEmptyOldString:         {StatusInvalidInput, 0},
	CodeInlineRequiredTooLarge: {StatusTooLarge, 60016}, // FS_ERR_TOO_LARGE
	CodeSessionMismatch:        {StatusForbidden, 0},
	CodeDirectoryNotEmpty:      {StatusInvalidInput, 60011}, // FS_ERR_ALREADY_EXISTS (the x07 contract's rename onto a full directory)
	CodeUnknownTool:            {StatusInvalidInput, 60020}, // FS_ERR_UNSUPPORTED
	CodeInternal:               {StatusError, 60015},        // FS_ERR_IO
}

// Codes returns every error code.
func Codes() []Code {
	out := make([]Code, 0, len(codes))
	for c := range codes {
		out = append(out, c)
	}
	return out
}

// Status returns the status a failure with this code has.
func (c Code) Status() Status { return codes[c].status }

// Number returns the number of the code in X07's table (60001–60020) that
// means the same, or 0 where X07 has none.
func (c Code) Number() int { return codes[c].number }

// Failure is a tool call that did not succeed: its code, a message a model
// can act on, and details some codes carry.
type Failure struct {
	Code Code
	Msg  string
	// Details are merged into the receipt (line numbers of ambiguous
	// matches, the closest region, a patch line, ...).
	Details any
}

// Error returns the message.
func (f *Failure) Error() string { return string(f.Code) + ": " + f.Msg }

func fail(code Code, format string, args ...any) *Failure {
	return &Failure{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// failureOf classifies any error a tool returns.
func failureOf(err error) *Failure {
	var f *Failure
	if errors.As(err, &f) {
		return f
	}
	var ve *vfs.Error
	if errors.As(err, &ve) {
		return &Failure{Code: vfsCode(ve.Code), Msg: vfsMessage(ve)}
	}
	return &Failure{Code: CodeInternal, Msg: err.Error()}
}

// vfsCode maps an engine code to a tool code, in one place.
func vfsCode(c vfs.Code) Code {
	switch c {
	case vfs.CodeNotFound:
		return CodeNotFound
	case vfs.CodeExists:
		return CodeAlreadyExists
	case vfs.CodeNotDir:
		return CodeNotDirectory
	case vfs.CodeIsDir:
		return CodeIsDirectory
	case vfs.CodeNotEmpty:
		return CodeDirectoryNotEmpty
	case vfs.CodeConflict, vfs.CodeStale:
		return CodeConflict
	case vfs.CodeInvalidPath:
		return CodeInvalidPath
	case vfs.CodeInvalid:
		return CodeInvalidInput
	case vfs.CodeInvalidPattern:
		return CodeInvalidPattern
	case vfs.CodeTooLarge:
		return CodeTooLarge
	case vfs.CodeForbidden:
		return CodeForbidden
	}
	return CodeInternal
}

// vfsMessage renders an engine error for a model: the path and what is
// wrong, with a hint at what to do next where the code suggests one.
func vfsMessage(e *vfs.Error) string {
	msg := e.Error()
	switch e.Code {
	case vfs.CodeNotFound:
		msg += "; list the parent directory to see what exists"
	case vfs.CodeNotEmpty:
		msg += "; pass recursive=true to delete the directory with its contents"
	case vfs.CodeConflict:
		msg += "; read the file again and retry with its current version"
	}
	return msg
}
