package tests

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
)

// bearerTransport adds a bearer token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestDaemonMCP drives one session of the real daemon with the MCP SDK's
// own client over both transports: `vfsd mcp` on stdio, and the daemon's
// streamable-HTTP endpoint with the session's token. Both see one
// workspace, and the HTTP API sees what they wrote.
func TestDaemonMCP(t *testing.T) {
	dataDir, socket := newDaemonDirs(t)
	p := startDaemon(t, dataDir, socket, "--listen", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := p.client()
	sess, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "agent", Profile: "openai"})
	require.NoError(t, err)
	_, err = c.CreateSession(ctx, api.CreateSessionRequest{ID: "other"})
	require.NoError(t, err)

	newClient := func() *mcp.Client {
		return mcp.NewClient(&mcp.Implementation{Name: "vfsd-e2e", Version: "1"}, nil)
	}
	stdio, err := newClient().Connect(ctx, &mcp.CommandTransport{
		Command: exec.Command(p.bin, "mcp", "--session", "agent", "--socket", socket)}, nil)
	require.NoError(t, err)
	defer stdio.Close()
	endpoint := "http://" + p.tcpAddr() + "/v1/sessions/agent/mcp"
	httpc, err := newClient().Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint,
		HTTPClient: &http.Client{Transport: bearerTransport{sess.Token}}, MaxRetries: -1}, nil)
	require.NoError(t, err)
	defer httpc.Close()

	// Both list the openai profile's tools, with schemas, in one order.
	names := func(cs *mcp.ClientSession) []string {
		list, err := cs.ListTools(ctx, nil)
		require.NoError(t, err)
		var out []string
		for _, tl := range list.Tools {
			require.NotNil(t, tl.InputSchema, tl.Name)
			out = append(out, tl.Name)
		}
		return out
	}
	require.Equal(t, names(stdio), names(httpc))
	require.Contains(t, names(stdio), "apply_patch")
	require.Equal(t, "vfsd", stdio.InitializeResult().ServerInfo.Name)

	callOK := func(cs *mcp.ClientSession, tool string, args map[string]any) (string, map[string]any) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		require.NoError(t, err)
		require.False(t, res.IsError, "%s: %+v", tool, res.Content)
		raw, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		var receipt map[string]any
		require.NoError(t, json.Unmarshal(raw, &receipt))
		require.Equal(t, "ok", receipt["status"])
		return res.Content[0].(*mcp.TextContent).Text, receipt
	}
	// Written over stdio, edited over HTTP, read back over stdio.
	callOK(stdio, "write_file", map[string]any{"path": "src/app.go", "content": "package app\n\nconst Name = \"old\"\n"})
	callOK(httpc, "edit_file", map[string]any{"path": "src/app.go", "old_string": `"old"`, "new_string": `"new"`})
	text, _ := callOK(stdio, "read_file", map[string]any{"path": "src/app.go"})
	require.Contains(t, text, `const Name = "new"`)
	// The HTTP API sees it too.
	r, err := c.CallTool(ctx, "agent", "read_file", json.RawMessage(`{"path":"src/app.go"}`))
	require.NoError(t, err)
	require.Contains(t, string(r.JSON), `\"new\"`)

	// A refused call is a result with isError and a receipt.
	res, err := stdio.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "missing.txt"}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Contains(t, res.Content[0].(*mcp.TextContent).Text, "missing.txt")

	// The session's token does not reach another session's endpoint.
	_, err = newClient().Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   "http://" + p.tcpAddr() + "/v1/sessions/other/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{sess.Token}}, MaxRetries: -1}, nil)
	require.Error(t, err)
	require.Contains(t, strings.ToLower(err.Error()), "forbidden")
}

// TestDaemonMCPNoSession checks that `vfsd mcp` for a session that does not
// exist exits at once and says what to do.
func TestDaemonMCPNoSession(t *testing.T) {
	dataDir, socket := newDaemonDirs(t)
	p := startDaemon(t, dataDir, socket)
	_, stderr, code := p.cli(context.Background(), nil, "mcp", "--session", "nope")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, `no session "nope"`)
	require.Contains(t, stderr, "vfsd session list")
	_, stderr, code = p.cli(context.Background(), nil, "mcp")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "--session is required")
}
