package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/internal/strictjson"
	"github.com/vfsd/vfsd/vfs"
)

// apiErr builds an API error with a formatted message.
func apiErr(code, format string, args ...any) *api.Error {
	return &api.Error{Code: code, Message: fmt.Sprintf(format, args...), Status: api.HTTPStatus(code)}
}

// toAPIError classifies any error a handler returns, in one place.
func toAPIError(err error) *api.Error {
	var ae *api.Error
	if errors.As(err, &ae) {
		if ae.Status == 0 {
			ae.Status = api.HTTPStatus(ae.Code)
		}
		return ae
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return apiErr(api.CodeTooLarge, "the request body is over its limit of %d bytes; send less, or upload large content with POST /v1/blobs", mbe.Limit)
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

// writeJSON sends v as JSON with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		buf.Reset()
		status = http.StatusInternalServerError
		fmt.Fprintf(&buf, `{"error":{"code":"error","message":%q}}`+"\n", "encode the response: "+err.Error())
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// writeError sends err as the API's error envelope.
func writeError(w http.ResponseWriter, err error) {
	ae := toAPIError(err)
	if ae.Code == api.CodeUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="vfsd"`)
		// Close the connection rather than read (or wait for) the body
		// of a caller nobody knows.
		w.Header().Set("Connection", "close")
	}
	writeJSON(w, ae.Status, api.ErrorBody{Error: ae})
}

// decodeBody decodes a JSON request body into v strictly: unknown fields
// and trailing data are invalid_input, naming the problem. An empty body
// leaves v as it is.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxJSONBytes))
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if err := strictjson.Decode(body, v); err != nil {
		var te *json.UnmarshalTypeError
		var ae *api.Error
		var uf *strictjson.UnknownFieldError
		switch {
		case errors.As(err, &ae): // a body type's own decoding said what is wrong
			return ae
		case errors.As(err, &te):
			return apiErr(api.CodeInvalidInput, "field %q must be a JSON %s, not %s; see docs/api.md", te.Field, te.Type.Kind(), te.Value)
		case errors.As(err, &uf):
			return apiErr(api.CodeInvalidInput, "unknown field %q; see docs/api.md for this endpoint's body", uf.Field)
		case errors.Is(err, strictjson.ErrTrailingData):
			return apiErr(api.CodeInvalidInput, "the body has data after the JSON object")
		}
		return apiErr(api.CodeInvalidInput, "the body is not valid JSON: %v", err)
	}
	return nil
}
