// Package mcpserver serves one vfsd session's agent tools over the Model
// Context Protocol, with the official Go SDK
// (github.com/modelcontextprotocol/go-sdk).
//
// New builds an *mcp.Server from a Backend — the tools of one session,
// in-process (ToolsetBackend) or behind the daemon's API — and a profile:
// every tool of the profile becomes an MCP tool whose inputSchema is the
// tool's parameter schema. A call returns the tool's receipt as
// structuredContent, the receipt's text rendering (file text, listing, diff
// or summary) as its one text content block, and isError when the
// receipt's status is not ok; a failed call still carries its receipt.
//
// ServeStdio serves a server on standard input and output (the
// `vfsd mcp --session ID` verb); HTTPHandler serves servers over the
// streamable HTTP transport (a per-session endpoint of the daemon).
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vfsd/vfsd/contract"
	"github.com/vfsd/vfsd/contract/vfsdcontract"
	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/vfs/policy"
)

// DefaultProfile is the profile New uses when Options.Profile is empty.
const DefaultProfile = "anthropic"

// DefaultName is the server name New reports when Options.Name is empty.
const DefaultName = "vfsd"

// Backend is the tools of one session, as the MCP server calls them.
// Implementations must be safe for concurrent use: MCP clients may have
// several calls in flight.
type Backend interface {
	// Definitions returns the tools of the named profile (see
	// tools.LookupProfile), in the order the profile presents them.
	Definitions(profile string) ([]tools.Definition, error)
	// Call runs the tool name with JSON params. A call the tool refuses or
	// fails is a receipt in the Response, not an error; an error means the
	// call could not be made at all (for a remote backend, the daemon could
	// not be reached). Response.Receipt may be any value whose JSON is the
	// receipt object (a remote backend may pass a json.RawMessage), and
	// Response.Text is the receipt's text rendering.
	Call(ctx context.Context, name string, params json.RawMessage) (*tools.Response, error)
}

// ToolsetBackend returns the in-process Backend of ts, calling its tools on
// the session sessionID (which must be the Toolset's own session, or every
// call fails with session_mismatch). Its Definitions leave out the tools
// the Toolset's policy does not allow.
func ToolsetBackend(ts *tools.Toolset, sessionID string) Backend {
	return &toolsetBackend{ts: ts, session: sessionID}
}

type toolsetBackend struct {
	ts      *tools.Toolset
	session string
}

func (b *toolsetBackend) Definitions(profile string) ([]tools.Definition, error) {
	if b.ts == nil {
		return nil, errors.New("toolset backend: no toolset")
	}
	defs, err := AllowedDefinitions(profile, b.ts.Policy())
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", b.session, err)
	}
	return defs, nil
}

// AllowedDefinitions returns the tools of profile that pol allows, in the
// profile's order: what a Backend's Definitions should return for a
// session under pol. The consolidated tool stays whatever pol says, since
// each of its actions is checked when called.
func AllowedDefinitions(profile string, pol *policy.Policy) ([]tools.Definition, error) {
	p, err := tools.LookupProfile(profile)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(p.DefinitionsFor(pol), func(d tools.Definition) bool {
		return d.Name != tools.ConsolidatedTool && !pol.Allows(d.Name)
	}), nil
}

func (b *toolsetBackend) Call(ctx context.Context, name string, params json.RawMessage) (*tools.Response, error) {
	if b.ts == nil {
		return nil, errors.New("toolset backend: no toolset")
	}
	return b.ts.Call(ctx, b.session, name, params), nil
}

// Options configure the server New and NewServer build.
type Options struct {
	// Profile names the tool profile: openai, anthropic, gemini, minimal or
	// consolidated (one "filesystem" tool with an action parameter); empty
	// means DefaultProfile.
	Profile string
	// Name and Version identify the server to clients; empty means
	// DefaultName, and the main module's version (or "devel").
	Name    string
	Version string
	// Instructions are sent to clients at initialization, for their system
	// prompt; empty means the profile's prompt section (tools.Render).
	Instructions string
	// NoOutputSchema leaves outputSchema out of the tool list, for clients
	// that mishandle it; calls still return structuredContent.
	NoOutputSchema bool
	// Logger, if set, receives the SDK's log of server activity, and the
	// backend failures the server turns into error receipts.
	Logger *slog.Logger
}

