package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vfsd/vfsd/contract"
)

// ContractBackend is a Backend whose session speaks a contract (package
// contract). When its contract is another than vfsd's own, NewServer lists
// the contract's tools — names, schemas, titles and annotations as the
// contract gives them; the profile does not apply — with the contract's
// prompt as instructions, and routes every call to CallContract. A call
// returns the result's Text as its text content, its Body as structured
// content (when it is a JSON object), IsError as isError, and Status in
// _meta (StatusMeta).
type ContractBackend interface {
	Backend
	// ContractName names the session's contract; "" or contract.Default is
	// vfsd's own, served through Definitions and Call as always.
	ContractName() string
	// CallContract runs a tool of the contract. An error means the call
	// could not be made at all.
	CallContract(ctx context.Context, name string, params json.RawMessage) (contract.Result, error)
}

// newContractServer builds the MCP server of a contract's tools.
func newContractServer(cb ContractBackend, opts Options) (*mcp.Server, error) {
	k, err := contract.Lookup(cb.ContractName())
	if err != nil {
		return nil, fmt.Errorf("mcpserver: %w", err)
	}
	if opts.Instructions == "" {
		opts.Instructions = k.Prompt()
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: opts.Name, Version: opts.Version}, &mcp.ServerOptions{
		Instructions: opts.Instructions,
		Logger:       opts.Logger,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
	})
	rank := map[string]int{}
	for i, t := range k.Tools() {
		if _, dup := rank[t.Name]; dup {
			return nil, fmt.Errorf("mcpserver: contract %s lists tool %s twice", k.Name(), t.Name)
		}
		var head struct {
			Type any `json:"type"`
		}
		if err := json.Unmarshal(t.InputSchema, &head); err != nil || head.Type != "object" {
			return nil, fmt.Errorf(`mcpserver: contract %s: tool %s: the input schema must be an object schema ("type": "object")`, k.Name(), t.Name)
		}
		rank[t.Name] = i
		mt := &mcp.Tool{Name: t.Name, Title: t.Title, Description: t.Description,
			InputSchema: t.InputSchema, Annotations: mcpAnnotations(t.Title, t.Annotations)}
		srv.AddTool(mt, (&contractBinding{backend: cb, name: t.Name, logger: opts.Logger}).handle)
	}
	srv.AddReceivingMiddleware(profileOrder(rank), carrierCancel)
	return srv, nil
}

// contractBinding is one MCP tool bound to a contract's tool.
type contractBinding struct {
	backend ContractBackend
	name    string
	logger  *slog.Logger
}

func (b *contractBinding) handle(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args json.RawMessage
	if req != nil && req.Params != nil {
		args = req.Params.Arguments
	}
	res, err := b.call(ctx, args)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("mcpserver: call %s: %w", b.name, err)
		}
		if b.logger != nil {
			b.logger.Error("mcpserver: backend call failed", "tool", b.name, "error", err)
		}
		return errorResult(b.name, fmt.Sprintf("%s failed before returning a result: %v; check the workspace before trying again", b.name, err)), nil
	}
	r := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Text}}, IsError: res.IsError}
	if body := bytes.TrimSpace(res.Body); len(body) > 0 && body[0] == '{' {
		r.StructuredContent = json.RawMessage(body)
	}
	return withStatus(r, res.Status), nil
}

// call calls the backend, turning a panic into an error.
func (b *contractBinding) call(ctx context.Context, args json.RawMessage) (res contract.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("backend panicked: %v", r)
		}
	}()
	res, err = b.backend.CallContract(ctx, b.name, args)
	if err == nil && len(res.Body) == 0 {
		err = errors.New("backend returned no result")
	}
	return res, err
}
