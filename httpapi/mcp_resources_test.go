package httpapi_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/mcpserver"
)

// TestMCPBlobResourcesAreSessionScoped: a session's MCP endpoint serves
// the blobs its tools returned as resources, and no other session's: a
// blob's hash names content, and answering for another session's would
// confirm a guess of it (the grants of blobgrants.go).
func TestMCPBlobResourcesAreSessionScoped(t *testing.T) {
	cfg := newConfig(t)
	cfg.Listen = "127.0.0.1:0"
	s := start(t, cfg)
	ctx := context.Background()
	admin := s.tcpClient(s.d.AdminToken())
	a, err := admin.CreateSession(ctx, api.CreateSessionRequest{ID: "a"})
	require.NoError(t, err)
	b, err := admin.CreateSession(ctx, api.CreateSessionRequest{ID: "b"})
	require.NoError(t, err)
	big := strings.Repeat("secret line\n", 20_000) // 240 KB
	call(t, admin, "a", "write_file", `{"path":"big.txt","inline_text":"`+strings.ReplaceAll(big, "\n", `\n`)+`"}`, "ok")
	base := "http://" + s.srv.TCPAddr() + "/v1/sessions/"

	ca, err := mcpConnect(ctx, base+"a/mcp", a.Token)
	require.NoError(t, err)
	defer ca.Close()
	// A plain read is a page; a byte range from 0 returns the blob.
	res, err := ca.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "big.txt"}})
	require.NoError(t, err)
	page := res.StructuredContent.(map[string]any)
	require.Equal(t, true, page["truncated"])
	require.NotNil(t, page["next_start_line"])
	res, err = ca.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "big.txt", "offset_bytes": 0}})
	require.NoError(t, err)
	uri := res.StructuredContent.(map[string]any)["blob"].(map[string]any)["uri"].(string)

	rr, err := ca.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	require.NoError(t, err)
	require.Equal(t, big, rr.Contents[0].Text)

	cb, err := mcpConnect(ctx, base+"b/mcp", b.Token)
	require.NoError(t, err)
	defer cb.Close()
	_, err = cb.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	var re *jsonrpc.Error
	require.ErrorAs(t, err, &re)
	require.EqualValues(t, mcp.CodeResourceNotFound, re.Code, "session b never got this blob")

	p, err := cb.GetPrompt(ctx, &mcp.GetPromptParams{Name: mcpserver.PromptName})
	require.NoError(t, err)
	require.Contains(t, p.Messages[0].Content.(*mcp.TextContent).Text, "## Workspace")
}
