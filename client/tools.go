package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/vfsd/vfsd/api"
)

// Receipt is a tool call's outcome: the receipt JSON exactly as the daemon
// sent it, and its status.
type Receipt struct {
	// Status is the receipt's status: "ok", or the failure's class.
	Status string
	// JSON is the receipt.
	JSON json.RawMessage
	// Text is the receipt's rendering for a model (CallToolText only).
	Text string
	// IsError reports a failed call, as the session's contract says (its
	// statuses need not be "ok" and the rest).
	IsError bool
	// Contract is the session's contract, as the daemon named it.
	Contract string
	// errKnown says the daemon reported IsError (a daemon older than
	// contracts does not).
	errKnown bool
}

// OK reports whether the call succeeded.
func (r *Receipt) OK() bool {
	if r.errKnown {
		return !r.IsError
	}
	return r.Status == "ok"
}

// CallTool runs a tool on a session (POST /v1/sessions/{id}/tools/{name}).
// params is the tool's JSON parameters (nil for none). A call the tool
// refuses is a Receipt whose status says so, not an error.
func (c *Client) CallTool(ctx context.Context, session, name string, params json.RawMessage) (*Receipt, error) {
	return c.callTool(ctx, session, name, params, false)
}

// CallToolText is CallTool that also returns the receipt's text rendering
// for a model.
func (c *Client) CallToolText(ctx context.Context, session, name string, params json.RawMessage) (*Receipt, error) {
	return c.callTool(ctx, session, name, params, true)
}

// CallToolAs is CallToolText that names the contract the caller expects
// the session to speak: a session with another contract refuses the call
// with invalid_input ("" expects none).
func (c *Client) CallToolAs(ctx context.Context, session, contractName, name string, params json.RawMessage) (*Receipt, error) {
	return c.callToolQ(ctx, session, name, params, true, contractName)
}

func (c *Client) callTool(ctx context.Context, session, name string, params json.RawMessage, text bool) (*Receipt, error) {
	return c.callToolQ(ctx, session, name, params, text, "")
}

func (c *Client) callToolQ(ctx context.Context, session, name string, params json.RawMessage, text bool, contractName string) (*Receipt, error) {
	q := url.Values{}
	if text {
		q.Set("text", "true")
	}
	if contractName != "" {
		q.Set("contract", contractName)
	}
	if params == nil {
		params = json.RawMessage("{}")
	}
	path := "/v1/sessions/" + esc(session) + "/tools/" + esc(name)
	resp, err := c.send(ctx, request{method: http.MethodPost, path: path, query: q, body: bytes.NewReader(params)})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("tool %s: read the receipt: %w", name, err)
	}
	r := &Receipt{Status: resp.Header.Get(api.ToolStatusHeader), JSON: b}
	if k := resp.Header.Get(api.ToolContractHeader); k != "" {
		// A daemon that names the contract says which calls failed; an
		// older one's statuses are vfsd's.
		r.Contract, r.errKnown = k, true
		r.IsError = resp.Header.Get(api.ToolErrorHeader) == "true"
	}
	if text {
		var tr api.ToolResult
		if err := json.Unmarshal(b, &tr); err != nil {
			return nil, fmt.Errorf("tool %s: decode the result: %w", name, err)
		}
		r.JSON, r.Text = tr.Receipt, tr.Text
	}
	if r.Status == "" {
		var head struct {
			Status string `json:"status"`
		}
		if err := json.Unmarshal(r.JSON, &head); err != nil {
			return nil, fmt.Errorf("tool %s: decode the receipt: %w", name, err)
		}
		r.Status = head.Status
	}
	return r, nil
}

// Tools renders the tools of a profile ("" for the session's) with its
// prompt section (GET /v1/sessions/{id}/tools).
func (c *Client) Tools(ctx context.Context, session, profile string) (*api.ToolList, error) {
	var q url.Values
	if profile != "" {
		q = url.Values{"profile": {profile}}
	}
	var out api.ToolList
	return &out, c.do(ctx, http.MethodGet, "/v1/sessions/"+esc(session)+"/tools", q, nil, &out)
}

// Calls lists a session's tool calls after call number since (0: from the
// first the log holds), oldest first, at most limit of them (0: the
// daemon's page size) (GET /v1/sessions/{id}/calls). The list's Next is
// the since of the next page, 0 at the end.
func (c *Client) Calls(ctx context.Context, session string, since uint64, limit int) (*api.CallList, error) {
	q := url.Values{}
	if since > 0 {
		q.Set("since", strconv.FormatUint(since, 10))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out api.CallList
	return &out, c.do(ctx, http.MethodGet, "/v1/sessions/"+esc(session)+"/calls", q, nil, &out)
}
