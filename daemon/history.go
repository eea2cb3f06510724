package daemon

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// logPageMax bounds one page of GET /v1/sessions/{id}/log.
const logPageMax = 500

// importMark records that the session's import snapshot was Import before
// the step at journal position Seq (a rebase) moved it: a rewind to Seq or
// earlier brings that import back, as the state then was based on it.
type importMark struct {
	Seq    uint64 `json:"seq"`
	Import string `json:"import"`
}

// logEntry is an api.LogEntry being built, with the changes its diff
// covers.
type logEntry struct {
	api.LogEntry
	changes []vfs.Change
	paths   map[string]struct{}
}

func (le *logEntry) add(seq uint64, ev *vfs.Event) {
	le.Events++
	if le.SeqBefore == 0 && le.Seq == 0 || seq-1 < le.SeqBefore {
		le.SeqBefore = seq - 1
	}
	le.Seq = max(le.Seq, seq)
	for _, c := range ev.Changes() {
		le.changes = append(le.changes, c)
		if le.paths == nil {
			le.paths = map[string]struct{}{}
		}
		le.paths[wirePath(c.Path)] = struct{}{}
	}
}

// mountSource names a mount origin ("fuse:3:/mnt/x") as the log shows
// it ("fuse:/mnt/x"), or "" for another origin.
func mountSource(origin string) string {
	kind, rest, ok := strings.Cut(origin, ":")
	if !ok || kind != "fuse" && kind != "overlay" {
		return ""
	}
	if _, dir, ok := strings.Cut(rest, ":"); ok {
		return kind + ":" + dir
	}
	return kind + ":" + rest
}

// allCalls reads a session's whole call log.
func allCalls(e *entry) ([]api.Call, error) {
	if e.calls == nil {
		return nil, nil
	}
	var out []api.Call
	var since uint64
	for {
		page, err := e.calls.list(since, callPageMax)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Calls...)
		if page.Next == 0 {
			return out, nil
		}
		since = page.Next
	}
}

