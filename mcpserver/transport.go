package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeStdio serves server to one client on standard input and output
// (newline-delimited JSON-RPC, the MCP stdio transport) until the client
// closes standard input, when it returns nil, or ctx is done, when it
// returns an error wrapping ctx.Err(). Nothing else may write to standard
// output meanwhile: logs go to standard error. A line that is not a
// JSON-RPC message is answered with an error and skipped (see ServeIO).
func ServeStdio(ctx context.Context, server *mcp.Server) error {
	if server == nil {
		return errors.New("mcpserver: serve stdio: nil server")
	}
	return serveLines(ctx, server, os.Stdin, os.Stdout, "serve stdio")
}

// ServeIO serves server to one client over in and out as ServeStdio does
// over standard input and output: newline-delimited JSON-RPC, until in
// ends (nil) or ctx is done (an error wrapping ctx.Err()).
//
// A line that is not a JSON-RPC message is answered with a JSON-RPC error
// whose id is null (or the line's id, if it has a usable one) and skipped:
// -32700 parse error for one that is not JSON, -32600 invalid request for
// JSON that is no message, for a batch (which protocol 2025-06-18 and
// later do not have) and for a line over 16 MiB, which is discarded as it
// is read rather than buffered. Blank lines are ignored.
func ServeIO(ctx context.Context, server *mcp.Server, in io.Reader, out io.Writer) error {
	if server == nil {
		return errors.New("mcpserver: serve: nil server")
	}
	return serveLines(ctx, server, in, out, "serve")
}

// serveLines runs server over in and out, the lines of in going through
// filterLines; what names the operation in errors.
func serveLines(ctx context.Context, server *mcp.Server, in io.Reader, out io.Writer, what string) error {
	w := &lockedWriter{w: out}
	pr, pw := io.Pipe()
	go filterLines(in, pw, w, maxLineBytes)
	err := server.Run(ctx, &mcp.IOTransport{Reader: pr, Writer: w, MaxLineLength: 2 * maxLineBytes})
	pr.Close()
	switch {
	case err == nil, errors.Is(err, io.EOF) && ctx.Err() == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("mcpserver: %s: %w", what, ctx.Err())
	}
	return fmt.Errorf("mcpserver: %s: %w", what, err)
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
// as stdio messages are.
//
// A request whose client goes away is cancelled, whatever the protocol
// version: the call's context ends with the HTTP request's, since nobody
// could receive its result. A notifications/cancelled, on the other hand,
// arrives on a POST of its own, which a stateless server cannot tie to
// the call it names (nor tell one client's request IDs from another's):
// it is accepted and has no effect. Clients that cancel also close the
// call's request (the Go and TypeScript SDKs do), which stops it. The
// handler does no authentication: mount it behind the daemon's.
func HTTPHandler(getServer func(*http.Request) *mcp.Server) http.Handler {
	h := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Stateless:                    true,
		MaxRequestBodyBytes:          maxRequestBytes,
		PropagateRequestCancellation: true,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(withCarrier(r.Context())))
	})
}

// carrierKey marks the context of a request handled over a carrier whose
// end means nobody can receive the result (a stateless HTTP request).
type carrierKey struct{}

// withCarrier records ctx as its own carrier. The SDK hides the
// cancellation of the context a session is connected with from the
// handlers (for protocols before 2026-07-28) but keeps its values:
// carrierCancel uses this one to restore it.
func withCarrier(ctx context.Context) context.Context {
	return context.WithValue(ctx, carrierKey{}, ctx)
}

// carrierCancel is middleware that ends a request's context when its
// carrier's ends.
func carrierCancel(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		carrier, ok := ctx.Value(carrierKey{}).(context.Context)
		if !ok {
			return next(ctx, method, req)
		}
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		stop := context.AfterFunc(carrier, func() {
			cancel(fmt.Errorf("the client went away: %w", context.Cause(carrier)))
		})
		defer stop()
		return next(ctx, method, req)
	}
}
