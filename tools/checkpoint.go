package tools

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// The checkpoint tools let an agent keep and undo its own work: checkpoint
// takes a labelled snapshot, list_checkpoints lists them, diff_since shows
// what changed since one (or since the workspace was staged), undo_to puts
// the workspace back to one, or to just before a call. They are off unless
// the session's policy enables them (Policy.Checkpoints) and the toolset
// has a Checkpointer (the daemon's, which keeps checkpoints as snapshots
// under the session's snapshot quota and journals every use).

// CheckpointTools are the checkpoint tools' names, in the order they are
// shown after a profile's own.
var CheckpointTools = []string{"checkpoint", "list_checkpoints", "diff_since", "undo_to"}

// Checkpoint is one checkpoint of a session.
type Checkpoint struct {
	ID        string    `json:"id" jsonschema:"the checkpoint's ID (a snapshot ID); undo_to and diff_since take it or a unique prefix"`
	Label     string    `json:"label"`
	CreatedAt time.Time `json:"created_at"`
	Files     int64     `json:"files"`
	Bytes     int64     `json:"bytes"`
}

// Checkpointer keeps a session's checkpoints: what the checkpoint tools
// call.
type Checkpointer interface {
	// Checkpoint takes a checkpoint labelled label.
	Checkpoint(ctx context.Context, label string) (Checkpoint, error)
	// Checkpoints lists the session's checkpoints, newest first.
	Checkpoints(ctx context.Context) ([]Checkpoint, error)
	// DiffSince returns the unified diff from a checkpoint (an ID or a
	// unique prefix; "start": the workspace as staged or forked) to now,
	// and how many paths were added, modified and deleted.
	DiffSince(ctx context.Context, from string) (diff string, added, modified, deleted int, err error)
	// UndoTo puts the session back to a checkpoint, or to just before
	// call number call; it returns the journal positions before and
	// after.
	UndoTo(ctx context.Context, checkpoint string, call uint64) (from, to uint64, err error)
}

// CheckpointParams are checkpoint's parameters.
type CheckpointParams struct {
	Label string `json:"label" jsonschema:"what the workspace holds now, in a few words (e.g. tests pass, before refactoring the parser)"`
}

// CheckpointReceipt is checkpoint's receipt.
type CheckpointReceipt struct {
	Receipt
	Checkpoint Checkpoint `json:"checkpoint"`
}

func (r *CheckpointReceipt) text() string { return r.SummaryText }

// ListCheckpointsParams are list_checkpoints' parameters (none).
type ListCheckpointsParams struct{}

// ListCheckpointsReceipt is list_checkpoints' receipt.
type ListCheckpointsReceipt struct {
	Receipt
	Checkpoints []Checkpoint `json:"checkpoints"`
}

func (r *ListCheckpointsReceipt) text() string {
	if len(r.Checkpoints) == 0 {
		return r.SummaryText
	}
	var b strings.Builder
	b.WriteString(r.SummaryText + "\n")
	for _, c := range r.Checkpoints {
		fmt.Fprintf(&b, "%s  %s  %s (%d files)\n", shortID(c.ID), c.CreatedAt.UTC().Format(time.RFC3339), c.Label, c.Files)
	}
	return b.String()
}

// DiffSinceParams are diff_since's parameters.
type DiffSinceParams struct {
	Checkpoint string `json:"checkpoint,omitempty" jsonschema:"a checkpoint's ID or unique prefix; omitted: since the workspace was staged"`
}

// DiffSinceReceipt is diff_since's receipt.
type DiffSinceReceipt struct {
	Receipt
	Added    int    `json:"added"`
	Modified int    `json:"modified"`
	Deleted  int    `json:"deleted"`
	Diff     string `json:"diff" jsonschema:"unified diff, git's format"`
}

func (r *DiffSinceReceipt) text() string {
	if r.Diff == "" {
		return r.SummaryText
	}
	return r.SummaryText + "\n" + r.Diff
}

// UndoToParams are undo_to's parameters.
type UndoToParams struct {
	Checkpoint string `json:"checkpoint,omitempty" jsonschema:"a checkpoint's ID or unique prefix to go back to"`
	BeforeCall uint64 `json:"before_call,omitempty" jsonschema:"or: the number of a tool call, to go back to just before it"`
}

// UndoToReceipt is undo_to's receipt.
type UndoToReceipt struct {
	Receipt
	// From is the journal position before the undo; undo_to with it (as
	// the admin's rewind) would redo what was undone.
	From uint64 `json:"from"`
	To   uint64 `json:"to"`
}

func (r *UndoToReceipt) text() string { return r.SummaryText }

