package daemon

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/contract"
	"github.com/vfsd/vfsd/mcpserver"
	"github.com/vfsd/vfsd/tools"
)

// mcpEndpoint is a session's MCP servers: one per profile a client has
// asked for, over the session's tools, built on first use and kept while
// the session is open (a profile's tool list never changes).
type mcpEndpoint struct {
	mu      sync.Mutex
	servers map[string]*mcp.Server
}

// MCPServer returns session id's MCP server of profile (the session's
// when ""), building it the first time: the tools of its contract, each
// call made through the daemon (counted and logged like the HTTP API's).
func (d *Daemon) MCPServer(ctx context.Context, id, profile string) (*mcp.Server, error) {
	e, err := d.lookup(id)
	if err != nil {
		return nil, err
	}
	profile = e.profile(profile)
	if _, err := tools.LookupProfile(profile); err != nil {
		return nil, apiErr(api.CodeInvalidInput, "%v", err)
	}
	m := &e.mcp
	m.mu.Lock()
	defer m.mu.Unlock()
	if srv := m.servers[profile]; srv != nil {
		return srv, nil
	}
	srv, err := mcpserver.NewServer(&sessionBackend{d: d, e: e}, mcpserver.Options{
		Profile: profile, Version: d.cfg.Version, Logger: d.log})
	if err != nil {
		return nil, apiErr(api.CodeInternal, "session %s: the MCP server of profile %s: %v", e.id, profile, err)
	}
	if m.servers == nil {
		m.servers = map[string]*mcp.Server{}
	}
	m.servers[profile] = srv
	return srv, nil
}

// sessionBackend is the MCP backend of a session: its contract's tools,
// each call made through callTool (counted and logged like the HTTP
// API's).
type sessionBackend struct {
	d *Daemon
	e *entry
}

// Definitions lists the profile's tools the session's policy allows
// (vfsd's own contract).
func (b *sessionBackend) Definitions(profile string) ([]tools.Definition, error) {
	return mcpserver.AllowedDefinitions(profile, b.e.pol)
}

// Call runs a tool of vfsd's own contract: the receipt is the result's
// body.
func (b *sessionBackend) Call(ctx context.Context, name string, params json.RawMessage) (*tools.Response, error) {
	res := b.d.callTool(ctx, b.e, name, params, string(TransportMCP))
	return &tools.Response{Tool: name, Receipt: res.Body, Text: res.Text}, nil
}

// ContractName is the session's contract.
func (b *sessionBackend) ContractName() string { return b.e.k.Name() }

// CallContract runs a tool of the session's contract.
func (b *sessionBackend) CallContract(ctx context.Context, name string, params json.RawMessage) (contract.Result, error) {
	return b.d.callTool(ctx, b.e, name, params, string(TransportMCP)), nil
}

// ReadBlob reads part of a blob the session may read, so that its MCP
// server offers blobs as resources (mcpserver.BlobReader): through the
// session's toolset, whose blob store holds the session to its grants.
func (b *sessionBackend) ReadBlob(ctx context.Context, ref string, offset, length int64) ([]byte, int64, error) {
	return mcpserver.ToolsetBackend(b.e.ts, b.e.id).(mcpserver.BlobReader).ReadBlob(ctx, ref, offset, length)
}
