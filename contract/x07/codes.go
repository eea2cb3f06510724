package x07

import "fmt"

// Code is one of the document's deterministic error codes (reserved v1
// space 60000–60999).
type Code int

// The error codes, as the document's table gives them.
const (
	ErrPolicyDeny     Code = 60001
	ErrDisabled       Code = 60002
	ErrBadPath        Code = 60003
	ErrBadCaps        Code = 60004
	ErrNotFound       Code = 60010
	ErrAlreadyExists  Code = 60011
	ErrNotDir         Code = 60012
	ErrIsDir          Code = 60013
	ErrPermission     Code = 60014
	ErrIO             Code = 60015
	ErrTooLarge       Code = 60016
	ErrTooManyEntries Code = 60017
	ErrDepthExceeded  Code = 60018
	ErrSymlinkDenied  Code = 60019
	ErrUnsupported    Code = 60020
)

var codeNames = map[Code]string{
	ErrPolicyDeny:     "FS_ERR_POLICY_DENY",
	ErrDisabled:       "FS_ERR_DISABLED",
	ErrBadPath:        "FS_ERR_BAD_PATH",
	ErrBadCaps:        "FS_ERR_BAD_CAPS",
	ErrNotFound:       "FS_ERR_NOT_FOUND",
	ErrAlreadyExists:  "FS_ERR_ALREADY_EXISTS",
	ErrNotDir:         "FS_ERR_NOT_DIR",
	ErrIsDir:          "FS_ERR_IS_DIR",
	ErrPermission:     "FS_ERR_PERMISSION",
	ErrIO:             "FS_ERR_IO",
	ErrTooLarge:       "FS_ERR_TOO_LARGE",
	ErrTooManyEntries: "FS_ERR_TOO_MANY_ENTRIES",
	ErrDepthExceeded:  "FS_ERR_DEPTH_EXCEEDED",
	ErrSymlinkDenied:  "FS_ERR_SYMLINK_DENIED",
	ErrUnsupported:    "FS_ERR_UNSUPPORTED",
}

// Name returns the code's FS_ERR_* name.
func (c Code) Name() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return fmt.Sprintf("FS_ERR_%d", int(c))
}

// Codes returns every code in the table, in numeric order.
func Codes() []Code {
	return []Code{ErrPolicyDeny, ErrDisabled, ErrBadPath, ErrBadCaps, ErrNotFound, ErrAlreadyExists, ErrNotDir,
		ErrIsDir, ErrPermission, ErrIO, ErrTooLarge, ErrTooManyEntries, ErrDepthExceeded, ErrSymlinkDenied, ErrUnsupported}
}

// fsError is a failed operation: its code and a message saying what to do.
type fsError struct {
	Code Code
	Msg  string
}

func (e *fsError) Error() string { return e.Code.Name() + ": " + e.Msg }

func errf(c Code, format string, args ...any) *fsError {
	return &fsError{Code: c, Msg: fmt.Sprintf(format, args...)}
}
