package client

import (
	"context"
	"net/http"

	"github.com/vfsd/vfsd/api"
)

// MoveSession hands a session to another daemon of the fleet (POST
// /v1/sessions/{id}/move); the receiver takes it up on its first call.
func (c *Client) MoveSession(ctx context.Context, id, to string) (*api.MoveReport, error) {
	var out api.MoveReport
	return &out, c.do(ctx, http.MethodPost, "/v1/sessions/"+esc(id)+"/move", nil, api.MoveRequest{To: to}, &out)
}

// TakeSession makes the daemon the owner of a session whose owner's lease
// has ended (POST /v1/sessions/{id}/take).
func (c *Client) TakeSession(ctx context.Context, id string) (*api.Session, error) {
	var out api.Session
	return &out, c.do(ctx, http.MethodPost, "/v1/sessions/"+esc(id)+"/take", nil, nil, &out)
}

// SetRef points a ref of the fleet at a snapshot (PUT /v1/refs/{name}).
func (c *Client) SetRef(ctx context.Context, name string, req api.RefRequest) (*api.Ref, error) {
	var out api.Ref
	return &out, c.do(ctx, http.MethodPut, "/v1/refs/"+escRef(name), nil, req, &out)
}

// Ref returns a ref of the fleet (GET /v1/refs/{name}).
func (c *Client) Ref(ctx context.Context, name string) (*api.Ref, error) {
	var out api.Ref
	return &out, c.do(ctx, http.MethodGet, "/v1/refs/"+escRef(name), nil, nil, &out)
}

// Refs lists the fleet's refs (GET /v1/refs).
func (c *Client) Refs(ctx context.Context) (*api.RefList, error) {
	var out api.RefList
	return &out, c.do(ctx, http.MethodGet, "/v1/refs", nil, nil, &out)
}

// DeleteRef removes a ref (DELETE /v1/refs/{name}).
func (c *Client) DeleteRef(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/v1/refs/"+escRef(name), nil, nil, nil)
}

// Daemons lists the fleet's daemons (GET /v1/daemons).
func (c *Client) Daemons(ctx context.Context) (*api.DaemonList, error) {
	var out api.DaemonList
	return &out, c.do(ctx, http.MethodGet, "/v1/daemons", nil, nil, &out)
}

// escRef escapes each '/'-separated part of a ref name.
func escRef(name string) string {
	out := ""
	start := 0
	for i := 0; i <= len(name); i++ {
		if i == len(name) || name[i] == '/' {
			if start > 0 {
				out += "/"
			}
			out += esc(name[start:i])
			start = i + 1
		}
	}
	return out
}
