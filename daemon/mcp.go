package daemon

import (
	"net/http"
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
	srv, err := mcpserver.NewServer(mcpserver.ToolsetBackend(e.ts, e.id), mcpserver.Options{
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
