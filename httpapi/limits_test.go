package httpapi_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
)

// openFDs counts this process's open descriptors.
func openFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd to count descriptors: %v", err)
	}
	return len(ents)
}

// waitFor polls cond until it holds, failing the test after guard (a
// bound against hanging, not a timing requirement).
func waitFor(t testing.TB, guard time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(guard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, guard)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// readToClose reads conn until the server closes it, and returns what it
// read; it fails if the server has not closed it within guard.
func readToClose(conn net.Conn, guard time.Duration) (string, error) {
	conn.SetReadDeadline(time.Now().Add(guard))
	b, err := io.ReadAll(conn)
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) && strings.Contains(err.Error(), "reset by peer") {
		err = nil // closed with unread data: a reset is a close too
	}
	return string(b), err
}

// TestStalledRequestsAreCut is the slow-client attack: 200 connections
// that send a POST's headers and never its body (or never finish their
// headers), on TCP and on the Unix socket, authenticated or not. The
// daemon must close every one within its timeouts, answer a 401 with
// Connection: close without waiting for the body, and give back every
// descriptor.
func TestStalledRequestsAreCut(t *testing.T) {
	cfg := newConfig(t)
	cfg.Listen = "127.0.0.1:0"
	cfg.HeaderTimeout = 200 * time.Millisecond
	cfg.BodyTimeout = 200 * time.Millisecond
	s := start(t, cfg)
	admin := s.d.AdminToken()
	before := openFDs(t)

	type attack struct {
		name, network, prefix string
		want                  string // in the response, if any
	}
	post := func(path, auth string) string {
		return "POST " + path + " HTTP/1.1\r\nHost: vfsd\r\n" + auth +
			"Content-Type: application/json\r\nContent-Length: 4096\r\n\r\n{\"id\":"
	}
	attacks := []attack{
		{"admin body never sent", "tcp", post("/v1/sessions", "Authorization: Bearer "+admin+"\r\n"), ""},
		{"socket body never sent", "unix", post("/v1/sessions", ""), ""},
		{"no token, body never sent", "tcp", post("/v1/sessions", ""), "HTTP/1.1 401"},
		{"bad token, body never sent", "tcp", post("/v1/sessions/x/tools/read_file", "Authorization: Bearer vfsd_sess_nope\r\n"), "HTTP/1.1 401"},
		{"headers never finished", "tcp", "POST /v1/sessions HTTP/1.1\r\nHost: vfsd\r\nX-Slow: ", ""},
		{"socket headers never finished", "unix", "GET /healthz HTTP/1.1\r\nHost: vfsd\r\nX-Slow: ", ""},
	}
	const conns = 200
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for i := range conns {
		a := attacks[i%len(attacks)]
		wg.Go(func() {
			addr := s.srv.TCPAddr()
			if a.network == "unix" {
				addr = cfg.Socket
			}
			conn, err := net.Dial(a.network, addr)
			if err != nil {
				errs <- fmt.Errorf("%s: dial: %w", a.name, err)
				return
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, a.prefix); err != nil {
				errs <- fmt.Errorf("%s: write: %w", a.name, err)
				return
			}
			got, err := readToClose(conn, 20*time.Second)
			if err != nil {
				errs <- fmt.Errorf("%s: the daemon kept the connection open: %w (read %q)", a.name, err, got)
				return
			}
			if a.want != "" {
				if !strings.HasPrefix(got, a.want) || !strings.Contains(got, "\r\nConnection: close\r\n") {
					errs <- fmt.Errorf("%s: want %q with Connection: close, got %q", a.name, a.want, got)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	// Every descriptor the attack took is given back.
	waitFor(t, 10*time.Second, "the daemon's descriptors given back", func() bool { return openFDs(t) <= before+8 })

	// The daemon still serves.
	_, err := s.c.Health(context.Background())
	require.NoError(t, err)
}

// TestUnauthorizedClosesWithoutReadingBody: a 401 answers at once, says
// Connection: close, and the daemon closes the connection without waiting
// for the (huge, never sent) body, long before the body timeout.
func TestUnauthorizedClosesWithoutReadingBody(t *testing.T) {
	cfg := newConfig(t)
	cfg.Listen = "127.0.0.1:0"
	cfg.BodyTimeout = time.Hour // only the 401 itself may close it
	s := start(t, cfg)
	conn, err := net.Dial("tcp", s.srv.TCPAddr())
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "POST /v1/blobs HTTP/1.1\r\nHost: vfsd\r\nContent-Length: 1073741824\r\n\r\nxxxx")
	require.NoError(t, err)
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	var raw strings.Builder
	resp, err := http.ReadResponse(bufio.NewReader(io.TeeReader(conn, &raw)), nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Contains(t, raw.String(), "\r\nConnection: close\r\n")
	require.True(t, resp.Close)
	_, err = readToClose(conn, 20*time.Second)
	require.NoError(t, err, "the daemon closes the connection after a 401")
}

// TestConnectionBound: each listener holds at most MaxConns connections;
// past it a connection is answered 503 and closed, and the Unix socket is
// not starved by the TCP listener being full. A slot freed is usable again.
func TestConnectionBound(t *testing.T) {
	cfg := newConfig(t)
	cfg.Listen = "127.0.0.1:0"
	cfg.MaxConns = 8
	cfg.HeaderTimeout = time.Hour // the holders keep their slots
	s := start(t, cfg)
	before := openFDs(t)

	var holders []net.Conn
	for range cfg.MaxConns {
		c, err := net.Dial("tcp", s.srv.TCPAddr())
		require.NoError(t, err)
		defer c.Close()
		holders = append(holders, c)
	}
	const extra = 20
	for i := range extra {
		c, err := net.Dial("tcp", s.srv.TCPAddr())
		require.NoError(t, err)
		_, err = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: vfsd\r\n\r\n")
		require.NoError(t, err)
		got, err := readToClose(c, 20*time.Second)
		c.Close()
		require.NoError(t, err, "connection %d past the bound", i)
		require.True(t, strings.HasPrefix(got, "HTTP/1.1 503 "), "connection %d past the bound: %q", i, got)
		require.Contains(t, got, `"code":"unavailable"`)
		require.Contains(t, got, "Connection: close")
	}
	// The daemon holds no more than its bound (the client side holds
	// MaxConns descriptors of its own).
	require.LessOrEqual(t, openFDs(t), before+2*cfg.MaxConns+8)

	// The socket has its own bound.
	_, err := s.c.Health(context.Background())
	require.NoError(t, err)

	// A freed slot serves again.
	holders[0].Close()
	waitFor(t, 10*time.Second, "a freed slot serves", func() bool {
		resp, err := http.Get("http://" + s.srv.TCPAddr() + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// slowReader yields n chunks, pausing before each.
type slowReader struct {
	n     int
	pause time.Duration
}

func (r *slowReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	r.n--
	time.Sleep(r.pause)
	return copy(p, strings.Repeat("x", min(len(p), 1024))), nil
}

// TestTimeoutsSpareProgress: the body timeout cuts stalls, not long work:
// an upload that keeps sending outlasts it many times over, and an event
// stream (a long response) stays open past it and past its read.
func TestTimeoutsSpareProgress(t *testing.T) {
	cfg := newConfig(t)
	cfg.Listen = "127.0.0.1:0"
	// Wide margins: a loaded machine may not run a goroutine for a while.
	cfg.BodyTimeout = time.Second
	cfg.HeaderTimeout = time.Second
	s := start(t, cfg)
	ctx := context.Background()
	c := s.tcpClient(s.d.AdminToken())

	blob, err := c.PutBlob(ctx, &slowReader{n: 12, pause: 250 * time.Millisecond})
	require.NoError(t, err, "a slow upload that keeps sending")
	require.Equal(t, int64(12*1024), blob.SizeBytes)

	resp, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "e"})
	require.NoError(t, err)
	stream, err := s.tcpClient(resp.Token).Events(ctx, "e")
	require.NoError(t, err)
	defer stream.Close()
	time.Sleep(2 * cfg.BodyTimeout)
	call(t, c, "e", "write_file", `{"path":"a.txt","inline_text":"a"}`, "ok")
	ev, err := stream.Next()
	require.NoError(t, err, "the event stream outlives the body timeout")
	require.Equal(t, []string{"a.txt"}, ev.Change.Paths)
}

// TestStalledBodyAnswer: a body that stops arriving is answered
// invalid_input, naming the wait, before the connection is closed.
func TestStalledBodyAnswer(t *testing.T) {
	cfg := newConfig(t)
	cfg.BodyTimeout = 200 * time.Millisecond
	s := start(t, cfg)
	conn, err := net.Dial("unix", cfg.Socket)
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "POST /v1/sessions HTTP/1.1\r\nHost: vfsd\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	require.NoError(t, err)
	got, err := readToClose(conn, 20*time.Second)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(got, "HTTP/1.1 400 "), got)
	require.Contains(t, got, "stopped arriving")
	_, err = s.c.Health(context.Background())
	require.NoError(t, err)
}
