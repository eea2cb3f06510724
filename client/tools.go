package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

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
}

// OK reports whether the call succeeded.
func (r *Receipt) OK() bool { return r.Status == "ok" }

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

func (c *Client) callTool(ctx context.Context, session, name string, params json.RawMessage, text bool) (*Receipt, error) {
	var q url.Values
	if text {
		q = url.Values{"text": {"true"}}
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
