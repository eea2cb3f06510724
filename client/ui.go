package client

import (
	"context"
	"net/http"

	"github.com/vfsd/vfsd/api"
)

// UILogin asks for a one-time login to the review page (POST
// /v1/ui/login): for the admin, or — with session set, or with a session
// token — for one session.
func (c *Client) UILogin(ctx context.Context, session string) (*api.UILoginResponse, error) {
	var out api.UILoginResponse
	if err := c.do(ctx, http.MethodPost, "/v1/ui/login", nil, api.UILoginRequest{Session: session}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
