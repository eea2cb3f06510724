package api

import "net/http"

// Error codes. Each names a class of failure that callers branch on; they
// reuse the engine's and the tools' codes where one fits.
const (
	CodeNotFound       = "not_found"       // no such session, snapshot, blob, mount or route
	CodeAlreadyExists  = "already_exists"  // a session with the requested ID exists
	CodeConflict       = "conflict"        // the request conflicts with the current state
	CodeInvalidInput   = "invalid_input"   // a parameter is missing, malformed or out of range
	CodeInvalidPath    = "invalid_path"    // a path could not be canonicalised
	CodeInvalidPattern = "invalid_pattern" // a glob does not parse
	CodeTooLarge       = "too_large"       // a body or import is over its limit
	CodeForbidden      = "forbidden"       // the caller may not do this (token scope, allow-listed roots)
	CodeUnauthorized   = "unauthorized"    // no valid token was presented
	CodeLimitExceeded  = "limit_exceeded"  // a policy's bound is used up (max_forks); ask the admin
	CodeMethod         = "method_not_allowed"
	// CodeFenced: the session belongs to another daemon of the fleet now
	// (moved or taken over); the message names it. Nothing this daemon
	// acknowledged is lost: see docs/fleets.md.
	CodeFenced      = "fenced"
	CodeUnavailable = "unavailable" // the daemon is shutting down, or a facility (FUSE) is missing
	CodeInternal    = "error"       // anything else; the message says what failed
)

// HTTPStatus returns the HTTP status an error code is sent with.
func HTTPStatus(code string) int {
	switch code {
	case CodeNotFound:
		return http.StatusNotFound
	case CodeAlreadyExists, CodeConflict, CodeFenced:
		return http.StatusConflict
	case CodeInvalidInput, CodeInvalidPath, CodeInvalidPattern:
		return http.StatusBadRequest
	case CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodeForbidden, CodeLimitExceeded:
		return http.StatusForbidden
	case CodeUnauthorized:
		return http.StatusUnauthorized
	case CodeMethod:
		return http.StatusMethodNotAllowed
	case CodeUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// Error is an API failure: a stable code and a message that says what was
// wrong and what to do about it. Every non-2xx response carries one as
// {"error": {...}}.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Status is the HTTP status the error came with (not sent in the body).
	Status int `json:"-"`
}

// Error returns "code: message".
func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Is makes errors.Is(err, &api.Error{Code: c}) match any error with code c.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Code == e.Code
}

// ErrorBody is the JSON body of every error response.
type ErrorBody struct {
	Error *Error `json:"error"`
}