func init() {
	register("checkpoint", "Save the whole workspace as a checkpoint you can go back to (undo_to) or compare with (diff_since). Take one before a risky change (a refactor, a dependency upgrade, a generated rewrite) and after reaching a good state (tests pass). Cheap: nothing is copied. Bounded by the session's snapshot quota.",
		false, nil, checkpointTool)
	register("list_checkpoints", "List this session's checkpoints, newest first: ID, time, label, files.", false, nil, listCheckpoints)
	register("diff_since", "Show what changed in the workspace since a checkpoint (or, with no checkpoint, since it was staged), as a unified diff.", false, nil, diffSince)
	register("undo_to", "Put the workspace back to a checkpoint, or to just before a tool call (before_call), undoing every file change made since: files written, edited, deleted or renamed, by tools or by programs through a mount. Nothing outside the workspace is undone (commands' other effects, network calls). The undo itself can be undone by an operator.",
		true, nil, undoTo)
}

// checkpointer returns the toolset's Checkpointer, or the failure saying
// why the checkpoint tools are not available.
func (t *Toolset) checkpointer() (Checkpointer, error) {
	if !t.pol.Checkpoints {
		return nil, fail(CodeForbidden, "checkpoints are not enabled for this session: its policy (%s) leaves them off; an operator enables them with a policy whose checkpoints is true", t.pol.Name)
	}
	if t.opts.Checkpoints == nil {
		return nil, fail(CodeForbidden, "checkpoints are not available here: the session is not served by a vfsd daemon that keeps them")
	}
	return t.opts.Checkpoints, nil
}

func checkpointTool(ctx context.Context, t *Toolset, p *CheckpointParams) (*CheckpointReceipt, error) {
	cp, err := t.checkpointer()
	if err != nil {
		return nil, err
	}
	label := strings.TrimSpace(p.Label)
	if label == "" {
		return nil, fail(CodeInvalidInput, "label is required: say in a few words what the workspace holds now")
	}
	c, err := cp.Checkpoint(ctx, label)
	if err != nil {
		return nil, err
	}
	r := &CheckpointReceipt{Checkpoint: c}
	r.SummaryText = fmt.Sprintf("checkpoint %s saved: %s (%d files)", shortID(c.ID), c.Label, c.Files)
	return r, nil
}

func listCheckpoints(ctx context.Context, t *Toolset, _ *ListCheckpointsParams) (*ListCheckpointsReceipt, error) {
	cp, err := t.checkpointer()
	if err != nil {
		return nil, err
	}
	cs, err := cp.Checkpoints(ctx)
	if err != nil {
		return nil, err
	}
	r := &ListCheckpointsReceipt{Checkpoints: cs}
	if cs == nil {
		r.Checkpoints = []Checkpoint{}
	}
	r.SummaryText = fmt.Sprintf("%d checkpoints", len(cs))
	if len(cs) == 0 {
		r.SummaryText = "no checkpoints yet; take one with checkpoint"
	}
	return r, nil
}

func diffSince(ctx context.Context, t *Toolset, p *DiffSinceParams) (*DiffSinceReceipt, error) {
	cp, err := t.checkpointer()
	if err != nil {
		return nil, err
	}
	from := strings.TrimSpace(p.Checkpoint)
	if from == "" {
		from = "start"
	}
	diff, a, m, d, err := cp.DiffSince(ctx, from)
	if err != nil {
		return nil, err
	}
	r := &DiffSinceReceipt{Added: a, Modified: m, Deleted: d, Diff: diff}
	what := "checkpoint " + shortID(from)
	if from == "start" {
		what = "the start"
	}
	r.SummaryText = fmt.Sprintf("since %s: %d added, %d modified, %d deleted", what, a, m, d)
	if a+m+d == 0 {
		r.SummaryText = "nothing changed since " + what
	}
	return r, nil
}

func undoTo(ctx context.Context, t *Toolset, p *UndoToParams) (*UndoToReceipt, error) {
	cp, err := t.checkpointer()
	if err != nil {
		return nil, err
	}
	ref := strings.TrimSpace(p.Checkpoint)
	if (ref == "") == (p.BeforeCall == 0) {
		return nil, fail(CodeInvalidInput, "give exactly one of checkpoint (an ID from list_checkpoints) or before_call (a tool call's number)")
	}
	from, to, err := cp.UndoTo(ctx, ref, p.BeforeCall)
	if err != nil {
		return nil, err
	}
	r := &UndoToReceipt{From: from, To: to}
	if ref != "" {
		r.SummaryText = fmt.Sprintf("the workspace is back at checkpoint %s", shortID(ref))
	} else {
		r.SummaryText = fmt.Sprintf("the workspace is back to just before call %d", p.BeforeCall)
	}
	return r, nil
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
