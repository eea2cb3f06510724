package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
	"github.com/vfsd/vfsd/daemon"
	"github.com/vfsd/vfsd/httpapi"
)

// server is a daemon serving its HTTP API in the test's process.
type server struct {
	t      testing.TB
	cfg    daemon.Config
	d      *daemon.Daemon
	srv    *httpapi.Server
	cancel context.CancelFunc
	done   chan error
	c      *client.Client // over the socket: the admin
}

// shortDir returns a temporary directory with a short path: Unix socket
// paths are limited to 107 bytes.
func shortDir(t testing.TB) string {
	dir, err := os.MkdirTemp("", "vfsd")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// newConfig returns a config on fresh directories.
func newConfig(t testing.TB) daemon.Config {
	return daemon.Config{
		DataDir: t.TempDir(),
		Socket:  filepath.Join(shortDir(t), "s.sock"),
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
		// Directories on disk of weakincentives sessions (root_path): the
		// test's own, not the machine's temporary directory.
		RootDirParent: t.TempDir(),
	}
}

// start opens and serves a daemon with cfg, stopping it when the test ends.
func start(t testing.TB, cfg daemon.Config) *server {
	t.Helper()
	srv, err := httpapi.Open(context.Background(), cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	s := &server{t: t, cfg: cfg, d: srv.Daemon(), srv: srv, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- srv.Serve(ctx) }()
	select {
	case <-srv.Ready():
	case err := <-s.done:
		t.Fatalf("serve: %v", err)
	}
	s.c, err = client.New(client.Options{Socket: cfg.Socket,
		HTTPClient: &http.Client{Transport: validatingTransport{t: t, next: socketTransport(cfg.Socket)}}})
	require.NoError(t, err)
	t.Cleanup(func() { s.stop() })
	return s
}

// stop shuts the daemon down gracefully and waits for it.
func (s *server) stop() {
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.cancel = nil
	select {
	case err := <-s.done:
		require.NoError(s.t, err)
	case <-time.After(30 * time.Second):
		s.t.Fatal("the daemon did not stop within 30s")
	}
	s.c.Close()
}

// tcpClient returns a client over TCP with token.
func (s *server) tcpClient(token string) *client.Client {
	c, err := client.New(client.Options{Addr: s.srv.TCPAddr(), Token: token,
		HTTPClient: &http.Client{Transport: validatingTransport{t: s.t, next: http.DefaultTransport.(*http.Transport).Clone()}}})
	require.NoError(s.t, err)
	s.t.Cleanup(c.Close)
	return c
}

// call runs a tool and requires its status.
func call(t testing.TB, c *client.Client, session, tool, params, status string) map[string]any {
	t.Helper()
	r, err := c.CallTool(context.Background(), session, tool, json.RawMessage(params))
	require.NoError(t, err)
	require.Equal(t, status, r.Status, "%s %s: %s", tool, params, r.JSON)
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.JSON, &m))
	return m
}

// requireCode requires err to be an API error with code.
func requireCode(t testing.TB, err error, code string) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, code, client.Code(err), "%v", err)
	var ae *api.Error
	require.ErrorAs(t, err, &ae)
	require.Equal(t, api.HTTPStatus(code), ae.Status)
	require.NotEmpty(t, ae.Message)
}
