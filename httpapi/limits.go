package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/daemon"
)

// The API bounds the work a client can make it hold, on every listener:
//
//   - a request's headers must arrive within Config.HeaderTimeout;
//   - a request body must keep arriving: each read waits at most
//     Config.BodyTimeout (bodyDeadline), so a stalled upload is cut while a
//     long one that makes progress is not; responses (event streams, MCP)
//     have no deadline;
//   - a keep-alive connection idle for Config.IdleTimeout is closed;
//   - headers are at most maxHeaderBytes, JSON bodies maxJSONBytes, blobs
//     Config.MaxBlobBytes;
//   - each listener holds at most Config.MaxConns connections; past that a
//     connection is answered 503 and closed (limitListener);
//   - a 401 carries Connection: close, and the unauthenticated body is
//     never read (writeError).

// httpServer returns an HTTP server of the API's handler with its
// timeouts and limits.
func (s *Server) httpServer() *http.Server {
	return &http.Server{
		Handler:           s.bodyDeadline(s.handler),
		ReadHeaderTimeout: s.cfg.HeaderTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
}

// bodyDeadline gives every request that has a body a read deadline of
// Config.BodyTimeout, moved on by each read that makes progress and lifted
// once the body is read to its end: the connection's reads from then on
// only watch for the client going away, which must not be cut while a
// response streams.
func (s *Server) bodyDeadline(next http.Handler) http.Handler {
	timeout := s.cfg.BodyTimeout
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			rc := http.NewResponseController(w)
			if err := rc.SetReadDeadline(time.Now().Add(timeout)); err == nil {
				// On a shallow copy: net/http looks at its own request's
				// Body to see a body refused unread, and then closes the
				// connection gently (half-close, a grace period) so that
				// the client, still sending, reads the answer before a reset.
				r = r.WithContext(r.Context())
				r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc, timeout: timeout}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody is a request body whose every read moves the connection's
// read deadline on, and whose end lifts it.
type deadlineBody struct {
	io.ReadCloser
	rc      *http.ResponseController
	timeout time.Duration
	ended   bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case b.ended:
	case err == io.EOF:
		b.ended = true
		_ = b.rc.SetReadDeadline(time.Time{})
	case n > 0 && err == nil:
		_ = b.rc.SetReadDeadline(time.Now().Add(b.timeout))
	case errors.Is(err, os.ErrDeadlineExceeded):
		err = apiErr(api.CodeInvalidInput, "the request body stopped arriving: nothing came for %s; send it without pausing", b.timeout)
	}
	return n, err
}

// refusalGrace bounds how long a refused connection is kept to answer it.
const refusalGrace = time.Second

// maxRefusing bounds the refused connections being answered at once;
// past it they are closed without an answer.
const maxRefusing = 64

// limitListener returns ln bounded to Config.MaxConns connections open at
// once. A connection past the bound is not made to wait (a client would
// see a hang it cannot tell from a dead daemon): it is answered 503
// unavailable, with Retry-After, and closed.
func (s *Server) limitListener(ln net.Listener) net.Listener {
	return &limitListener{Listener: ln, slots: make(chan struct{}, s.cfg.MaxConns),
		refusing: make(chan struct{}, maxRefusing), d: s.d}
}

type limitListener struct {
	net.Listener
	slots    chan struct{} // one per open connection
	refusing chan struct{} // one per refusal being answered
	d        *daemon.Daemon
}

// Accept returns the next connection within the bound, refusing those
// past it.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &limitConn{Conn: c, release: func() { <-l.slots }}, nil
		default:
		}
		l.d.CountRequest("(connection limit)", http.StatusServiceUnavailable)
		select {
		case l.refusing <- struct{}{}:
			go func() {
				defer func() { <-l.refusing }()
				refuse(c, cap(l.slots))
			}()
		default:
			c.Close()
		}
	}
}

// refuse answers a connection past the bound with 503 and closes it,
// reading what the client sent meanwhile (for up to refusalGrace) so that
// closing does not reset the connection before the answer is read.
func refuse(c net.Conn, max int) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(refusalGrace))
	body := fmt.Sprintf(`{"error":{"code":%q,"message":"the daemon has %d connections open on this listener, its limit; retry shortly, close idle connections, or raise vfsd serve --max-conns"}}`+"\n",
		api.CodeUnavailable, max)
	fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	io.Copy(io.Discard, io.LimitReader(c, 64<<10))
}

// limitConn is a connection holding a slot of its listener until closed.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

// CloseWrite passes a half-close through, which net/http uses to let the
// client read a last response before the connection goes.
func (c *limitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// ReadFrom passes sendfile and splice through (blob downloads).
func (c *limitConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
