package api

import "time"

// Log entry kinds (LogEntry.Kind).
const (
	LogCall    = "call"    // a tool call
	LogMount   = "mount"   // changes programs made through a FUSE or overlay mount
	LogSession = "session" // a session operation: restore, reset, rewind, rebase, snapshot, or another change
)

// LogEntry is one step of a session's history (GET
// /v1/sessions/{id}/log): a tool call, a run of consecutive changes made
// through one mount, or a session operation. SeqBefore and Seq are the
// journal positions around it: its diff is the session's state at
// SeqBefore against its state at Seq, and `rewind` to SeqBefore undoes it
// and everything after.
type LogEntry struct {
	Kind string    `json:"kind"`
	Time time.Time `json:"time"`
	// Call is the call's number in the call log (kind call).
	Call uint64 `json:"call,omitempty"`
	// Tool is the tool a call ran; for a session operation, the operation
	// (restore, rewind, snapshot, seal, ...).
	Tool string `json:"tool,omitempty"`
	// Source is where the step came from: the call's transport (http,
	// mcp), the mount ("fuse:/mnt/dir", "overlay:/mnt/dir"), or "session".
	Source  string `json:"source"`
	Status  string `json:"status,omitempty"`
	IsError bool   `json:"is_error,omitempty"`
	Summary string `json:"summary,omitempty"`
	// Paths are the session paths the step changed (at most LogMaxPaths;
	// PathsMore counts the rest).
	Paths     []string `json:"paths"`
	PathsMore int      `json:"paths_more,omitempty"`
	// Events is how many journal events the step made.
	Events    int    `json:"events"`
	SeqBefore uint64 `json:"seq_before"`
	Seq       uint64 `json:"seq"`
	// Snapshot is the snapshot a snapshot or restore step names.
	Snapshot string `json:"snapshot,omitempty"`
	// Diff is the step's unified diff (with ?patch=true), at most
	// LogMaxDiffBytes; DiffTruncated says it was cut.
	Diff          string `json:"diff,omitempty"`
	DiffTruncated bool   `json:"diff_truncated,omitempty"`
}

// LogMaxPaths bounds LogEntry.Paths; LogMaxDiffBytes bounds LogEntry.Diff.
const (
	LogMaxPaths     = 100
	LogMaxDiffBytes = 256 << 10
)

// Log answers GET /v1/sessions/{id}/log?offset=&limit=&patch=: the
// entries from the offset-th (0 first), oldest first, at most limit
// (default and maximum 500). Next is the offset of the next page, 0 at
// the end. HistoryStart is the oldest journal position kept: calls
// before it are listed but have no paths and cannot be diffed or
// rewound to.
type Log struct {
	Entries      []LogEntry `json:"entries"`
	Next         int        `json:"next,omitempty"`
	Total        int        `json:"total"`
	HistoryStart uint64     `json:"history_start"`
	Seq          uint64     `json:"seq"`
}

// RewindRequest is the body of POST /v1/sessions/{id}/rewind: exactly one
// of Call (the state just before call N), Snapshot (a snapshot's state: a
// snapshot of this session taken within its history is rewound to exactly;
// any other is restored), Time (the state at that moment: after the last
// change at or before it) or Seq (the state just after journal event Seq,
// the positions the log shows).
type RewindRequest struct {
	Call     uint64     `json:"call,omitempty"`
	Snapshot string     `json:"snapshot,omitempty"`
	Time     *time.Time `json:"time,omitempty"`
	Seq      *uint64    `json:"seq,omitempty"`
}

// RewindResponse answers a rewind. The rewind is itself a step of the
// history: rewinding to From undoes it.
type RewindResponse struct {
	Session Session `json:"session"`
	// From is the position the session was at; To the position it went
	// back to; Seq the rewind's own event.
	From uint64 `json:"from"`
	To   uint64 `json:"to"`
	Seq  uint64 `json:"seq"`
	// Restored is set when Snapshot was not in the history and was
	// restored instead.
	Restored string `json:"restored,omitempty"`
	// ImportSnapshot is the session's import snapshot after the rewind: a
	// rewind to before a rebase goes back to the import that state was
	// based on.
	ImportSnapshot string `json:"import_snapshot,omitempty"`
}

// RebaseRequest is the body of POST /v1/sessions/{id}/rebase.
type RebaseRequest struct {
	DryRun bool `json:"dry_run,omitempty"`
}

// RebaseReport answers a rebase: the host folders imported again and the
// session's changes replayed on top. Kept are paths only the session
// changed (its version stays), Taken paths only the host changed (the
// host's version comes in), Merged paths both changed whose merge is
// clean (or who made the same change), Conflicts paths both changed that
// could not be merged. Lists are capped at RebaseMaxPaths; the counts are
// whole.
type RebaseReport struct {
	DryRun         bool             `json:"dry_run"`
	ImportSnapshot string           `json:"import_snapshot"`
	PreviousImport string           `json:"previous_import"`
	Kept           []string         `json:"kept"`
	Taken          []string         `json:"taken"`
	Merged         []string         `json:"merged"`
	Conflicts      []RebaseConflict `json:"conflicts"`
	KeptCount      int              `json:"kept_count"`
	TakenCount     int              `json:"taken_count"`
	MergedCount    int              `json:"merged_count"`
	// SeqBefore and Seq are the journal positions around the rebase
	// (equal when nothing changed): rewind to SeqBefore undoes it.
	SeqBefore uint64   `json:"seq_before"`
	Seq       uint64   `json:"seq"`
	Session   *Session `json:"session,omitempty"`
}

// RebaseConflict is a path both sides changed that a rebase could not
// merge. Markers says conflict markers were written into the file (fix
// them in the session, then apply); otherwise Resolution says which
// version the session now holds.
type RebaseConflict struct {
	Path       string `json:"path"`
	Reason     string `json:"reason"`
	Markers    bool   `json:"markers,omitempty"`
	Conflicts  int    `json:"conflicts,omitempty"`
	Resolution string `json:"resolution,omitempty"`
}

// RebaseMaxPaths bounds each path list of a RebaseReport.
const RebaseMaxPaths = 1000
