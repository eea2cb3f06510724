package httpapi

import (
	"net"
	"net/http"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/ui"
)

// The review page (package ui) is served under /ui/ beside the API: its
// routes are registered from ui.Server.Routes, counted like the API's, and
// it reads what it shows through the API in-process (Server's
// inProcessClient), as its viewer. The API mints its logins.

// reviewRoutes registers the review page's routes and its login route.
func (s *Server) reviewRoutes() {
	s.route("POST /v1/ui/login", scopeAny, s.handleUILogin)
	for _, rt := range s.review.Routes() {
		s.registered = append(s.registered, registeredRoute{rt.Pattern, scopePage})
		s.mux.Handle(rt.Pattern, s.counted(rt.Pattern, rt.Handler))
	}
}

// handleUILogin mints a one-time login for the review page: the admin's
// (or, with "session", one session's), or a session token's own.
func (s *Server) handleUILogin(w http.ResponseWriter, r *http.Request) error {
	var req api.UILoginRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	if v := ui.ViewerFrom(r.Context()); v != nil && v.Login {
		return apiErr(api.CodeForbidden, "a review-page login cannot mint other logins; use the socket or a token")
	}
	p := callerOf(r.Context())
	session := req.Session
	if !p.Admin {
		if session != "" && session != p.Session {
			return apiErr(api.CodeForbidden, "this token belongs to session %s; it can make a review login for that session only", p.Session)
		}
		session = p.Session
	}
	if session != "" {
		if err := s.d.CheckSession(r.Context(), session); err != nil {
			return err
		}
	}
	// The page's port is settled before a code is made: a refusal mints
	// nothing.
	port, offered, err := s.reviewPort(r)
	if err != nil {
		return err
	}
	l, err := s.review.MintLogin(session)
	if err != nil {
		return err
	}
	out := api.UILoginResponse{Path: l.Path, Host: l.Host, ExpiresAt: l.Expires.UTC(), Session: session}
	switch {
	case !offered:
	case port == "":
		out.URL = "http://" + l.Host + out.Path
	default:
		out.URL = "http://" + net.JoinHostPort(l.Host, port) + out.Path
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// reviewPort is the port of the review page's address for a login minted
// by request r: the port r was sent to when it came over TCP or through
// `vfsd ui`'s proxy (the address its caller reaches the daemon at), else
// the daemon's TCP port. offered is false when r came over the socket and
// the daemon has no TCP listener (`vfsd ui` then serves the page). The
// daemon's TCP port is refused when another program holds it on a
// loopback address browsers try (ui.Server.PortError).
func (s *Server) reviewPort(r *http.Request) (port string, offered bool, err error) {
	socket, proxied := fromSocket(r), r.Header.Get(proxyHeader) != ""
	switch {
	case socket && !proxied:
		if s.tcpAddr == "" {
			return "", false, nil
		}
		_, port, _ = net.SplitHostPort(s.tcpAddr)
	default:
		_, port, _ = net.SplitHostPort(r.Host)
	}
	if err := s.review.PortError(); err != nil && !(socket && proxied) {
		return "", false, apiErr(api.CodeUnavailable, "the review page is not offered on the daemon's TCP port: %v; stop that program, or restart vfsd serve with another --listen port (or without --listen, and run vfsd ui)", err)
	}
	return port, true, nil
}
