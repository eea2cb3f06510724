package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/vfsd/vfsd/api"
)

// CreateSessionProgress is CreateSession that calls progress as the
// session's host folders are imported.
func (c *Client) CreateSessionProgress(ctx context.Context, req api.CreateSessionRequest, progress func(api.Progress)) (*api.CreateSessionResponse, error) {
	var out api.CreateSessionResponse
	return &out, c.doProgress(ctx, "/v1/sessions", req, &out, progress)
}

// ResetSessionProgress is ResetSession that calls progress as the
// session's host folders are imported again.
func (c *Client) ResetSessionProgress(ctx context.Context, id string, progress func(api.Progress)) (*api.ResetResponse, error) {
	var out api.ResetResponse
	return &out, c.doProgress(ctx, "/v1/sessions/"+esc(id)+"/reset", nil, &out, progress)
}

// CreateSnapshotProgress is CreateSnapshot that calls progress as the
// files written since the session's last snapshot are sealed into blobs.
func (c *Client) CreateSnapshotProgress(ctx context.Context, session, label string, progress func(api.Progress)) (*api.Snapshot, error) {
	var out api.Snapshot
	return &out, c.doProgress(ctx, "/v1/sessions/"+esc(session)+"/snapshots", api.SnapshotRequest{Label: label}, &out, progress)
}

// doProgress POSTs with ?progress=true and reads the stream of
// api.ProgressLine: progress to progress, the result into out.
func (c *Client) doProgress(ctx context.Context, path string, in, out any, progress func(api.Progress)) error {
	body, err := jsonBody(in)
	if err != nil {
		return err
	}
	resp, err := c.send(ctx, request{method: http.MethodPost, path: path, query: url.Values{"progress": {"true"}}, body: body})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 256<<20)
	for sc.Scan() {
		var line api.ProgressLine
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return fmt.Errorf("POST %s: decode the progress stream: %w", path, err)
		}
		switch {
		case line.Error != nil:
			line.Error.Status = line.Status
			return line.Error
		case line.Result != nil:
			if err := json.Unmarshal(line.Result, out); err != nil {
				return fmt.Errorf("POST %s: decode the result: %w", path, err)
			}
			return nil
		case line.Progress != nil && progress != nil:
			progress(*line.Progress)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("POST %s: read the progress stream: %w", path, err)
	}
	return errors.New("POST " + path + ": the daemon ended the progress stream without a result (did it stop?)")
}
