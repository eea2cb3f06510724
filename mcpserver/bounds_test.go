package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/mcpserver"
	"github.com/vfsd/vfsd/tools"
)

// blockingBackend's calls run until their context ends, reporting when
// they start and when they see the end.
type blockingBackend struct {
	fakeBackend
	started, cancelled chan string
}

func newBlockingBackend() *blockingBackend {
	return &blockingBackend{started: make(chan string, 8), cancelled: make(chan string, 8)}
}

func (b *blockingBackend) Call(ctx context.Context, name string, _ json.RawMessage) (*tools.Response, error) {
	b.started <- name
	select {
	case <-ctx.Done():
		b.cancelled <- name
		return nil, ctx.Err()
	case <-time.After(time.Minute):
		return nil, context.DeadlineExceeded
	}
}

// awaitSignal waits for a name on ch, failing after a guard against hanging.
func awaitSignal(t *testing.T, ch chan string, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: not within 20s", what)
	}
}

// TestHTTPDisconnectCancelsCall: a client of the streamable HTTP endpoint
// that goes away mid-call stops the call, whatever protocol version it
// speaks: nobody can receive the result of a stateless request whose
// connection is gone.
func TestHTTPDisconnectCancelsCall(t *testing.T) {
	for _, version := range []string{"2025-06-18", "2025-11-25", ""} {
		t.Run("protocol "+version, func(t *testing.T) {
			b := newBlockingBackend()
			srv := mcpserver.New(b, mcpserver.Options{Profile: "minimal"})
			hs := httptest.NewServer(mcpserver.HTTPHandler(func(*http.Request) *mcp.Server { return srv }))
			t.Cleanup(hs.Close)

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL, strings.NewReader(
				`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"x"}}}`))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if version != "" {
				req.Header.Set("MCP-Protocol-Version", version)
			}
			go func() {
				if resp, err := http.DefaultClient.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}()
			awaitSignal(t, b.started, "the call started")
			cancel() // the client goes away
			awaitSignal(t, b.cancelled, "the call was cancelled when its client went away")
		})
	}

	// The SDK's client, cancelling its call.
	b := newBlockingBackend()
	srv := mcpserver.New(b, mcpserver.Options{Profile: "minimal"})
	cs := connectHTTP(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "x"}})
		errc <- err
	}()
	awaitSignal(t, b.started, "the SDK client's call started")
	cancel()
	awaitSignal(t, b.cancelled, "the SDK client's call was cancelled")
	require.Error(t, <-errc)
}

// stdioPeer is a server on ServeIO, spoken to line by line.
type stdioPeer struct {
	in   *io.PipeWriter
	out  *bufio.Reader
	done chan error
}

func newStdioPeer(t *testing.T, srv *mcp.Server) *stdioPeer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &stdioPeer{in: inW, out: bufio.NewReader(outR), done: make(chan error, 1)}
	go func() { p.done <- mcpserver.ServeIO(context.Background(), srv, inR, outW); outW.Close() }()
	t.Cleanup(func() { inW.Close(); outR.Close() })
	return p
}

func (p *stdioPeer) send(t *testing.T, line string) {
	t.Helper()
	_, err := io.WriteString(p.in, line+"\n")
	require.NoError(t, err, "the server stopped reading")
}

// recv reads the next message, failing after a guard against hanging.
func (p *stdioPeer) recv(t *testing.T) map[string]any {
	t.Helper()
	type result struct {
		line string
		err  error
	}
	ch := make(chan result, 1)
	go func() { l, err := p.out.ReadString('\n'); ch <- result{l, err} }()
	select {
	case r := <-ch:
		require.NoError(t, r.err, "the server ended")
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(r.line), &m), r.line)
		return m
	case err := <-p.done:
		t.Fatalf("the server ended: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("no answer within 20s")
	}
	return nil
}

const initializeLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// TestStdioBadLines: a line that is not a JSON-RPC message is answered
// with a JSON-RPC error (id null) and skipped; the server goes on.
func TestStdioBadLines(t *testing.T) {
	restore := mcpserver.SetMaxLineBytes(1 << 10)
	defer restore()
	_, srv := sessionServer(t, "minimal")
	p := newStdioPeer(t, srv)

	for _, tc := range []struct {
		name, line string
		code       float64
		id         any
	}{
		{"not JSON", `this is not json`, -32700, nil},
		{"truncated JSON", `{"jsonrpc":"2.0","id":1,"method":`, -32700, nil},
		{"two values on a line", `{} {}`, -32700, nil},
		{"too long", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("x", 2<<10) + `"}}`, -32600, nil},
		{"not a message", `[1,2,3]`, -32600, nil},
		{"empty batch", `[]`, -32600, nil},
		{"no version", `{"id":3,"method":"ping"}`, -32600, 3.0},
		{"a number", `42`, -32600, nil},
	} {
		p.send(t, tc.line)
		m := p.recv(t)
		require.Equal(t, "2.0", m["jsonrpc"], tc.name)
		require.Contains(t, m, "id", tc.name)
		require.Equal(t, tc.id, m["id"], tc.name)
		e, ok := m["error"].(map[string]any)
		require.True(t, ok, "%s: %v", tc.name, m)
		require.Equal(t, tc.code, e["code"], tc.name)
		require.NotEmpty(t, e["message"], tc.name)
	}
	p.send(t, "") // blank lines are skipped silently

	p.send(t, initializeLine)
	m := p.recv(t)
	require.Equal(t, 1.0, m["id"])
	require.Contains(t, m, "result")
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	p.send(t, `not json either`)
	require.Equal(t, -32700.0, p.recv(t)["error"].(map[string]any)["code"])
	p.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	m = p.recv(t)
	require.Equal(t, 2.0, m["id"])
	require.NotEmpty(t, m["result"].(map[string]any)["tools"])

	// A batch, which protocol 2025-06-18 no longer has, is refused too
	// rather than ending the connection.
	p.send(t, `[{"jsonrpc":"2.0","id":3,"method":"ping"}]`)
	require.Equal(t, -32600.0, p.recv(t)["error"].(map[string]any)["code"])
	p.send(t, `{"jsonrpc":"2.0","id":4,"method":"ping"}`)
	require.Equal(t, 4.0, p.recv(t)["id"])

	p.in.Close()
	select {
	case err := <-p.done:
		require.NoError(t, err, "end of input ends the server cleanly")
	case <-time.After(20 * time.Second):
		t.Fatal("the server did not end with its input")
	}
}

// TestStdioCancelledNotification: notifications/cancelled on stdio stops
// the call it names.
func TestStdioCancelledNotification(t *testing.T) {
	b := newBlockingBackend()
	srv := mcpserver.New(b, mcpserver.Options{Profile: "minimal"})
	p := newStdioPeer(t, srv)
	p.send(t, initializeLine)
	p.recv(t)
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	p.send(t, `{"jsonrpc":"2.0","id":"call-1","method":"tools/call","params":{"name":"read_file","arguments":{"path":"x"}}}`)
	awaitSignal(t, b.started, "the call started")
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"call-1","reason":"user"}}`)
	awaitSignal(t, b.cancelled, "the call was cancelled by notifications/cancelled")
}
