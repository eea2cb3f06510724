package daemon

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/mcpserver"
	"github.com/vfsd/vfsd/tools"
)

// mcpEndpoint is a session's MCP endpoint: a streamable-HTTP handler per
// profile a client has asked for, each over an MCP server of the session's
// tools, built on first use and kept while the session is open (a
// profile's tool list never changes).
type mcpEndpoint struct {
	mu       sync.Mutex
	handlers map[string]http.Handler
}

// handleMCP serves a session's MCP endpoint (streamable HTTP, stateless;
// see mcpserver.HTTPHandler): the tools of the session's profile, or of
// ?profile=NAME.
func (d *Daemon) handleMCP(w http.ResponseWriter, r *http.Request) error {
	if err := d.checkOrigin(r); err != nil {
		return err
	}
	e, err := d.lookup(r.PathValue("id"))
	if err != nil {
		return err
	}
	h, err := d.mcpHandler(e, e.profile(r))
	if err != nil {
		return err
	}
	h.ServeHTTP(w, r)
	return nil
}

// mcpHandler returns session e's MCP handler of profile, building it the
// first time.
func (d *Daemon) mcpHandler(e *entry, profile string) (http.Handler, error) {
	if _, err := tools.LookupProfile(profile); err != nil {
		return nil, apiErr(api.CodeInvalidInput, "%v", err)
	}
	m := &e.mcp
	m.mu.Lock()
	defer m.mu.Unlock()
	if h := m.handlers[profile]; h != nil {
		return h, nil
	}
	srv, err := mcpserver.NewServer(settlingBackend{mcpserver.ToolsetBackend(e.ts, e.id), d, e}, mcpserver.Options{
		Profile: profile, Version: d.cfg.Version, Logger: d.log})
	if err != nil {
		return nil, apiErr(api.CodeInternal, "session %s: the MCP server of profile %s: %v", e.id, profile, err)
	}
	h := mcpserver.HTTPHandler(func(*http.Request) *mcp.Server { return srv })
	if m.handlers == nil {
		m.handlers = map[string]http.Handler{}
	}
	m.handlers[profile] = h
	return h, nil
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
func (d *Daemon) checkOrigin(r *http.Request) error {
	origins := r.Header.Values("Origin")
	if len(origins) == 0 {
		return nil
	}
	o := origins[0]
	if len(origins) == 1 && d.originAllowed(o, r.Host) {
		return nil
	}
	return apiErr(api.CodeForbidden, "the MCP endpoint does not serve pages of origin %q (a browser page of another site is refused, against DNS rebinding); if this is your client, start vfsd serve with --allow-origin %s", o, o)
}

// originAllowed reports whether a request from origin o to host may be
// served.
func (d *Daemon) originAllowed(o, host string) bool {
	norm, err := normalizeOrigin(o)
	if err != nil {
		return false
	}
	for _, a := range d.cfg.AllowOrigins {
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

// normalizeOrigin checks that o is an origin, scheme://host[:port] with
// scheme http or https, and returns it in lower case.
func normalizeOrigin(o string) (string, error) {
	u, err := url.Parse(strings.ToLower(strings.TrimSpace(o)))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%q is not an origin: use scheme://host[:port], with scheme http or https", o)
	}
	return u.Scheme + "://" + u.Host, nil
}
