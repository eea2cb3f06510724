package mcpserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/mcpserver"
	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/tools/toolstest"
)

// blobOf reads path by byte range from 0, which returns a large file as a
// blob, and returns the blob's URI.
func blobOf(t *testing.T, cs *mcp.ClientSession, path string) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": path, "offset_bytes": 0}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	blob := res.StructuredContent.(map[string]any)["blob"].(map[string]any)
	uri := blob["uri"].(string)
	require.Contains(t, res.Content[0].(*mcp.TextContent).Text, uri, "the text tells the model where the content is")
	return uri
}

// TestBlobResources: the blobs a session's tools return are MCP resources
// (resources/read of vfsd://blobs/<hash>), read in parts of at most
// MaxResourceBytes; an unknown blob is "resource not found".
func TestBlobResources(t *testing.T) {
	big := strings.Repeat("héllo wörld\n", 250_000) // 3.3 MB of text, two-byte characters
	bin := strings.Repeat("\x00\xff", 100<<10)
	env := toolstest.New(t, nil, map[string]string{"big.txt": big, "big.bin": bin})
	srv, err := mcpserver.NewServer(mcpserver.ToolsetBackend(env.Tools, env.S.ID()), mcpserver.Options{Version: "test"})
	require.NoError(t, err)
	cs := connectInMemory(t, srv)
	ctx := context.Background()

	tmpls, err := cs.ListResourceTemplates(ctx, nil)
	require.NoError(t, err)
	require.Len(t, tmpls.ResourceTemplates, 1)
	require.Equal(t, tools.BlobURIPrefix+"{hash}{?offset,length}", tmpls.ResourceTemplates[0].URITemplate)

	t.Run("text, in parts", func(t *testing.T) {
		uri := blobOf(t, cs, "big.txt")
		var got strings.Builder
		parts := 0
		for next := uri; next != ""; parts++ {
			res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: next})
			require.NoError(t, err)
			require.Len(t, res.Contents, 1)
			c := res.Contents[0]
			require.Equal(t, "text/plain; charset=utf-8", c.MIMEType)
			require.LessOrEqual(t, len(c.Text), mcpserver.MaxResourceBytes)
			got.WriteString(c.Text)
			require.EqualValues(t, len(big), c.Meta["size_bytes"])
			next, _ = c.Meta["next_uri"].(string)
			require.Equal(t, next != "", c.Meta["truncated"])
		}
		require.Equal(t, 4, parts)
		require.Equal(t, big, got.String())

		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri + "?offset=3&length=6"})
		require.NoError(t, err)
		require.Equal(t, "llo w", res.Contents[0].Text, "a part that ends within a character leaves it for the next")
	})

	t.Run("binary", func(t *testing.T) {
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: blobOf(t, cs, "big.bin")})
		require.NoError(t, err)
		require.Equal(t, "application/octet-stream", res.Contents[0].MIMEType)
		require.Equal(t, []byte(bin), res.Contents[0].Blob)
	})

	for _, c := range []struct {
		name, uri string
		code      int64
	}{
		{"unknown blob", tools.BlobURIPrefix + strings.Repeat("0", 64), mcp.CodeResourceNotFound},
		{"not a hash", tools.BlobURIPrefix + "nope", jsonrpc.CodeInvalidParams},
		{"bad offset", tools.BlobURIPrefix + strings.Repeat("0", 64) + "?offset=-1", jsonrpc.CodeInvalidParams},
		{"unknown parameter", tools.BlobURIPrefix + strings.Repeat("0", 64) + "?from=1", jsonrpc.CodeInvalidParams},
		{"another scheme", "file:///etc/passwd", mcp.CodeResourceNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: c.uri})
			var re *jsonrpc.Error
			require.ErrorAs(t, err, &re)
			require.Equal(t, c.code, re.Code, "%v", err)
		})
	}
}

// TestWorkspacePrompt: the prompt section is an MCP prompt too.
func TestWorkspacePrompt(t *testing.T) {
	for _, profile := range []string{"anthropic", "consolidated"} {
		t.Run(profile, func(t *testing.T) {
			_, srv := sessionServer(t, profile)
			cs := connectInMemory(t, srv)
			ctx := context.Background()
			list, err := cs.ListPrompts(ctx, nil)
			require.NoError(t, err)
			require.Len(t, list.Prompts, 1)
			require.Equal(t, mcpserver.PromptName, list.Prompts[0].Name)
			got, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: mcpserver.PromptName})
			require.NoError(t, err)
			want, err := tools.Render(profile)
			require.NoError(t, err)
			require.Len(t, got.Messages, 1)
			require.Equal(t, mcp.Role("user"), got.Messages[0].Role)
			require.Equal(t, want.Prompt, got.Messages[0].Content.(*mcp.TextContent).Text)
			require.Equal(t, want.Prompt, cs.InitializeResult().Instructions, "the same text as the instructions")
		})
	}
}