// buildLog assembles a session's history: its tool calls from the call
// log, and the journal's other changes — a mount's consecutive changes as
// one entry, session operations each as one — in journal order.
func (d *Daemon) buildLog(ctx context.Context, e *entry) ([]*logEntry, error) {
	calls, err := allCalls(e)
	if err != nil {
		return nil, err
	}
	start, cur := e.s.HistoryStart(), e.s.Info().Seq
	entries := make([]*logEntry, 0, len(calls))
	byStart := make([]*logEntry, 0, len(calls)) // calls by SeqBefore
	for _, c := range calls {
		le := &logEntry{LogEntry: api.LogEntry{Kind: api.LogCall, Time: c.Time, Call: c.N, Tool: c.Tool, Source: c.Transport,
			Status: c.Status, IsError: c.IsError, Summary: c.Summary, SeqBefore: c.SeqBefore, Seq: c.Seq}}
		entries = append(entries, le)
		byStart = append(byStart, le)
	}
	sort.SliceStable(byStart, func(i, j int) bool { return byStart[i].SeqBefore < byStart[j].SeqBefore })
	// callOf finds the call whose journal range holds event seq.
	callOf := func(seq uint64) *logEntry {
		i := sort.Search(len(byStart), func(i int) bool { return byStart[i].SeqBefore >= seq })
		for j := i - 1; j >= 0 && j >= i-64; j-- {
			if c := byStart[j]; c.SeqBefore < seq && seq <= c.Seq {
				return c
			}
		}
		return nil
	}
	var group *logEntry // the open run of other changes
	err = e.s.History(ctx, start, cur, func(seq uint64, ev *vfs.Event) error {
		src := mountSource(ev.Origin)
		if src == "" {
			if c := callOf(seq); c != nil {
				c.Events++
				for _, ch := range ev.Changes() {
					c.changes = append(c.changes, ch)
					if c.paths == nil {
						c.paths = map[string]struct{}{}
					}
					c.paths[wirePath(ch.Path)] = struct{}{}
				}
				group = nil
				return nil
			}
		}
		at := time.UnixMilli(ev.Time).UTC().Add(time.Duration(ev.Ns))
		switch ev.Op {
		case vfs.OpSeal:
			return nil // where content is kept, not what it is
		case vfs.OpSnapshotted, vfs.OpRestore, vfs.OpRewind:
			le := &logEntry{LogEntry: api.LogEntry{Kind: api.LogSession, Time: at, Tool: string(ev.Op), Source: "session", Snapshot: ev.Snapshot}}
			switch ev.Op {
			case vfs.OpSnapshotted:
				le.Tool = "snapshot"
				le.Summary = "snapshot " + ev.Snapshot
			case vfs.OpRestore:
				le.Summary = "restored snapshot " + ev.Snapshot
			case vfs.OpRewind:
				le.Summary = fmt.Sprintf("rewound to position %d", ev.Seq)
			}
			le.add(seq, ev)
			if ev.Op == vfs.OpSnapshotted {
				le.changes, le.paths = nil, nil
			}
			entries = append(entries, le)
			group = nil
			return nil
		}
		if src == "" {
			src = "session"
		}
		if group == nil || group.Source != src {
			kind := api.LogMount
			if src == "session" {
				kind = api.LogSession
			}
			group = &logEntry{LogEntry: api.LogEntry{Kind: kind, Time: at, Source: src}}
			entries = append(entries, group)
		}
		group.add(seq, ev)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, le := range entries {
		if le.Kind == api.LogMount {
			le.Summary = fmt.Sprintf("%d changes through %s", le.Events, le.Source)
		} else if le.Kind == api.LogSession && le.Tool == "" {
			le.Summary = fmt.Sprintf("%d changes outside tool calls and mounts", le.Events)
		}
		le.Paths = make([]string, 0, len(le.paths))
		for p := range le.paths {
			le.Paths = append(le.Paths, p)
		}
		slices.Sort(le.Paths)
		if len(le.Paths) > api.LogMaxPaths {
			le.PathsMore = len(le.Paths) - api.LogMaxPaths
			le.Paths = le.Paths[:api.LogMaxPaths]
		}
	}
	sort.SliceStable(entries, func(i, j int) bool {
		a, b := entries[i], entries[j]
		if a.SeqBefore != b.SeqBefore {
			return a.SeqBefore < b.SeqBefore
		}
		return a.Time.Before(b.Time)
	})
	return entries, nil
}

// LogPageMax is the most entries one page of a session's log holds.
const LogPageMax = logPageMax

// LogOptions page a session's log.
type LogOptions struct {
	// Offset is the index of the first entry.
	Offset int
	// Limit is the most entries to return (at most LogPageMax; 0 is that).
	Limit int
	// Patch adds each entry's diff.
	Patch bool
}

// Log lists session id's history: its tool calls, what its mounts
// changed, snapshots, restores, rewinds and rebases, oldest first.
func (d *Daemon) Log(ctx context.Context, id string, opts LogOptions) (*api.Log, error) {
	e, err := d.lookup(id)
	if err != nil {
		return nil, err
	}
	offset, limit, patch := max(opts.Offset, 0), opts.Limit, opts.Patch
	if limit < 1 || limit > logPageMax {
		limit = logPageMax
	}
	if err := d.settle(ctx, e); err != nil {
		return nil, err
	}
	if patch {
		// What was written through mounts since the last call is sealed,
		// so the last mount entry's diff has its content.
		if err := e.s.SealUppers(ctx); err != nil {
			return nil, err
		}
	}
	entries, err := d.buildLog(ctx, e)
	if err != nil {
		return nil, err
	}
	out := &api.Log{Entries: []api.LogEntry{}, Total: len(entries), HistoryStart: e.s.HistoryStart(), Seq: e.s.Info().Seq}
	end := min(offset+limit, len(entries))
	for i := offset; i < end; i++ {
		le := entries[i]
		if patch {
			le.Diff, le.DiffTruncated, err = d.stepDiff(ctx, e, le)
			if err != nil {
				return nil, err
			}
		}
		out.Entries = append(out.Entries, le.LogEntry)
	}
	if end < len(entries) {
		out.Next = end
	}
	return out, nil
}

// stepDiff renders the unified diff of one log entry: the session at
// SeqBefore against the session at Seq, where the entry's events changed
// it. Content the history does not hold is shown without text.
func (d *Daemon) stepDiff(ctx context.Context, e *entry, le *logEntry) (string, bool, error) {
	if le.Seq <= le.SeqBefore || le.SeqBefore < e.s.HistoryStart() || len(le.changes) == 0 {
		return "", false, nil
	}
	a, _, err := e.s.ResolvedTreeAt(ctx, le.SeqBefore)
	if err != nil {
		return "", false, err
	}
	b, _, err := e.s.ResolvedTreeAt(ctx, le.Seq)
	if err != nil {
		return "", false, err
	}
	diff, err := d.repo.DiffTrees(ctx, a, b, le.changes, snapshot.DiffOptions{Text: true})
	if err != nil {
		return "", false, err
	}
	var buf bytes.Buffer
	if err := diff.WriteUnified(&buf); err != nil {
		return "", false, err
	}
	if buf.Len() > api.LogMaxDiffBytes {
		return truncateUTF8(buf.String(), api.LogMaxDiffBytes), true, nil
	}
	return buf.String(), false, nil
}

// Rewind puts session id back to an earlier state of its history: just
// before a call, a journal position, a time, or a snapshot (restored when
// it is not within the session's history).
func (d *Daemon) Rewind(ctx context.Context, id string, req api.RewindRequest) (*api.RewindResponse, error) {
	e, err := d.lookup(id)
	if err != nil {
		return nil, err
	}
	if err := d.fleetGate(ctx, e); err != nil {
		return nil, err
	}
	n := 0
	for _, set := range []bool{req.Call != 0, req.Snapshot != "", req.Time != nil, req.Seq != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return nil, apiErr(api.CodeInvalidInput, "give exactly one of call (the state just before call N), snapshot, time (RFC 3339) or seq (a journal position from the log)")
	}
	e.hostMu.Lock()
	defer e.hostMu.Unlock()
	if err := d.settle(ctx, e); err != nil {
		return nil, err
	}
	resp := api.RewindResponse{From: e.s.Info().Seq}
	var target uint64
	switch {
	case req.Call != 0:
		if e.calls == nil {
			return nil, apiErr(api.CodeInternal, "session %s has no call log (it could not be opened at start; see the daemon's log)", e.id)
		}
		page, err := e.calls.list(req.Call-1, 1)
		if err != nil {
			return nil, err
		}
		if len(page.Calls) == 0 || page.Calls[0].N != req.Call {
			return nil, apiErr(api.CodeNotFound, "session %s has no call %d in its log (it holds calls %d to %d); list them with vfsd log %s", e.id, req.Call, page.Oldest, e.calls.count(), e.id)
		}
		target = page.Calls[0].SeqBefore
	case req.Seq != nil:
		target = *req.Seq
	case req.Time != nil:
		if target, err = d.seqAtTime(ctx, e, *req.Time); err != nil {
			return nil, err
		}
	default:
		snap, err := d.snapshotFor(ctx, callerOf(ctx), e, req.Snapshot)
		if err != nil {
			return nil, err
		}
		seq, found, err := snapshotPosition(ctx, e.s, snap.ID)
		if err != nil {
			return nil, err
		}
		if !found {
			// Not taken of this session within its history: restore it.
			if err := d.repo.Restore(ctx, e.s, snap.ID); err != nil {
				return nil, fmt.Errorf("rewind %s to snapshot %s: %w", e.id, snap.ID[:12], err)
			}
			d.prefetch(snap.ID)
			resp.Restored, resp.To, resp.Seq = snap.ID, e.s.Info().Seq, e.s.Info().Seq
			resp.ImportSnapshot = d.importAfterRewind(e, 0)
			resp.Session = d.view(e)
			return &resp, nil
		}
		target = seq
	}
	if start := e.s.HistoryStart(); target < start {
		return nil, apiErr(api.CodeConflict, "position %d is before the history session %s keeps (it starts at %d: the last reset or restore before the daemon last opened the session); rewind to a later call or a snapshot", target, e.id, start)
	}
	seq, err := e.s.Rewind(ctx, target)
	if err != nil {
		return nil, fmt.Errorf("rewind %s to position %d: %w", e.id, target, err)
	}
	resp.To, resp.Seq = target, seq
	resp.ImportSnapshot = d.importAfterRewind(e, target)
	resp.Session = d.view(e)
	return &resp, nil
}

// importAfterRewind brings back the import snapshot the state at position
// to was based on (undoing the rebases after it), and returns the import.
// to 0 (a restore) leaves it.
func (d *Daemon) importAfterRewind(e *entry, to uint64) string {
	e.mu.Lock()
	marks, imp := e.meta.ImportMarks, e.meta.Import
	e.mu.Unlock()
	if to == 0 {
		return imp
	}
	i := slices.IndexFunc(marks, func(m importMark) bool { return m.Seq >= to })
	if i < 0 {
		return imp
	}
	back := marks[i].Import
	if err := d.updateMeta(e, func(m *sessionMeta) {
		m.Import = back
		m.ImportMarks = slices.Clone(marks[:i])
	}); err != nil {
		d.log.Error("rewind: the import snapshot was not moved back", "session", e.id, "err", err)
		return imp
	}
	return back
}

// snapshotPosition finds the journal position a snapshot of the session
// was taken at, within its history.
func snapshotPosition(ctx context.Context, s *vfs.Session, id string) (uint64, bool, error) {
	var (
		pos   uint64
		found bool
	)
	err := s.History(ctx, s.HistoryStart(), math.MaxUint64, func(_ uint64, ev *vfs.Event) error {
		if ev.Op == vfs.OpSnapshotted && ev.Snapshot == id {
			pos, found = ev.Seq, true
		}
		return nil
	})
	return pos, found, err
}

// seqAtTime is the journal position of the session's state at time t:
// just after the last event at or before t.
func (d *Daemon) seqAtTime(ctx context.Context, e *entry, t time.Time) (uint64, error) {
	start := e.s.HistoryStart()
	info := e.s.Info()
	if t.Before(info.Created) {
		return 0, apiErr(api.CodeInvalidInput, "%s is before session %s was created (%s)", t.Format(time.RFC3339), e.id, info.Created.Format(time.RFC3339))
	}
	pos := start
	var first time.Time
	err := e.s.History(ctx, start, math.MaxUint64, func(seq uint64, ev *vfs.Event) error {
		at := time.UnixMilli(ev.Time).Add(time.Duration(ev.Ns))
		if first.IsZero() {
			first = at
		}
		if at.After(t) {
			return errStop
		}
		pos = seq
		return nil
	})
	if err != nil && err != errStop {
		return 0, err
	}
	if pos == start && start > 0 && !first.IsZero() && t.Before(first) {
		return 0, apiErr(api.CodeConflict, "%s is before the history session %s keeps (it starts %s); rewind to a later time or a snapshot", t.Format(time.RFC3339), e.id, first.Format(time.RFC3339))
	}
	return pos, nil
}

// errStop ends a history walk early.
var errStop = fmt.Errorf("stop")
