package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/vfsd/vfsd/api"
)

// LogOptions select a page of a session's log.
type LogOptions struct {
	Offset int  // the first entry (0: the oldest)
	Limit  int  // at most this many (0: the daemon's maximum)
	Patch  bool // each entry's unified diff
}

// Log lists one page of a session's history: tool calls, mount changes
// and session operations, oldest first (GET /v1/sessions/{id}/log).
func (c *Client) Log(ctx context.Context, id string, opts LogOptions) (*api.Log, error) {
	q := url.Values{}
	if opts.Offset > 0 {
		q.Set("offset", strconv.Itoa(opts.Offset))
	}
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	if opts.Patch {
		q.Set("patch", "true")
	}
	var out api.Log
	return &out, c.do(ctx, http.MethodGet, "/v1/sessions/"+esc(id)+"/log", q, nil, &out)
}

// LogAll reads every page of a session's log.
func (c *Client) LogAll(ctx context.Context, id string, patch bool) (*api.Log, error) {
	all, err := c.Log(ctx, id, LogOptions{Patch: patch})
	if err != nil {
		return nil, err
	}
	for next := all.Next; next > 0; {
		page, err := c.Log(ctx, id, LogOptions{Offset: next, Patch: patch})
		if err != nil {
			return nil, err
		}
		all.Entries = append(all.Entries, page.Entries...)
		all.Total, all.Seq, next = page.Total, page.Seq, page.Next
	}
	all.Next = 0
	return all, nil
}

// Rewind puts a session back to an earlier state: just before a call, a
// snapshot's, a time's, or a journal position's (POST
// /v1/sessions/{id}/rewind). The rewind is itself undoable: rewind to
// the response's From.
func (c *Client) Rewind(ctx context.Context, id string, req api.RewindRequest) (*api.RewindResponse, error) {
	var out api.RewindResponse
	return &out, c.do(ctx, http.MethodPost, "/v1/sessions/"+esc(id)+"/rewind", nil, req, &out)
}

// Rebase imports a session's host folders again and replays its changes on
// top, merging files both changed (POST /v1/sessions/{id}/rebase).
func (c *Client) Rebase(ctx context.Context, id string, req api.RebaseRequest) (*api.RebaseReport, error) {
	var out api.RebaseReport
	return &out, c.do(ctx, http.MethodPost, "/v1/sessions/"+esc(id)+"/rebase", nil, req, &out)
}
