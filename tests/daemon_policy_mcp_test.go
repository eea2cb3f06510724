package tests

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
)

// TestDaemonPolicyFileAndMCPResources drives the real binary: a session
// created with --policy-file (an unknown field refused by name; vfsd's
// fields confining it), then `vfsd mcp` on stdio for it: tools under that
// policy, a large file paged by read_file, its blob read back with
// resources/read, and the prompt section with prompts/get.
func TestDaemonPolicyFileAndMCPResources(t *testing.T) {
	dataDir, socket := newDaemonDirs(t)
	p := startDaemon(t, dataDir, socket)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
		return path
	}

	aos := write("aos.json", `{"fs_roots":["src"]}`)
	_, errOut, code := p.cli(ctx, nil, "session", "create", "--id", "nope", "--policy-file", aos)
	require.NotEqual(t, 0, code)
	require.Contains(t, errOut, `unknown field "fs_roots"`)

	pol := write("pol.json", `{"base":"default","name":"src-only","read_roots":["src"],"write_roots":["src"],"allowed_ops":["read_file","write_file","list_directory"]}`)
	out, errOut, code := p.cli(ctx, nil, "session", "create", "--id", "agent", "--policy-file", pol, "--json")
	require.Equal(t, 0, code, errOut)
	var created api.CreateSessionResponse
	require.NoError(t, json.Unmarshal([]byte(out), &created))
	require.Equal(t, "src-only", created.Session.Policy)

	big := strings.Repeat("a line of the big file\n", 10_000) // 230 KB, 10,000 lines
	r, err := p.client().CallTool(ctx, "agent", "write_file", json.RawMessage(`{"path":"src/big.txt","inline_text":"`+strings.ReplaceAll(big, "\n", `\n`)+`"}`))
	require.NoError(t, err)
	require.Equal(t, "ok", r.Status, "%s", r.JSON)

	cs, err := mcp.NewClient(&mcp.Implementation{Name: "vfsd-e2e", Version: "1"}, nil).Connect(ctx,
		&mcp.CommandTransport{Command: exec.Command(p.bin, "mcp", "--session", "agent", "--socket", socket)}, nil)
	require.NoError(t, err)
	defer cs.Close()

	list, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	require.ElementsMatch(t, []string{"read_file", "write_file", "list_directory"}, names, "the policy's allowed_ops")

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "src/big.txt"}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	text := res.Content[0].(*mcp.TextContent).Text
	require.Contains(t, text, "read on with start_line=")
	receipt := res.StructuredContent.(map[string]any)
	require.Equal(t, true, receipt["truncated"])
	require.Nil(t, receipt["blob"])

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "src/big.txt", "offset_bytes": 0}})
	require.NoError(t, err)
	uri := res.StructuredContent.(map[string]any)["blob"].(map[string]any)["uri"].(string)
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri + "?offset=23"})
	require.NoError(t, err)
	require.Equal(t, big[23:], rr.Contents[0].Text)

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "etc/passwd"}})
	require.NoError(t, err)
	require.True(t, res.IsError, "reads are confined to src")

	pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "workspace"})
	require.NoError(t, err)
	require.Equal(t, cs.InitializeResult().Instructions, pr.Messages[0].Content.(*mcp.TextContent).Text)
}
