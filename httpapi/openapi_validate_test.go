package httpapi_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
)

// The API tests make their requests through validatingTransport: every
// request and every JSON response is checked against api/openapi.json, so
// a route, a parameter, a body or an answer the description does not
// match fails the test that made it.

var openapiRouter = sync.OnceValues(func() (routers.Router, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(api.OpenAPI())
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, err
	}
	return legacy.NewRouter(doc)
})

// validatingTransport checks each exchange of next against the
// description, failing t on a mismatch.
type validatingTransport struct {
	t    testing.TB
	next http.RoundTripper
}

func (v validatingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	router, err := openapiRouter()
	require.NoError(v.t, err)
	var reqBody []byte
	if req.Body != nil && req.Body != http.NoBody && isJSON(req.Header.Get("Content-Type"), req.Method) {
		reqBody, err = io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	route, params, findErr := router.FindRoute(req)
	resp, err := v.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if findErr != nil {
		if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed {
			v.t.Errorf("openapi: %s %s is not described, yet answered %d", req.Method, req.URL.Path, resp.StatusCode)
		}
		return resp, nil
	}
	opts := &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true,
		ExcludeRequestBody: reqBody == nil} // a blob upload streams: its bytes are not checked
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts}
	if reqBody != nil {
		in.Request = req.Clone(req.Context())
		in.Request.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	if resp.StatusCode < 400 { // a refused request is refused as described, checked below
		if err := openapi3filter.ValidateRequest(req.Context(), in); err != nil {
			v.t.Errorf("openapi: request %s %s: %v", req.Method, req.URL, err)
		}
	}
	ct := resp.Header.Get("Content-Type")
	if !strings.HasPrefix(ct, "application/json") {
		return resp, nil // streams, blobs, text diffs: their status and type are the description's concern only
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
		Body: io.NopCloser(bytes.NewReader(body)), Options: opts}
	if err := openapi3filter.ValidateResponse(req.Context(), out); err != nil {
		v.t.Errorf("openapi: response %d to %s %s: %v\n%s", resp.StatusCode, req.Method, req.URL, err, cut(body))
	}
	return resp, nil
}

func isJSON(ct, method string) bool {
	return method != http.MethodGet && (ct == "" || strings.HasPrefix(ct, "application/json"))
}

func cut(b []byte) string {
	if len(b) > 2000 {
		return string(b[:2000]) + "..."
	}
	return string(b)
}

// socketTransport reaches the daemon on its Unix socket.
func socketTransport(socket string) *http.Transport {
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	return &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return dialer.DialContext(ctx, "unix", socket)
	}}
}
