package daemon

import (
	"context"
	"errors"
	"fmt"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/vfs"
)

// apiErr builds an API error with a formatted message.
func apiErr(code, format string, args ...any) *api.Error {
	return &api.Error{Code: code, Message: fmt.Sprintf(format, args...), Status: api.HTTPStatus(code)}
}

// APIError classifies any error the daemon's methods return, in one
// place: an *api.Error as it is, an engine error by its code, a
// cancellation as unavailable, anything else internal.
func APIError(err error) *api.Error {
	var ae *api.Error
	if errors.As(err, &ae) {
		if ae.Status == 0 {
			ae.Status = api.HTTPStatus(ae.Code)
		}
		return ae
	}
	var ve *vfs.Error
	if errors.As(err, &ve) {
		return apiErr(vfsCode(ve.Code), "%s", err.Error())
	}
	if errors.Is(err, context.Canceled) {
		return apiErr(api.CodeUnavailable, "the request was cancelled (the client went away or the daemon is stopping): %v", err)
	}
	return apiErr(api.CodeInternal, "%v", err)
}

// vfsCode maps an engine code to an API code.
func vfsCode(c vfs.Code) string {
	switch c {
	case vfs.CodeNotFound, vfs.CodeClosed:
		return api.CodeNotFound
	case vfs.CodeExists:
		return api.CodeAlreadyExists
	case vfs.CodeConflict, vfs.CodeStale:
		return api.CodeConflict
	case vfs.CodeInvalidPath:
		return api.CodeInvalidPath
	case vfs.CodeInvalidPattern:
		return api.CodeInvalidPattern
	case vfs.CodeInvalid, vfs.CodeNotDir, vfs.CodeIsDir, vfs.CodeNotEmpty:
		return api.CodeInvalidInput
	case vfs.CodeTooLarge:
		return api.CodeTooLarge
	case vfs.CodeForbidden:
		return api.CodeForbidden
	}
	return api.CodeInternal
}
