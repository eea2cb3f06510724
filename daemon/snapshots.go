package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// snapshotByRef loads a snapshot by its ID or a unique prefix of it.
func (d *Daemon) snapshotByRef(ctx context.Context, ref string) (*snapshot.Snapshot, error) {
	id, err := d.repo.Resolve(ctx, strings.TrimSpace(ref))
	if err == nil {
		var snap *snapshot.Snapshot
		if snap, err = d.repo.Get(ctx, id); err == nil {
			return snap, nil
		}
	}
	if errors.Is(err, vfs.ErrNotFound) {
		return nil, apiErr(api.CodeNotFound, "%v; list the snapshots with GET /v1/snapshots (vfsd snapshot list)", err)
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
func (d *Daemon) snapshotFor(ctx context.Context, p *principal, e *entry, ref string) (*snapshot.Snapshot, error) {
	if p == nil || p.admin {
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
		return nil, apiErr(api.CodeNotFound, "no snapshot %q that session %s reaches; list its snapshots with GET /v1/sessions/%s/snapshots (vfsd snapshot list)", ref, e.id, e.id)
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

func (d *Daemon) handleCreateSnapshot(w http.ResponseWriter, r *http.Request) error {
	e, err := d.lookup(r.PathValue("id"))
	if err != nil {
		return err
	}
	var req api.SnapshotRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	e.snapMu.Lock()
	defer e.snapMu.Unlock()
	if err := d.checkSnapshotQuota(r.Context(), e, req.Label); err != nil {
		return err
	}
	return respondWithProgress(w, r, http.StatusCreated, func(progress progressFunc) (any, error) {
		if err := d.settle(r.Context(), e); err != nil {
			return nil, err
		}
		snap, err := d.repo.Snapshot(progress.seals(r.Context()), e.s, req.Label)
		if err != nil {
			return nil, err
		}
		d.afterSnapshot(snap)
		return snapshotView(snap), nil
	})
}

func (d *Daemon) handleSessionSnapshots(w http.ResponseWriter, r *http.Request) error {
	e, err := d.lookup(r.PathValue("id"))
	if err != nil {
		return err
	}
	// This incarnation's: not those of an earlier session of the same ID.
	list, err := d.snapshotList(r.Context(), func(s *snapshot.Snapshot) bool { return e.took(s.Record) })
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}

func (d *Daemon) handleListSnapshots(w http.ResponseWriter, r *http.Request) error {
	session := r.URL.Query().Get("session")
	list, err := d.snapshotList(r.Context(), func(s *snapshot.Snapshot) bool { return session == "" || s.Record.Session == session })
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}

func (d *Daemon) handleGetSnapshot(w http.ResponseWriter, r *http.Request) error {
	snap, err := d.snapshotByRef(r.Context(), r.PathValue("snap"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, snapshotView(snap))
	return nil
}

func (d *Daemon) handleRestore(w http.ResponseWriter, r *http.Request) error {
	e, err := d.lookup(r.PathValue("id"))
	if err != nil {
		return err
	}
	var req api.RestoreRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	if req.Snapshot == "" {
		return apiErr(api.CodeInvalidInput, "snapshot is required: the ID (or a unique prefix) of the snapshot to restore")
	}
	snap, err := d.snapshotFor(r.Context(), principalOf(r.Context()), e, req.Snapshot)
	if err != nil {
		return err
	}
	if err := d.repo.Restore(r.Context(), e.s, snap.ID); err != nil {
		return fmt.Errorf("restore %s to %s: %w", e.id, snap.ID[:12], err)
	}
	d.prefetch(snap.ID)
	writeJSON(w, http.StatusOK, d.view(e))
	return nil
}

// handleFork forks a live session ({id}) or a snapshot ({snap}) into a new
// session; the body is a CreateSessionRequest without mounts, base or fork.
func (d *Daemon) handleFork(w http.ResponseWriter, r *http.Request) error {
	var req api.CreateSessionRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	if len(req.Mounts) > 0 || req.Base != "" || req.Fork != "" {
		return apiErr(api.CodeInvalidInput, "a fork starts from what the URL names; leave mounts, base and fork out")
	}
	if id := r.PathValue("id"); id != "" {
		req.Fork = id
	} else {
		req.Base = r.PathValue("snap")
	}
	resp, err := d.createSession(r.Context(), req, principalOf(r.Context()), nil)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, resp)
	return nil
}

func (d *Daemon) handleGC(w http.ResponseWriter, r *http.Request) error {
	// What a session and its call log reference is known once they are
	// open: a collection opens every session not opened yet.
	for _, e := range d.entries() {
		if err := d.open(e); err != nil && !errors.Is(err, &api.Error{Code: api.CodeNotFound}) {
			return fmt.Errorf("garbage collection: %w", err)
		}
	}
	rep, err := d.repo.GC(r.Context())
	if err != nil {
		return fmt.Errorf("garbage collection: %w", err)
	}
	writeJSON(w, http.StatusOK, api.GCReport{Snapshots: rep.Snapshots, Sessions: rep.Sessions, Marked: rep.Marked,
		Scanned: rep.Scanned, Deleted: rep.Deleted, DeletedBytes: rep.DeletedBytes, Kept: rep.Kept,
		Packs: rep.Packs, ImportCaches: d.dropImportCaches(),
		DurationMs: float64(rep.Duration.Microseconds()) / 1000})
	return nil
}
