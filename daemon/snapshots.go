package daemon

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// snapshotByRef loads a snapshot by its ID or a unique prefix of it.
func (d *Daemon) snapshotByRef(ctx context.Context, ref string) (*snapshot.Snapshot, error) {
	ref = strings.TrimSpace(ref)
	id, err := d.repo.Resolve(ctx, ref)
	if d.fleet != nil && (err == nil || errors.Is(err, vfs.ErrNotFound)) {
		// Unique prefixes resolve against the fleet's snapshots too.
		if id, err = d.resolveFleet(ctx, ref, id); err != nil {
			return nil, err
		}
	}
	if err == nil {
		var snap *snapshot.Snapshot
		if snap, err = d.repo.Get(ctx, id); err == nil {
			return snap, nil
		}
	}
	if errors.Is(err, vfs.ErrNotFound) {
		return nil, apiErr(api.CodeNotFound, "%v; list the snapshots with vfsd snapshot list (GET /v1/snapshots)", err)
	}
	return nil, d.remoteErr(err)
}

// took reports whether rec is a snapshot taken of this incarnation of the
// session. Session IDs are reused, so the ID is not enough: the record must
// carry the incarnation's UID; a record from before UIDs existed counts only
// for metadata from then too, and only when taken after the session was
// created (an earlier session of the same ID was closed before that).
func (e *entry) took(rec snapshot.Record) bool {
	switch {
	case rec.Session != e.id:
		return false
	case rec.SessionUID != "":
		return rec.SessionUID == e.uid
	}
	return e.legacy > 0 && rec.Created > e.legacy
}

