package ui

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
)

// Sessions is what the page's logins are bound to: a session login lives
// while the session's token does (package daemon implements it).
type Sessions interface {
	// Bind returns session id's token hash and incarnation UID, or an
	// *api.Error (not_found).
	Bind(id string) (tokenHash, uid string, err error)
	// Bound reports whether session id's token still hashes to tokenHash.
	Bound(id, tokenHash string) bool
}

// Config configures the review page's server.
type Config struct {
	// DataDir is the daemon's data directory: it keeps the key naming the
	// page's hosts, and names the page's cookie.
	DataDir string
	// Version is the daemon's version, shown in the page's footer.
	Version string
	// Sessions binds logins to sessions.
	Sessions Sessions
	// Client returns an API client acting for viewer v: everything the
	// page shows it reads through it, so a reviewer sees exactly what the
	// login's token may see. Package httpapi gives one over an in-process
	// transport.
	Client func(v *Viewer) *client.Client
	// FromSocket reports whether a request came over the daemon's Unix
	// socket (where its owner, not a browser, is the caller).
	FromSocket func(r *http.Request) bool
	// Logger receives what the page cannot show.
	Logger *slog.Logger
}

// Server serves the review page under /ui/ and mints its logins.
type Server struct {
	cfg    Config
	key    []byte // names the page's hosts (Host)
	logins logins
	// portErr, set before serving, says the daemon's TCP port is not its
	// own on every loopback address a browser tries: the page is not
	// offered there.
	portErr error
}

// New returns the review page's server, loading (or making) its key in
// cfg.DataDir.
func New(cfg Config) (*Server, error) {
	key, err := loadUIKey(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Server{cfg: cfg, key: key}, nil
}

// SetPortError records that the daemon's TCP port is not its own on every
// loopback address (nil: it is). Call it before serving.
func (s *Server) SetPortError(err error) { s.portErr = err }

// PortError is what SetPortError recorded.
func (s *Server) PortError() error { return s.portErr }

// Route is one of the page's routes: a ServeMux pattern and its handler.
type Route struct {
	Pattern string
	Handler http.Handler
}

// Routes are the page's routes. Their errors are pages, not JSON; every
// answer carries SecurityHeaders.
func (s *Server) Routes() []Route {
	page := func(pattern string, h func(w http.ResponseWriter, r *http.Request) error) Route {
		return Route{Pattern: pattern, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			SecurityHeaders(w.Header())
			sw := &startedWriter{ResponseWriter: w}
			if err := h(sw, r); err != nil && !sw.started {
				ae := apiError(err)
				s.message(sw, r, ae.Status, "Cannot show this page", ae.Message, "")
			}
		})}
	}
	return []Route{
		page("GET /ui/static/", func(w http.ResponseWriter, r *http.Request) error {
			Static("/ui/static/").ServeHTTP(w, r)
			return nil
		}),
		page("GET /ui", func(w http.ResponseWriter, r *http.Request) error {
			http.Redirect(w, r, "/ui/", http.StatusFound)
			return nil
		}),
		page("GET /ui/login", s.handleLoginPage),
		page("POST /ui/logout", s.handleLogout),
		page("GET /ui/{$}", s.handleSessions),
		page("GET /ui/s/{id}", s.handleSession),
		page("GET /ui/s/{id}/live", s.handleLive),
	}
}

// startedWriter remembers whether a response has started.
type startedWriter struct {
	http.ResponseWriter
	started bool
}

func (w *startedWriter) WriteHeader(code int) {
	w.started = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *startedWriter) Write(b []byte) (int, error) {
	w.started = true
	return w.ResponseWriter.Write(b)
}

// Login is a one-time login MintLogin made.
type Login struct {
	// Code is the one-time code; Path the page's path that takes it.
	Code, Path string
	// Host is the page's host name for the login.
	Host string
	// Session is the session it reaches ("" for the admin).
	Session string
	// Expires is when the code stops working.
	Expires time.Time
}

// MintLogin makes a one-time login to the page for session ("" the
// admin's), bound to the session's token: the API's POST /v1/ui/login.
func (s *Server) MintLogin(session string) (*Login, error) {
	var th, uid string
	if session != "" {
		var err error
		if th, uid, err = s.cfg.Sessions.Bind(session); err != nil {
			return nil, err
		}
	}
	host := s.Host(uid)
	code, exp, err := s.mint(session, th, host)
	if err != nil {
		return nil, err
	}
	return &Login{Code: code, Path: "/ui/login?code=" + url.QueryEscape(code), Host: host, Session: session, Expires: exp}, nil
}

// loopbackHost reports whether name (a Host header's name) is a loopback
// address or localhost: an address of this machine that reaches the
// daemon on the same port as its page's host name does.
func loopbackHost(name string) bool {
	if name == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(name, "[]"))
	return ip != nil && ip.IsLoopback()
}

// apiError is err as the API's error.
func apiError(err error) *api.Error {
	var ae *api.Error
	if errors.As(err, &ae) {
		if ae.Status == 0 {
			ae.Status = api.HTTPStatus(ae.Code)
		}
		return ae
	}
	return apiErr(api.CodeInternal, "%v", err)
}

// client returns the API client of the request's viewer.
func (s *Server) client(r *http.Request) *client.Client {
	return s.cfg.Client(ViewerFrom(r.Context()))
}
