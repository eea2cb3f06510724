package daemon

import (
	"bytes"
	"context"
	"errors"
	"strings"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/tools"
)

// checkpointLabel begins the label of a snapshot the checkpoint tool
// takes: the session's checkpoints are its snapshots so labelled.
const checkpointLabel = "checkpoint: "

// checkpointer keeps session e's checkpoints for the checkpoint tools
// (tools.Checkpointer): as snapshots of the session under its snapshot
// quota, rewinds through its history. Every use is a tool call in the
// call log; an undo is a rewind in the session's history too.
type checkpointer struct {
	d *Daemon
	e *entry
}

var _ tools.Checkpointer = checkpointer{}

func (c checkpointer) Checkpoint(ctx context.Context, label string) (tools.Checkpoint, error) {
	if err := c.d.fleetGate(ctx, c.e); err != nil {
		return tools.Checkpoint{}, toolFailure(err)
	}
	snap, err := c.d.snapshotSession(ctx, c.e, checkpointLabel+label, nil)
	if err != nil {
		return tools.Checkpoint{}, toolFailure(err)
	}
	return checkpointOf(*snap), nil
}

func (c checkpointer) Checkpoints(ctx context.Context) ([]tools.Checkpoint, error) {
	list, err := c.d.snapshotList(ctx, func(s *snapshot.Snapshot) bool {
		return c.e.took(s.Record) && strings.HasPrefix(s.Record.Label, checkpointLabel)
	})
	if err != nil {
		return nil, toolFailure(err)
	}
	out := make([]tools.Checkpoint, 0, len(list.Snapshots))
	for _, s := range list.Snapshots {
		out = append(out, checkpointOf(s))
	}
	return out, nil
}

func (c checkpointer) DiffSince(ctx context.Context, from string) (string, int, int, int, error) {
	side := "base"
	if from != "start" {
		snap, err := c.checkpoint(ctx, from)
		if err != nil {
			return "", 0, 0, 0, err
		}
		side = snap.ID
	}
	df, err := c.d.SessionDiff(ctx, c.e.id, side, "live", true)
	if err != nil {
		return "", 0, 0, 0, toolFailure(err)
	}
	var buf bytes.Buffer
	if err := df.WriteUnified(&buf); err != nil {
		return "", 0, 0, 0, toolFailure(err)
	}
	text := buf.String()
	if len(text) > api.LogMaxDiffBytes {
		text = truncateUTF8(text, api.LogMaxDiffBytes) + "\n... (diff cut at 256 KiB; read the files for the rest)\n"
	}
	return text, df.Added, df.Modified, df.Deleted, nil
}

func (c checkpointer) UndoTo(ctx context.Context, ref string, call uint64) (uint64, uint64, error) {
	req := api.RewindRequest{Call: call}
	if ref != "" {
		snap, err := c.checkpoint(ctx, ref)
		if err != nil {
			return 0, 0, err
		}
		req.Snapshot = snap.ID
	}
	resp, err := c.d.Rewind(ctx, c.e.id, req)
	if err != nil {
		return 0, 0, toolFailure(err)
	}
	return resp.From, resp.To, nil
}

// checkpoint resolves ref among the session's checkpoints: the tools undo
// to and compare with checkpoints, not with every snapshot the session
// reaches.
func (c checkpointer) checkpoint(ctx context.Context, ref string) (*snapshot.Snapshot, error) {
	snap, err := c.d.snapshotFor(ctx, Caller{Session: c.e.id}, c.e, ref)
	if err == nil && !(c.e.took(snap.Record) && strings.HasPrefix(snap.Record.Label, checkpointLabel)) {
		err = apiErr(api.CodeNotFound, "%s is not a checkpoint of this session; list them with list_checkpoints", ref)
	}
	if err != nil {
		return nil, toolFailure(err)
	}
	return snap, nil
}

func checkpointOf(s api.Snapshot) tools.Checkpoint {
	return tools.Checkpoint{ID: s.ID, Label: strings.TrimPrefix(s.Label, checkpointLabel), CreatedAt: s.CreatedAt,
		Files: s.Files, Bytes: s.Bytes}
}

// toolFailure turns a daemon error into the tools' failure with the same
// code where the tools have it (not_found, conflict, too_large, ...).
func toolFailure(err error) error {
	var f *tools.Failure
	if errors.As(err, &f) {
		return err
	}
	ae := APIError(err)
	code := tools.CodeInternal
	switch c := tools.Code(ae.Code); c {
	case tools.CodeNotFound, tools.CodeConflict, tools.CodeTooLarge, tools.CodeInvalidInput, tools.CodeForbidden, tools.CodeInvalidPath:
		code = c
	}
	return &tools.Failure{Code: code, Msg: ae.Message}
}