// New builds the MCP server of a backend, as NewServer does, and panics if
// NewServer fails: a nil backend, an unknown profile, or Definitions
// failing. Callers that cannot rule those out (a backend that reaches the
// daemon over the network) use NewServer.
func New(backend Backend, opts Options) *mcp.Server {
	s, err := NewServer(backend, opts)
	if err != nil {
		panic(err)
	}
	return s
}

// NewServer builds the MCP server of a backend: one MCP tool per tool of
// the profile, with the tool's parameter schema as inputSchema and, unless
// opts.NoOutputSchema, its receipt schema as outputSchema (see
// OutputSchema). The server may be connected to any number of clients and
// transports at once.
func NewServer(backend Backend, opts Options) (*mcp.Server, error) {
	if backend == nil {
		return nil, errors.New("mcpserver: nil backend")
	}
	if opts.Profile == "" {
		opts.Profile = DefaultProfile
	}
	if opts.Name == "" {
		opts.Name = DefaultName
	}
	if opts.Version == "" {
		opts.Version = moduleVersion()
	}
	if opts.Instructions == "" {
		// A profile the backend knows and this build does not has no prompt.
		if r, err := tools.Render(opts.Profile); err == nil {
			opts.Instructions = r.Prompt
		}
	}
	if cb, ok := backend.(ContractBackend); ok && cb.ContractName() != "" && cb.ContractName() != contract.Default {
		return newContractServer(cb, opts)
	}
	defs, err := backend.Definitions(opts.Profile)
	if err != nil {
		return nil, fmt.Errorf("mcpserver: tools of profile %s: %w", opts.Profile, err)
	}
	var mtools []*mcp.Tool
	seen := map[string]bool{}
	for _, d := range defs {
		if seen[d.Name] {
			return nil, fmt.Errorf("mcpserver: profile %s lists tool %s twice", opts.Profile, d.Name)
		}
		seen[d.Name] = true
		t, err := mcpTool(d, !opts.NoOutputSchema)
		if err != nil {
			return nil, fmt.Errorf("mcpserver: profile %s: %w", opts.Profile, err)
		}
		mtools = append(mtools, t)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: opts.Name, Version: opts.Version}, &mcp.ServerOptions{
		Instructions: opts.Instructions,
		Logger:       opts.Logger,
		// Tools only: no logging capability, and the list never changes.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
	})
	rank := map[string]int{}
	for i, t := range mtools {
		rank[t.Name] = i
		srv.AddTool(t, (&binding{backend: backend, name: t.Name, logger: opts.Logger}).handle)
	}
	srv.AddReceivingMiddleware(profileOrder(rank), carrierCancel)
	addResourcesAndPrompts(srv, backend, opts)
	return srv, nil
}

// profileOrder is middleware that lists tools in the profile's order, most
// preferred first, where the SDK would list them by name.
func profileOrder(rank map[string]int) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if lr, ok := res.(*mcp.ListToolsResult); ok && err == nil && method == "tools/list" {
				// The SDK builds a new slice for every list, one page of
				// up to 1000 tools: sorting it in place is safe.
				slices.SortStableFunc(lr.Tools, func(a, b *mcp.Tool) int { return rank[a.Name] - rank[b.Name] })
			}
			return res, err
		}
	}
}

// moduleVersion is the main module's version, or "devel".
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// mcpTool turns a tool definition into an MCP tool.
func mcpTool(d tools.Definition, withOutput bool) (*mcp.Tool, error) {
	if d.Name == "" {
		return nil, errors.New("a tool without a name")
	}
	in, err := inputSchema(d.Params)
	if err != nil {
		return nil, fmt.Errorf("tool %s: %w", d.Name, err)
	}
	t := &mcp.Tool{Name: d.Name, Title: vfsdcontract.Describe(d.Name).Title, Description: d.Description, InputSchema: in, Annotations: annotations(d.Name)}
	if withOutput {
		t.OutputSchema = OutputSchema(d.Name)
	}
	return t, nil
}

// inputSchema returns a copy of a parameter schema with the plain type
// "object" MCP requires at its root.
func inputSchema(params *jsonschema.Schema) (*jsonschema.Schema, error) {
	if params == nil {
		return nil, errors.New("no parameter schema")
	}
	s := params.CloneSchemas()
	if err := objectRoot(s); err != nil {
		return nil, fmt.Errorf("parameter schema: %w", err)
	}
	return s, nil
}

