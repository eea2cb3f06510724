package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
)

func TestSessionLifecycle(t *testing.T) {
	s := start(t, newConfig(t))
	ctx := context.Background()
	c := s.c

	h, err := c.Health(ctx)
	require.NoError(t, err)
	require.Equal(t, "ok", h.Status)

	created, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "one", Policy: "x07", Profile: "openai", TTL: "1h"})
	require.NoError(t, err)
	require.Equal(t, "one", created.Session.ID)
	require.Equal(t, "x07", created.Session.Policy)
	require.Equal(t, "openai", created.Session.Profile)
	require.NotNil(t, created.Session.ExpiresAt)
	require.WithinDuration(t, time.Now().Add(time.Hour), *created.Session.ExpiresAt, time.Minute)
	require.True(t, strings.HasPrefix(created.Token, "vfsd_sess_"))

	_, err = c.CreateSession(ctx, api.CreateSessionRequest{ID: "one"})
	requireCode(t, err, api.CodeAlreadyExists)

	call(t, c, "one", "write_file", `{"path":"src/a.txt","inline_text":"hello\n"}`, "ok")
	got := call(t, c, "one", "read_file", `{"path":"src/a.txt"}`, "ok")
	require.Equal(t, "hello\n", got["inline_text"])
	// A failed call is a receipt with HTTP 200, carrying the status; x07
	// reports numeric codes.
	got = call(t, c, "one", "read_file", `{"path":"missing"}`, "not_found")
	require.Equal(t, "not_found", got["error_code"])
	require.EqualValues(t, 60010, got["error_number"]) // X07's FS_ERR_NOT_FOUND
	call(t, c, "one", "no_such_tool", `{}`, "invalid_input")
	call(t, c, "one", "read_file", `{"path":"a","bogus":1}`, "invalid_input")

	rt, err := c.CallToolText(ctx, "one", "read_file", json.RawMessage(`{"path":"src/a.txt"}`))
	require.NoError(t, err)
	require.True(t, rt.OK())
	require.Equal(t, "hello\n", rt.Text)

	tl, err := c.Tools(ctx, "one", "")
	require.NoError(t, err)
	require.Equal(t, "openai", tl.Profile, "the session's profile by default")
	require.Contains(t, string(tl.Tools), `"apply_patch"`)
	require.NotEmpty(t, tl.Prompt)
	_, err = c.Tools(ctx, "one", "nope")
	requireCode(t, err, api.CodeInvalidInput)

	view, err := c.Session(ctx, "one")
	require.NoError(t, err)
	require.EqualValues(t, 1, view.Files)

	list, err := c.Sessions(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)

	view, err = c.SetTTL(ctx, "one", "never")
	require.NoError(t, err)
	require.Nil(t, view.ExpiresAt)

	// Reset returns an empty session to empty.
	rs, err := c.ResetSession(ctx, "one")
	require.NoError(t, err)
	require.EqualValues(t, 0, rs.Session.Files)

	require.NoError(t, c.CloseSession(ctx, "one"))
	_, err = c.Session(ctx, "one")
	requireCode(t, err, api.CodeNotFound)
	_, err = c.CallTool(ctx, "one", "read_file", nil)
	requireCode(t, err, api.CodeNotFound)
	requireCode(t, c.CloseSession(ctx, "one"), api.CodeNotFound)
}

func TestCreateValidation(t *testing.T) {
	s := start(t, newConfig(t))
	ctx := context.Background()
	for _, tc := range []struct {
		req  api.CreateSessionRequest
		code string
		msg  string
	}{
		{api.CreateSessionRequest{Base: "abcd", Fork: "x"}, api.CodeInvalidInput, "at most one"},
		{api.CreateSessionRequest{ID: "../etc"}, api.CodeInvalidInput, "letters, digits"},
		{api.CreateSessionRequest{TTL: "soon"}, api.CodeInvalidInput, "duration"},
		{api.CreateSessionRequest{TTL: "10ms"}, api.CodeInvalidInput, "at least 1s"},
		{api.CreateSessionRequest{Policy: "lax"}, api.CodeInvalidInput, "unknown policy preset"},
		{api.CreateSessionRequest{Profile: "cohere"}, api.CodeInvalidInput, "unknown profile"},
		{api.CreateSessionRequest{Base: "ab"}, api.CodeInvalidInput, "4 hex digits"},
		{api.CreateSessionRequest{Base: "abcdef"}, api.CodeNotFound, "no such snapshot"},
		{api.CreateSessionRequest{Fork: "nobody"}, api.CodeNotFound, "no session"},
		{api.CreateSessionRequest{Mounts: []api.Mount{{HostPath: "/etc"}}}, api.CodeForbidden, "--allow-root"},
	} {
		_, err := s.c.CreateSession(ctx, tc.req)
		requireCode(t, err, tc.code)
		require.Contains(t, err.Error(), tc.msg)
	}
	list, err := s.c.Sessions(ctx)
	require.NoError(t, err)
	require.Empty(t, list, "failed creations leave nothing behind")
}

// raw sends a request on the socket and returns the status and body.
func raw(t *testing.T, sock, method, path, body string) (int, http.Header, string) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequest(method, "http://vfsd"+path, strings.NewReader(body))
	require.NoError(t, err)
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, string(b)
}

func TestErrorsAreJSON(t *testing.T) {
	s := start(t, newConfig(t))
	sock := s.cfg.Socket
	for _, tc := range []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"GET", "/nope", "", 404, api.CodeNotFound},
		{"PUT", "/v1/sessions", "", 405, api.CodeMethod},
		{"POST", "/v1/sessions", "{", 400, api.CodeInvalidInput},
		{"POST", "/v1/sessions", `{"idd":"x"}`, 400, api.CodeInvalidInput},
		{"POST", "/v1/sessions", `{"id":5}`, 400, api.CodeInvalidInput},
		{"POST", "/v1/sessions", `{} {}`, 400, api.CodeInvalidInput},
		{"GET", "/v1/sessions/ghost", "", 404, api.CodeNotFound},
		{"GET", "/v1/snapshots/zzzz", "", 404, api.CodeNotFound},
		{"GET", "/v1/blobs/nothex", "", 400, api.CodeInvalidInput},
		{"GET", "/v1/diff", "", 400, api.CodeInvalidInput},
	} {
		status, hdr, body := raw(t, sock, tc.method, tc.path, tc.body)
		require.Equal(t, tc.status, status, "%s %s: %s", tc.method, tc.path, body)
		require.Equal(t, "application/json", hdr.Get("Content-Type"))
		var eb api.ErrorBody
		require.NoError(t, json.Unmarshal([]byte(body), &eb), body)
		require.NotNil(t, eb.Error, body)
		require.Equal(t, tc.code, eb.Error.Code, body)
		require.NotEmpty(t, eb.Error.Message)
	}
	_, hdr, _ := raw(t, sock, "PUT", "/v1/sessions", "")
	require.Equal(t, "GET, POST", hdr.Get("Allow"))
}

func TestExpiry(t *testing.T) {
	cfg := newConfig(t)
	cfg.JanitorInterval = 50 * time.Millisecond
	s := start(t, cfg)
	ctx := context.Background()
	_, err := s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "brief", TTL: "1s"})
	require.NoError(t, err)
	_, err = s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "lasting"})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		list, err := s.c.Sessions(ctx)
		return err == nil && len(list) == 1 && list[0].ID == "lasting"
	}, 10*time.Second, 50*time.Millisecond)
	_, err = s.c.Session(ctx, "brief")
	requireCode(t, err, api.CodeNotFound)
}