// sees reports whether session e's token reaches snap: one taken of this
// incarnation, or its base or import snapshot (a fork's base is the
// snapshot it was forked from).
func (e *entry) sees(snap *snapshot.Snapshot) bool {
	if e.took(snap.Record) {
		return true
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return snap.ID == e.meta.Base || snap.ID == e.meta.Import
}

// snapshotFor resolves ref, a snapshot ID or a unique prefix of one, for p
// acting on session e. The admin reaches every snapshot. A session token
// resolves ref among the snapshots its session sees only: any other
// answers exactly as a snapshot that does not exist, so that probing
// prefixes tells nothing of other sessions' snapshots.
func (d *Daemon) snapshotFor(ctx context.Context, p Caller, e *entry, ref string) (*snapshot.Snapshot, error) {
	if p.Admin {
		return d.snapshotByRef(ctx, ref)
	}
	ref = strings.TrimSpace(ref)
	prefix := strings.ToLower(ref)
	if len(prefix) < 4 || len(prefix) > 64 || strings.Trim(prefix, "0123456789abcdef") != "" {
		return nil, apiErr(api.CodeInvalidInput, "snapshot %q: give a snapshot ID, or a unique prefix of at least 4 hex digits", ref)
	}
	var ids []string
	if len(prefix) == 64 {
		ids = []string{prefix}
	} else if err := d.repo.Store().List(ctx, snapshot.Records, func(h vfs.Hash, _ int64) error {
		if s := h.String(); strings.HasPrefix(s, prefix) {
			ids = append(ids, s)
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("resolve snapshot %q: %w", ref, err)
	}
	var found []*snapshot.Snapshot
	for _, id := range ids {
		snap, err := d.repo.Get(ctx, id)
		if errors.Is(err, vfs.ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("resolve snapshot %q: %w", ref, err)
		}
		if e.sees(snap) {
			found = append(found, snap)
		}
	}
	switch len(found) {
	case 0:
		return nil, apiErr(api.CodeNotFound, "no snapshot %q that session %s reaches; list its snapshots with vfsd snapshot list --session %s (GET /v1/sessions/%s/snapshots)", ref, e.id, e.id, e.id)
	case 1:
		return found[0], nil
	}
	return nil, apiErr(api.CodeInvalidInput, "snapshot %q: ambiguous prefix among session %s's snapshots; give more hex digits", ref, e.id)
}

func snapshotView(s *snapshot.Snapshot) api.Snapshot {
	return api.Snapshot{ID: s.ID, Label: s.Record.Label, Session: s.Record.Session, Parent: s.Record.Parent,
		CreatedAt: s.Record.CreatedAt(), Files: s.Record.Files, Bytes: s.Record.Bytes, Manifests: s.ManifestCount(),
		SessionUID: s.Record.SessionUID}
}

// snapshotList lists the snapshots, newest first, that keep says to.
func (d *Daemon) snapshotList(ctx context.Context, keep func(*snapshot.Snapshot) bool) (*api.SnapshotList, error) {
	snaps, err := d.repo.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	out := &api.SnapshotList{Snapshots: []api.Snapshot{}}
	for _, s := range snaps {
		if keep(s) {
			out.Snapshots = append(out.Snapshots, snapshotView(s))
		}
	}
	return out, nil
}

// Snapshot takes a snapshot of session id, labelled label, after
// settling its mounts; progress, if not nil, receives the sealing's
// progress. The session's snapshot quota is checked first.
func (d *Daemon) Snapshot(ctx context.Context, id, label string, progress func(api.Progress)) (*api.Snapshot, error) {
	e, err := d.lookup(id)
	if err != nil {
		return nil, err
	}
	if err := d.fleetGate(ctx, e); err != nil {
		return nil, err
	}
	return d.snapshotSession(ctx, e, label, progress)
}

// snapshotSession is Snapshot of entry e, past the fleet's gate (a
// hand-off takes its snapshot while the session is frozen).
func (d *Daemon) snapshotSession(ctx context.Context, e *entry, label string, progress func(api.Progress)) (*api.Snapshot, error) {
	e.snapMu.Lock()
	defer e.snapMu.Unlock()
	if err := d.checkSnapshotQuota(ctx, e, label); err != nil {
		return nil, err
	}
	if err := d.settle(ctx, e); err != nil {
		return nil, err
	}
	snap, err := d.repo.Snapshot(progressFunc(progress).seals(ctx), e.s, label)
	if err != nil {
		return nil, err
	}
	d.afterSnapshot(snap)
	v := snapshotView(snap)
	return &v, nil
}

// SessionSnapshots lists the snapshots taken of session id, newest first:
// of this incarnation, not of an earlier session of the same ID.
func (d *Daemon) SessionSnapshots(ctx context.Context, id string) (*api.SnapshotList, error) {
	e, err := d.lookup(id)
	if err != nil {
		return nil, err
	}
	return d.snapshotList(ctx, func(s *snapshot.Snapshot) bool { return e.took(s.Record) })
}

// ListSnapshots lists the snapshots, newest first: all of them, or those
// taken of session when it is not "". With a remote, unless local, the
// fleet's pushed snapshots are listed too, with the daemon that pushed
// each (the fleet's index: see docs/fleets.md).
func (d *Daemon) ListSnapshots(ctx context.Context, session string, local bool) (*api.SnapshotList, error) {
	out, err := d.snapshotList(ctx, func(s *snapshot.Snapshot) bool { return session == "" || s.Record.Session == session })
	if err != nil || local || d.fleet == nil {
		return out, err
	}
	if err := d.fleetSnapshots(ctx, out); err != nil {
		return nil, err
	}
	if session != "" {
		out.Snapshots = slices.DeleteFunc(out.Snapshots, func(s api.Snapshot) bool { return s.Session != session })
	}
	return out, nil
}

// GetSnapshot describes snapshot ref (an ID or a unique prefix).
func (d *Daemon) GetSnapshot(ctx context.Context, ref string) (*api.Snapshot, error) {
	snap, err := d.snapshotByRef(ctx, ref)
	if err != nil {
		return nil, err
	}
	v := snapshotView(snap)
	return &v, nil
}

// Restore puts session id in the state of the snapshot req names.
func (d *Daemon) Restore(ctx context.Context, id string, req api.RestoreRequest) (*api.Session, error) {
	ref := req.Snapshot
	e, err := d.lookup(id)
	if err != nil {
		return nil, err
	}
	if err := d.fleetGate(ctx, e); err != nil {
		return nil, err
	}
	if ref == "" {
		return nil, apiErr(api.CodeInvalidInput, "snapshot is required: the ID (or a unique prefix) of the snapshot to restore")
	}
	snap, err := d.snapshotFor(ctx, callerOf(ctx), e, ref)
	if err != nil {
		return nil, err
	}
	if err := d.repo.Restore(ctx, e.s, snap.ID); err != nil {
		return nil, fmt.Errorf("restore %s to %s: %w", e.id, snap.ID[:12], err)
	}
	d.prefetch(snap.ID)
	v := d.view(e)
	return &v, nil
}

// GC collects the store's garbage: blobs and manifests no snapshot,
// session or call log references.
func (d *Daemon) GC(ctx context.Context) (*api.GCReport, error) {
	// What a session and its call log reference is known once they are
	// open: a collection opens every session not opened yet.
	for _, e := range d.entries() {
		if err := d.open(e); err != nil && !errors.Is(err, &api.Error{Code: api.CodeNotFound}) {
			return nil, fmt.Errorf("garbage collection: %w", err)
		}
	}
	rep, err := d.repo.GC(ctx)
	if err != nil {
		return nil, fmt.Errorf("garbage collection: %w", err)
	}
	return &api.GCReport{Snapshots: rep.Snapshots, Sessions: rep.Sessions, Marked: rep.Marked,
		Scanned: rep.Scanned, Deleted: rep.Deleted, DeletedBytes: rep.DeletedBytes, Kept: rep.Kept,
		Packs: rep.Packs, ImportCaches: d.dropImportCaches(),
		DurationMs: float64(rep.Duration.Microseconds()) / 1000}, nil
}
