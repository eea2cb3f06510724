package httpapi

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/internal/weborigin"
	"github.com/vfsd/vfsd/mcpserver"
)

type mcpServerKey struct{}

// newMCPHandler returns the one streamable-HTTP handler of every session's
// MCP endpoint (stateless): the request names its server in its context
// (handleMCP puts it there).
func newMCPHandler() http.Handler {
	return mcpserver.HTTPHandler(func(r *http.Request) *mcp.Server {
		srv, _ := r.Context().Value(mcpServerKey{}).(*mcp.Server)
		return srv
	})
}

// handleMCP serves a session's MCP endpoint (streamable HTTP, stateless;
// see mcpserver.HTTPHandler): the tools of the session's profile, or of
// ?profile=NAME.
func (s *Server) handleMCP(w http.ResponseWriter, r *http.Request) error {
	if err := s.checkOrigin(r); err != nil {
		return err
	}
	srv, err := s.d.MCPServer(r.Context(), r.PathValue("id"), r.URL.Query().Get("profile"))
	if err != nil {
		return err
	}
	s.mcp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), mcpServerKey{}, srv)))
	return nil
}

// checkOrigin refuses a browser request from another site: the MCP
// transport requires servers to check Origin against DNS rebinding, where
// a page of evil.example, its name rebound to the daemon's address, calls
// the daemon from the user's browser. A request without Origin is no
// browser's (or a same-origin GET) and passes. An Origin passes when it is
// one of Config.AllowOrigins; a loopback one (localhost, 127.0.0.0/8,
// [::1]); or the request's own host when that is an IP literal. A DNS
// name is never trusted for being the request's own Host: after a rebind
// the attacker's name is exactly that.
func (s *Server) checkOrigin(r *http.Request) error {
	origins := r.Header.Values("Origin")
	if len(origins) == 0 {
		return nil
	}
	o := origins[0]
	if len(origins) == 1 && s.originAllowed(o, r.Host) {
		return nil
	}
	return apiErr(api.CodeForbidden, "the MCP endpoint does not serve pages of origin %q (a browser page of another site is refused, against DNS rebinding); if this is your client, start vfsd serve with --allow-origin %s", o, o)
}

// originAllowed reports whether a request from origin o to host may be
// served.
func (s *Server) originAllowed(o, host string) bool {
	norm, err := weborigin.Normalize(o)
	if err != nil {
		return false
	}
	for _, a := range s.cfg.AllowOrigins {
		if a == norm {
			return true
		}
	}
	u, _ := url.Parse(norm)
	name := u.Hostname()
	if name == "localhost" {
		return true
	}
	ip := net.ParseIP(name)
	if ip == nil {
		return false
	}
	return ip.IsLoopback() || strings.EqualFold(u.Host, host)
}
