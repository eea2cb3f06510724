package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/daemon"
)

// bearer adds a bearer token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// mcpConnect connects the SDK's client to endpoint with token.
func mcpConnect(ctx context.Context, endpoint, token string) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "daemon-test", Version: "1"}, nil)
	return c.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   endpoint,
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}},
		MaxRetries: -1,
	}, nil)
}

func TestMCPEndpoint(t *testing.T) {
	cfg := newConfig(t)
	cfg.Listen = "127.0.0.1:0"
	s := start(t, cfg)
	ctx := context.Background()
	admin := s.tcpClient(s.d.AdminToken())
	a, err := admin.CreateSession(ctx, api.CreateSessionRequest{ID: "a", Profile: "openai"})
	require.NoError(t, err)
	b, err := admin.CreateSession(ctx, api.CreateSessionRequest{ID: "b"})
	require.NoError(t, err)
	base := "http://" + s.srv.TCPAddr() + "/v1/sessions/"

	cs, err := mcpConnect(ctx, base+"a/mcp", a.Token)
	require.NoError(t, err)
	defer cs.Close()
	list, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	require.Contains(t, names, "apply_patch", "the openai profile, the session's")

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file",
		Arguments: map[string]any{"path": "notes/hello.txt", "content": "hello from mcp\n"}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%+v", res.Content)
	// The write is the session's: the HTTP API reads it back.
	call(t, admin, "a", "read_file", `{"path":"notes/hello.txt"}`, "ok")

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "notes/hello.txt"}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.Contains(t, res.Content[0].(*mcp.TextContent).Text, "hello from mcp")
	var receipt map[string]any
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &receipt))
	require.Equal(t, "ok", receipt["status"])

	// A refused call is a result with isError and a receipt, not a protocol error.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "../etc/passwd"}})
	require.NoError(t, err)
	require.True(t, res.IsError)

	// ?profile= picks another profile's tools.
	cons, err := mcpConnect(ctx, base+"a/mcp?profile=consolidated", a.Token)
	require.NoError(t, err)
	defer cons.Close()
	list, err = cons.ListTools(ctx, nil)
	require.NoError(t, err)
	require.Len(t, list.Tools, 1)

	for _, tc := range []struct {
		name, endpoint, token string
	}{
		{"another session's token", base + "b/mcp", a.Token},
		{"no such session", base + "zzz/mcp", a.Token},
		{"bad token", base + "a/mcp", "vfsd_nope"},
		{"unknown profile", base + "a/mcp?profile=cohere", a.Token},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := mcpConnect(ctx, tc.endpoint, tc.token)
			require.Error(t, err)
		})
	}
	// b's own token reaches b.
	cb, err := mcpConnect(ctx, base+"b/mcp", b.Token)
	require.NoError(t, err)
	cb.Close()
}

// TestMCPOrigin: the MCP endpoint refuses a browser request from another
// site (a present Origin that is not allowed), as the MCP transport
// specification requires against DNS rebinding, and serves non-browser
// clients (no Origin), the daemon's own IP-literal origin, loopback
// origins and the configured ones.
func TestMCPOrigin(t *testing.T) {
	cfg := newConfig(t)
	cfg.Listen = "127.0.0.1:0"
	cfg.AllowOrigins = []string{"https://app.example"}
	s := start(t, cfg)
	ctx := context.Background()
	sess, err := s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "o"})
	require.NoError(t, err)
	addr := s.srv.TCPAddr()
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

	for _, tc := range []struct {
		name, host, origin string
		want               int
	}{
		{"no origin", "", "", http.StatusOK},
		{"another site", "", "http://evil.example", http.StatusForbidden},
		{"another site, https with port", "", "https://evil.example:8443", http.StatusForbidden},
		{"opaque origin", "", "null", http.StatusForbidden},
		{"rebound name: same origin as its Host", "evil.example:" + portOf(addr), "http://evil.example:" + portOf(addr), http.StatusForbidden},
		{"the daemon's own origin", "", "http://" + addr, http.StatusOK},
		{"localhost", "", "http://localhost:5173", http.StatusOK},
		{"loopback v6", "", "http://[::1]:3000", http.StatusOK},
		{"configured", "", "https://app.example", http.StatusOK},
		{"configured, other scheme", "", "http://app.example", http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v1/sessions/o/mcp", strings.NewReader(initialize))
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+sess.Token)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tc.host != "" {
				req.Host = tc.host
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.Equal(t, tc.want, resp.StatusCode, "%s", body)
			if tc.want == http.StatusForbidden && tc.host == "" {
				require.Contains(t, string(body), `"code":"forbidden"`)
				require.Contains(t, string(body), "--allow-origin")
			}
		})
	}

	// The Unix socket checks it as well: a browser cannot reach it, but a
	// local proxy might forward one.
	sc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", cfg.Socket)
	}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://vfsd/v1/sessions/o/mcp", strings.NewReader(initialize))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Origin", "http://evil.example")
	resp, err := sc.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
}

func portOf(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}

func TestAllowOriginsValidated(t *testing.T) {
	for _, o := range []string{"evil.example", "ftp://x.example", "https://x.example/path", "*"} {
		cfg := newConfig(t)
		cfg.AllowOrigins = []string{o}
		_, err := daemon.New(context.Background(), cfg)
		require.ErrorContains(t, err, "allow-origin", o)
	}
}
