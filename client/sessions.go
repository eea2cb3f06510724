package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/vfsd/vfsd/api"
)

// Health checks that the daemon answers (GET /healthz).
func (c *Client) Health(ctx context.Context) (*api.Health, error) {
	var out api.Health
	return &out, c.do(ctx, http.MethodGet, "/healthz", nil, nil, &out)
}

// CreateSession creates a session (POST /v1/sessions).
func (c *Client) CreateSession(ctx context.Context, req api.CreateSessionRequest) (*api.CreateSessionResponse, error) {
	var out api.CreateSessionResponse
	return &out, c.do(ctx, http.MethodPost, "/v1/sessions", nil, req, &out)
}

// Sessions lists the open sessions (GET /v1/sessions).
func (c *Client) Sessions(ctx context.Context) ([]api.Session, error) {
	var out api.SessionList
	return out.Sessions, c.do(ctx, http.MethodGet, "/v1/sessions", nil, nil, &out)
}

// Session describes one session (GET /v1/sessions/{id}).
func (c *Client) Session(ctx context.Context, id string) (*api.Session, error) {
	var out api.Session
	return &out, c.do(ctx, http.MethodGet, "/v1/sessions/"+esc(id), nil, nil, &out)
}

// SetTTL restarts a session's lifetime (PATCH /v1/sessions/{id}); "never"
// removes its expiry.
func (c *Client) SetTTL(ctx context.Context, id, ttl string) (*api.Session, error) {
	var out api.Session
	return &out, c.do(ctx, http.MethodPatch, "/v1/sessions/"+esc(id), nil, api.UpdateSessionRequest{TTL: ttl}, &out)
}

// ResetSession returns a session to its start, importing its host folders
// again if it was staged from them (POST /v1/sessions/{id}/reset).
func (c *Client) ResetSession(ctx context.Context, id string) (*api.ResetResponse, error) {
	var out api.ResetResponse
	return &out, c.do(ctx, http.MethodPost, "/v1/sessions/"+esc(id)+"/reset", nil, nil, &out)
}

// CloseSession closes a session and removes its state; the snapshots
// taken of it stay, those made for it (its import) go unless another
// session needs them (DELETE /v1/sessions/{id}).
func (c *Client) CloseSession(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/v1/sessions/"+esc(id), nil, nil, nil)
}

// CloseSessionPurge is CloseSession that also deletes the snapshots taken
// of the session that no other session needs (DELETE
// /v1/sessions/{id}?purge=true).
func (c *Client) CloseSessionPurge(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/v1/sessions/"+esc(id), url.Values{"purge": {"true"}}, nil, nil)
}

// CloseSessionWith is CloseSession with an explicit ?purge=: true deletes
// the snapshots taken of the session that no other session needs, false
// keeps them even where the session's contract purges them by default
// (weakincentives).
func (c *Client) CloseSessionWith(ctx context.Context, id string, purge bool) error {
	return c.do(ctx, http.MethodDelete, "/v1/sessions/"+esc(id), url.Values{"purge": {strconv.FormatBool(purge)}}, nil, nil)
}

// ContractState returns the state the session's contract offers (GET
// /v1/sessions/{id}/contract/state), as JSON: weakincentives' snapshot of
// the session (VirtualFileSystem).
func (c *Client) ContractState(ctx context.Context, id string) (json.RawMessage, error) {
	var out json.RawMessage
	if err := c.do(ctx, http.MethodGet, "/v1/sessions/"+esc(id)+"/contract/state", nil, nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// ForkSession creates a session from a live session's current state (POST
// /v1/sessions/{id}/fork); req must not set Mounts, Base or Fork.
func (c *Client) ForkSession(ctx context.Context, id string, req api.CreateSessionRequest) (*api.CreateSessionResponse, error) {
	var out api.CreateSessionResponse
	return &out, c.do(ctx, http.MethodPost, "/v1/sessions/"+esc(id)+"/fork", nil, req, &out)
}

// ForkSnapshot creates a session from a snapshot (POST
// /v1/snapshots/{snap}/fork); req must not set Mounts, Base or Fork.
func (c *Client) ForkSnapshot(ctx context.Context, snap string, req api.CreateSessionRequest) (*api.CreateSessionResponse, error) {
	var out api.CreateSessionResponse
	return &out, c.do(ctx, http.MethodPost, "/v1/snapshots/"+esc(snap)+"/fork", nil, req, &out)
}

// Apply writes a session's changes back to its host folders (POST
// /v1/sessions/{id}/apply).
func (c *Client) Apply(ctx context.Context, id string, dryRun bool) (*api.ApplyReport, error) {
	return c.ApplyWith(ctx, id, api.ApplyRequest{DryRun: dryRun})
}

// ApplyWith is Apply with every option of the request (KeepSetID).
func (c *Client) ApplyWith(ctx context.Context, id string, req api.ApplyRequest) (*api.ApplyReport, error) {
	var out api.ApplyReport
	return &out, c.do(ctx, http.MethodPost, "/v1/sessions/"+esc(id)+"/apply", nil, req, &out)
}

// Mount mounts a session at a host directory through FUSE (POST
// /v1/sessions/{id}/mount).
func (c *Client) Mount(ctx context.Context, id string, req api.MountRequest) (*api.FuseMount, error) {
	var out api.FuseMount
	return &out, c.do(ctx, http.MethodPost, "/v1/sessions/"+esc(id)+"/mount", nil, req, &out)
}

// Unmount unmounts a session's FUSE mount at dir, or all of them when dir
// is "" (DELETE /v1/sessions/{id}/mount).
func (c *Client) Unmount(ctx context.Context, id, dir string) error {
	q := map[string][]string{}
	if dir != "" {
		q["dir"] = []string{dir}
	}
	return c.do(ctx, http.MethodDelete, "/v1/sessions/"+esc(id)+"/mount", q, nil, nil)
}

// Metrics returns the daemon's metrics in the Prometheus text format (GET
// /metrics).
func (c *Client) Metrics(ctx context.Context) (string, error) {
	resp, err := c.send(ctx, request{method: http.MethodGet, path: "/metrics"})
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	return readString(resp)
}
