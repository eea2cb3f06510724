package httpapi

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/vfsd/vfsd/client"
	"github.com/vfsd/vfsd/daemon"
	"github.com/vfsd/vfsd/ui"
)

// Server is the HTTP API of one daemon. New builds it, Serve serves it
// until its context ends (and closes the daemon), Handler serves it
// elsewhere.
type Server struct {
	d   *daemon.Daemon
	cfg daemon.Config
	log *slog.Logger

	mux     *http.ServeMux // the routes, behind each route's scope
	handler http.Handler   // mux behind authentication
	review  *ui.Server
	mcp     http.Handler // every session's MCP endpoint (mcp.go)
	// registered lists the routes as registered, with their scopes.
	registered []registeredRoute

	ready   chan struct{} // closed once Serve listens
	tcpAddr string
}

// New returns the HTTP API of d, with its review page.
func New(d *daemon.Daemon) (*Server, error) {
	cfg := d.Config()
	s := &Server{d: d, cfg: cfg, log: d.Logger(), ready: make(chan struct{})}
	review, err := ui.New(ui.Config{DataDir: cfg.DataDir, Version: cfg.Version, Sessions: sessionBinder{d},
		Client: s.inProcessClient, FromSocket: fromSocket, Logger: s.log})
	if err != nil {
		return nil, err
	}
	s.review = review
	s.mcp = newMCPHandler()
	s.routes()
	return s, nil
}

// Handler returns the API's handler. Requests it serves outside Serve's
// Unix socket need a bearer token.
func (s *Server) Handler() http.Handler { return s.handler }

// Ready is closed once Serve is listening.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// TCPAddr returns the TCP address Serve listens on ("" without
// Config.Listen), once Ready is closed.
func (s *Server) TCPAddr() string { return s.tcpAddr }

// Daemon returns the daemon the API serves.
func (s *Server) Daemon() *daemon.Daemon { return s.d }

// sessionBinder binds review-page logins to sessions' tokens.
type sessionBinder struct{ d *daemon.Daemon }

func (b sessionBinder) Bind(id string) (string, string, error) {
	sb, err := b.d.Bind(id)
	return sb.TokenHash, sb.UID, err
}

func (b sessionBinder) Bound(id, tokenHash string) bool { return b.d.Bound(id, tokenHash) }

// inProcessClient returns an API client acting for the review page's
// viewer v: its requests go to the route table in-process, with v's
// principal, through each route's authorization.
func (s *Server) inProcessClient(v *ui.Viewer) *client.Client {
	caller := daemon.Caller{}
	if v != nil {
		caller = daemon.Caller{Admin: v.Admin(), Session: v.Session}
	}
	c, err := client.New(client.Options{Addr: "http://vfsd.in-process",
		HTTPClient: &http.Client{Transport: &inProcess{h: s.mux, caller: caller}}})
	if err != nil {
		panic(err) // the address above is valid
	}
	return c
}

// Open opens a daemon with cfg (daemon.New) and returns its HTTP API, not
// serving yet: Serve does.
func Open(ctx context.Context, cfg daemon.Config) (*Server, error) {
	d, err := daemon.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s, err := New(d)
	if err != nil {
		d.Close()
		return nil, err
	}
	return s, nil
}