// objectRoot makes s's type the single type "object": a pointer type's
// ["null", "object"] becomes "object", since MCP clients check the root's
// type literally.
func objectRoot(s *jsonschema.Schema) error {
	if s.Type == "" && len(s.Types) == 2 && slices.Contains(s.Types, "object") && slices.Contains(s.Types, "null") {
		s.Type, s.Types = "object", nil
	}
	if s.Type != "object" || len(s.Types) > 0 {
		return fmt.Errorf(`type must be "object", not %q%q`, s.Type, s.Types)
	}
	return nil
}

// annotations are a vfsd tool's hints (vfsdcontract.Describe), and a
// closed world: the tools touch nothing outside the workspace.
func annotations(name string) *mcp.ToolAnnotations {
	m := vfsdcontract.Describe(name)
	return mcpAnnotations(m.Title, m.Annotations)
}

// mcpAnnotations renders a contract's hints as MCP's, in a closed world.
func mcpAnnotations(title string, a contract.Annotations) *mcp.ToolAnnotations {
	closed := false
	destructive := a.Destructive
	return &mcp.ToolAnnotations{Title: title, ReadOnlyHint: a.ReadOnly, DestructiveHint: &destructive,
		IdempotentHint: a.Idempotent, OpenWorldHint: &closed}
}

// binding is one MCP tool bound to the backend's tool of the same name.
type binding struct {
	backend Backend
	name    string
	logger  *slog.Logger
}

// handle serves tools/call. The result's structuredContent is always a
// receipt: the backend's, or an error receipt when the backend could not
// make the call; only a cancelled request is a protocol error.
func (b *binding) handle(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args json.RawMessage
	if req != nil && req.Params != nil {
		args = req.Params.Arguments
	}
	resp, err := b.call(ctx, args)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("mcpserver: call %s: %w", b.name, err)
		}
		if b.logger != nil {
			b.logger.Error("mcpserver: backend call failed", "tool", b.name, "error", err)
		}
		return errorResult(b.name, fmt.Sprintf("%s failed before returning a receipt: %v; check the workspace before trying again", b.name, err)), nil
	}
	receipt := resp.JSON()
	var head struct {
		Status tools.Status `json:"status"`
	}
	if err := json.Unmarshal(receipt, &head); err != nil || head.Status == "" {
		if b.logger != nil {
			b.logger.Error("mcpserver: backend returned a receipt without a status", "tool", b.name, "receipt", string(receipt))
		}
		return errorResult(b.name, fmt.Sprintf("%s returned no receipt status; check the workspace before trying again", b.name)), nil
	}
	return withStatus(result(resp.Text, receipt, head.Status != tools.StatusOK), string(head.Status)), nil
}

// StatusMeta is the _meta key of a tools/call result that carries the
// result's status word or error code (contract.Result.Status), which MCP
// has no field for.
const StatusMeta = "vfsd/status"

// withStatus puts status in r's _meta.
func withStatus(r *mcp.CallToolResult, status string) *mcp.CallToolResult {
	r.Meta = mcp.Meta{StatusMeta: status}
	return r
}

// call calls the backend, turning a panic or a nil response into an error.
func (b *binding) call(ctx context.Context, args json.RawMessage) (resp *tools.Response, err error) {
	defer func() {
		if r := recover(); r != nil {
			resp, err = nil, fmt.Errorf("backend panicked: %v", r)
		}
	}()
	resp, err = b.backend.Call(ctx, b.name, args)
	if err == nil && resp == nil {
		err = errors.New("backend returned no response")
	}
	return resp, err
}

// result is a tools/call result: the text rendering, and the receipt JSON
// as structured content.
func result(text string, receipt []byte, isError bool) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: text}},
		StructuredContent: json.RawMessage(receipt),
		IsError:           isError,
	}
}

// errorResult is the result of a call the backend could not make: an
// error receipt (status and error_code "error").
func errorResult(tool, msg string) *mcp.CallToolResult {
	r := &tools.Response{Tool: tool, Text: msg, Receipt: &tools.FailureReceipt{
		Receipt: tools.Receipt{Status: tools.StatusError, ErrorCode: tools.CodeInternal, SummaryText: msg}}}
	return withStatus(result(r.Text, r.JSON(), true), string(tools.StatusError))
}
