package daemon_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
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
	base := "http://" + s.d.TCPAddr() + "/v1/sessions/"

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
