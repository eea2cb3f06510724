package client

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/vfsd/vfsd/api"
)

// CreateSnapshot snapshots a session (POST /v1/sessions/{id}/snapshots).
func (c *Client) CreateSnapshot(ctx context.Context, session, label string) (*api.Snapshot, error) {
	var out api.Snapshot
	return &out, c.do(ctx, http.MethodPost, "/v1/sessions/"+esc(session)+"/snapshots", nil, api.SnapshotRequest{Label: label}, &out)
}

// SessionSnapshots lists the snapshots taken of a session, newest first
// (GET /v1/sessions/{id}/snapshots).
func (c *Client) SessionSnapshots(ctx context.Context, session string) ([]api.Snapshot, error) {
	var out api.SnapshotList
	return out.Snapshots, c.do(ctx, http.MethodGet, "/v1/sessions/"+esc(session)+"/snapshots", nil, nil, &out)
}

// Snapshots lists every snapshot, newest first, or one session's when
// session is not "" (GET /v1/snapshots): with a remote, the fleet's too
// (api.Snapshot.Daemon, Remote).
func (c *Client) Snapshots(ctx context.Context, session string) ([]api.Snapshot, error) {
	return c.SnapshotsOf(ctx, session, false)
}

// SnapshotsOf is Snapshots; local leaves the fleet's out (?local=1).
func (c *Client) SnapshotsOf(ctx context.Context, session string, local bool) ([]api.Snapshot, error) {
	l, err := c.SnapshotList(ctx, session, local)
	if err != nil {
		return nil, err
	}
	return l.Snapshots, nil
}

// SnapshotList is SnapshotsOf with the whole answer: FleetError says when
// the fleet's snapshots are left out.
func (c *Client) SnapshotList(ctx context.Context, session string, local bool) (*api.SnapshotList, error) {
	q := url.Values{}
	if session != "" {
		q.Set("session", session)
	}
	if local {
		q.Set("local", "1")
	}
	var out api.SnapshotList
	return &out, c.do(ctx, http.MethodGet, "/v1/snapshots", q, nil, &out)
}

// Snapshot describes a snapshot, by ID or unique prefix (GET
// /v1/snapshots/{snap}).
func (c *Client) Snapshot(ctx context.Context, snap string) (*api.Snapshot, error) {
	var out api.Snapshot
	return &out, c.do(ctx, http.MethodGet, "/v1/snapshots/"+esc(snap), nil, nil, &out)
}

// Restore returns a session to a snapshot (POST /v1/sessions/{id}/restore).
func (c *Client) Restore(ctx context.Context, session, snap string) (*api.Session, error) {
	var out api.Session
	return &out, c.do(ctx, http.MethodPost, "/v1/sessions/"+esc(session)+"/restore", nil, api.RestoreRequest{Snapshot: snap}, &out)
}

// DiffQuery names the two sides of a diff and how to render it.
type DiffQuery struct {
	// From and To: on a session's diff, "base", "import", "live" or a
	// snapshot ID (defaults: base to live); on the global diff, a snapshot
	// ID or "session:ID".
	From, To string
	// Text adds unified diffs of text files to the entries.
	Text bool
}

func (q DiffQuery) values(format string) url.Values {
	v := url.Values{}
	if q.From != "" {
		v.Set("from", q.From)
	}
	if q.To != "" {
		v.Set("to", q.To)
	}
	if q.Text {
		v.Set("text", "true")
	}
	if format != "" {
		v.Set("format", format)
	}
	return v
}

// SessionDiff diffs two states of a session (GET /v1/sessions/{id}/diff).
func (c *Client) SessionDiff(ctx context.Context, session string, q DiffQuery) (*api.Diff, error) {
	var out api.Diff
	return &out, c.do(ctx, http.MethodGet, "/v1/sessions/"+esc(session)+"/diff", q.values(""), nil, &out)
}

// SessionDiffText is SessionDiff as one unified diff.
func (c *Client) SessionDiffText(ctx context.Context, session string, q DiffQuery) (string, error) {
	return c.text(ctx, "/v1/sessions/"+esc(session)+"/diff", q.values("unified"))
}

// Diff diffs two snapshots or live sessions (GET /v1/diff).
func (c *Client) Diff(ctx context.Context, q DiffQuery) (*api.Diff, error) {
	var out api.Diff
	return &out, c.do(ctx, http.MethodGet, "/v1/diff", q.values(""), nil, &out)
}

// DiffText is Diff as one unified diff.
func (c *Client) DiffText(ctx context.Context, q DiffQuery) (string, error) {
	return c.text(ctx, "/v1/diff", q.values("unified"))
}

// GC deletes the blobs nothing references (POST /v1/gc).
func (c *Client) GC(ctx context.Context) (*api.GCReport, error) {
	var out api.GCReport
	return &out, c.do(ctx, http.MethodPost, "/v1/gc", nil, nil, &out)
}

// text GETs a plain-text response.
func (c *Client) text(ctx context.Context, path string, q url.Values) (string, error) {
	resp, err := c.send(ctx, request{method: http.MethodGet, path: path, query: q})
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	return readString(resp)
}

func readString(resp *http.Response) (string, error) {
	var b strings.Builder
	_, err := io.Copy(&b, resp.Body)
	return b.String(), err
}

// DeleteSnapshot deletes a snapshot, by ID or unique prefix (DELETE
// /v1/snapshots/{snap}, admin). A snapshot a live session needs is refused
// with conflict; the content is reclaimed by the next GC.
func (c *Client) DeleteSnapshot(ctx context.Context, snap string) (*api.DeleteSnapshotsResponse, error) {
	var out api.DeleteSnapshotsResponse
	return &out, c.do(ctx, http.MethodDelete, "/v1/snapshots/"+esc(snap), nil, nil, &out)
}

// DeleteSessionSnapshot deletes a snapshot taken of a session (DELETE
// /v1/sessions/{id}/snapshots/{snap}): what a session token may delete.
func (c *Client) DeleteSessionSnapshot(ctx context.Context, session, snap string) (*api.DeleteSnapshotsResponse, error) {
	var out api.DeleteSnapshotsResponse
	return &out, c.do(ctx, http.MethodDelete, "/v1/sessions/"+esc(session)+"/snapshots/"+esc(snap), nil, nil, &out)
}
