package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
	"github.com/vfsd/vfsd/contract"
	"github.com/vfsd/vfsd/mcpserver"
	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/policy"
)

func newMCPCmd(g *globalFlags) *cobra.Command {
	var session, profile, contractName string
	var noOutputSchema bool
	cmd := &cobra.Command{
		Use:   "mcp --session ID [--profile NAME]",
		Short: "Serve a session's tools over MCP on stdin/stdout, for an agent client",
		Example: `  vfsd mcp --session review
  claude mcp add vfsd -- vfsd mcp --session review    # Claude Code
  vfsd mcp --session review --profile openai --no-output-schema`,
		Long: `Serves the tools of a daemon session over the Model Context Protocol on
standard input and output, for agent clients that start MCP servers as
commands. Every call goes to the daemon (see --socket and --addr), so the agent,
the HTTP API, other MCP clients and FUSE mounts of the session share one
workspace. Logs go to standard error.

The tools are those of the session's contract (vfsd's own unless it was
created with --contract): for vfsd's, those of the session's profile
(--profile overrides: openai, anthropic, gemini, minimal or consolidated), less
those its policy forbids; for another contract, the contract's tools exactly as
its document names them. --contract C states the contract the agent is
configured for: serving a session with another contract is refused at start.
The daemon also serves the same tools over streamable HTTP at
/v1/sessions/ID/mcp. See the README for client configurations.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if session == "" {
				return usageError{fmt.Errorf("--session is required: create one with 'vfsd session create' and pass its ID")}
			}
			c, err := g.client()
			if err != nil {
				return usageError{err}
			}
			defer c.Close()
			ctx := cmd.Context()
			backend, sessionProfile, err := newDaemonBackend(ctx, c, session)
			if err != nil {
				return err
			}
			if contractName != "" && contractName != backend.contract {
				if _, err := contract.Lookup(contractName); err != nil {
					return usageError{err}
				}
				return usageError{fmt.Errorf("session %s speaks the %s contract, not %s; serve a session created with 'vfsd session create --contract %s'", session, backend.contract, contractName, contractName)}
			}
			if profile == "" {
				profile = sessionProfile
			}
			logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
			srv, err := mcpserver.NewServer(backend, mcpserver.Options{
				Profile: profile, Version: version(), NoOutputSchema: noOutputSchema, Logger: logger})
			if err != nil {
				return usageError{err}
			}
			return mcpserver.ServeStdio(ctx, srv)
		},
	}
	f := cmd.Flags()
	f.StringVar(&session, "session", "", "the session whose tools to serve (required)")
	f.StringVar(&profile, "profile", "", "the tool profile (default: the session's)")
	f.StringVar(&contractName, "contract", "", "the contract the agent expects: "+strings.Join(contract.Names(), ", ")+"; it must be the session's")
	f.BoolVar(&noOutputSchema, "no-output-schema", false, "leave outputSchema out of the tool list, for clients that mishandle it")
	return cmd
}

// daemonBackend is an mcpserver.Backend that calls a session's tools
// through the daemon.
type daemonBackend struct {
	c        *client.Client
	session  string
	policy   *policy.Policy
	contract string
}

// newDaemonBackend checks that the session exists and returns its backend
// and profile.
func newDaemonBackend(ctx context.Context, c *client.Client, session string) (*daemonBackend, string, error) {
	s, err := c.Session(ctx, session)
	if err != nil {
		return nil, "", fmt.Errorf("session %s: %w", session, err)
	}
	pol, err := sessionPolicyOf(s)
	if err != nil {
		return nil, "", fmt.Errorf("session %s: %w; is this vfsd older than the daemon?", session, err)
	}
	k := s.Contract
	if k == "" { // a daemon older than contracts
		k = contract.Default
	}
	return &daemonBackend{c: c, session: session, policy: pol, contract: k}, s.Profile, nil
}

// Definitions lists the profile's tools the session's policy allows.
func (b *daemonBackend) Definitions(profile string) ([]tools.Definition, error) {
	return mcpserver.AllowedDefinitions(profile, b.policy)
}

// Call runs a tool on the daemon; the receipt travels as the daemon's JSON.
func (b *daemonBackend) Call(ctx context.Context, name string, params json.RawMessage) (*tools.Response, error) {
	r, err := b.c.CallToolText(ctx, b.session, name, params)
	if err != nil {
		return nil, err
	}
	return &tools.Response{Tool: name, Receipt: r.JSON, Text: r.Text}, nil
}

// ContractName is the session's contract.
func (b *daemonBackend) ContractName() string { return b.contract }

// CallContract runs a tool of the session's contract on the daemon.
func (b *daemonBackend) CallContract(ctx context.Context, name string, params json.RawMessage) (contract.Result, error) {
	r, err := b.c.CallToolAs(ctx, b.session, b.contract, name, params)
	if err != nil {
		return contract.Result{}, err
	}
	return contract.Result{Body: r.JSON, Text: r.Text, Status: r.Status, IsError: !r.OK()}, nil
}

// ReadBlob reads part of a blob through the daemon (GET /v1/blobs/REF), so
// that `vfsd mcp` offers the session's blobs as MCP resources: with a
// session token the daemon answers only for the blobs that session may
// read; the admin token reads any blob, as it may over the HTTP API.
func (b *daemonBackend) ReadBlob(ctx context.Context, ref string, offset, length int64) ([]byte, int64, error) {
	rc, size, err := b.c.GetBlob(ctx, ref)
	if client.Code(err) == api.CodeNotFound {
		return nil, 0, fmt.Errorf("%v: %w", err, vfs.ErrNotFound)
	}
	if err != nil {
		return nil, 0, err
	}
	defer rc.Close()
	if offset >= size {
		return []byte{}, size, nil
	}
	if _, err := io.CopyN(io.Discard, rc, offset); err != nil {
		return nil, 0, fmt.Errorf("blob %s: skip to %d: %w", ref, offset, err)
	}
	buf := make([]byte, min(length, size-offset))
	if _, err := io.ReadFull(rc, buf); err != nil {
		return nil, 0, fmt.Errorf("blob %s: read at %d: %w", ref, offset, err)
	}
	return buf, size, nil
}
