package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeStdio serves server to one client on standard input and output
// (newline-delimited JSON-RPC, the MCP stdio transport) until the client
// closes standard input, when it returns nil, or ctx is done, when it
// returns an error wrapping ctx.Err(). Nothing else may write to standard
// output meanwhile: logs go to standard error.
func ServeStdio(ctx context.Context, server *mcp.Server) error {
	if server == nil {
		return errors.New("mcpserver: serve stdio: nil server")
	}
	err := server.Run(ctx, &mcp.StdioTransport{})
	switch {
	case err == nil, errors.Is(err, io.EOF) && ctx.Err() == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("mcpserver: serve stdio: %w", ctx.Err())
	}
	return fmt.Errorf("mcpserver: serve stdio: %w", err)
}

// maxRequestBytes bounds an HTTP request body: the stdio transport's
// bound on one message, so that a call that works on one works on the
// other.
const maxRequestBytes = mcp.DefaultMaxLineLength

// HTTPHandler serves MCP over the streamable HTTP transport: every POST is
// one JSON-RPC message, answered on its own response. getServer picks the
// server for a request (by its URL, say: a per-session endpoint); it is
// called for every request, so it should return a server built once per
// session rather than build one each time, and may return nil to refuse
// the request (400 Bad Request).
//
// The handler is stateless (no Mcp-Session-Id): the tools keep no
// per-client state, so every request is routed by getServer alone, no
// session can be reached through another session's URL, and there are no
// idle MCP sessions to expire. Server-to-client requests are therefore not
// possible; these tools make none. Request bodies are limited to 16 MiB,
// as stdio messages are; with clients of protocol 2026-07-28 and later, a
// request whose client goes away is cancelled. The handler does no
// authentication: mount it behind the daemon's.
func HTTPHandler(getServer func(*http.Request) *mcp.Server) http.Handler {
	return mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Stateless:                    true,
		MaxRequestBodyBytes:          maxRequestBytes,
		PropagateRequestCancellation: true,
	})
}
