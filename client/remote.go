package client

import (
	"context"
	"net/http"

	"github.com/vfsd/vfsd/api"
)

// PushSnapshot uploads a snapshot to the daemon's remote (POST
// /v1/snapshots/{snap}/push) and waits for it.
func (c *Client) PushSnapshot(ctx context.Context, snap string) (*api.PushReport, error) {
	var out api.PushReport
	return &out, c.do(ctx, http.MethodPost, "/v1/snapshots/"+esc(snap)+"/push", nil, nil, &out)
}

// RemoteStatus reports the daemon's remote (GET /v1/remote).
func (c *Client) RemoteStatus(ctx context.Context) (*api.RemoteStatus, error) {
	var out api.RemoteStatus
	return &out, c.do(ctx, http.MethodGet, "/v1/remote", nil, nil, &out)
}

// RemoteGC collects the garbage of the daemon's remote (POST /v1/remote/gc).
func (c *Client) RemoteGC(ctx context.Context) (*api.RemoteGCReport, error) {
	var out api.RemoteGCReport
	return &out, c.do(ctx, http.MethodPost, "/v1/remote/gc", nil, nil, &out)
}
