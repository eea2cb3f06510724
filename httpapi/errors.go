package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/daemon"
	"github.com/vfsd/vfsd/internal/strictjson"
)

// maxJSONBytes caps a JSON request body (tool parameters included: the
// MCP stdio transport's bound on one message).
const maxJSONBytes = 16 << 20

// apiErr builds an API error with a formatted message.
func apiErr(code, format string, args ...any) *api.Error {
	return &api.Error{Code: code, Message: fmt.Sprintf(format, args...), Status: api.HTTPStatus(code)}
}

// toAPIError classifies any error a handler returns, in one place: a body
// over its limit is too_large; the rest as the daemon classifies it.
func toAPIError(err error) *api.Error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return apiErr(api.CodeTooLarge, "the request body is over its limit of %d bytes; send less, or upload large content as a blob first (POST /v1/blobs) and pass its blob_ref", mbe.Limit)
	}
	return daemon.APIError(err)
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
