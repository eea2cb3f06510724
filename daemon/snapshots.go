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
	return nil, err
}

// checkVisible refuses a session token a snapshot that is not its
// session's: one taken of it, its base or its import.
func checkVisible(p *principal, e *entry, snap *snapshot.Snapshot) error {
	if p == nil || p.admin {
		return nil
	}
	e.mu.Lock()
	base, imp := e.meta.Base, e.meta.Import
	e.mu.Unlock()
	if snap.Record.Session == e.id || snap.ID == base || snap.ID == imp {
		return nil
	}
	return apiErr(api.CodeForbidden, "snapshot %s was not taken of session %s; a session token reaches only its own session's snapshots", snap.ID[:12], e.id)
}

func snapshotView(s *snapshot.Snapshot) api.Snapshot {
	return api.Snapshot{ID: s.ID, Label: s.Record.Label, Session: s.Record.Session, Parent: s.Record.Parent,
		CreatedAt: s.Record.CreatedAt(), Files: s.Record.Files, Bytes: s.Record.Bytes, Manifests: s.Manifests}
}

// snapshotList lists the snapshots, newest first, of one session when
// session is not "".
func (d *Daemon) snapshotList(ctx context.Context, session string) (*api.SnapshotList, error) {
	snaps, err := d.repo.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	out := &api.SnapshotList{Snapshots: []api.Snapshot{}}
	for _, s := range snaps {
		if session == "" || s.Record.Session == session {
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
		snap, err := d.repo.Snapshot(progress.seals(r.Context()), e.s, req.Label)
		if err != nil {
			return nil, err
		}
		return snapshotView(snap), nil
	})
}

func (d *Daemon) handleSessionSnapshots(w http.ResponseWriter, r *http.Request) error {
	e, err := d.lookup(r.PathValue("id"))
	if err != nil {
		return err
	}
	list, err := d.snapshotList(r.Context(), e.id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}

func (d *Daemon) handleListSnapshots(w http.ResponseWriter, r *http.Request) error {
	list, err := d.snapshotList(r.Context(), r.URL.Query().Get("session"))
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
	snap, err := d.snapshotByRef(r.Context(), req.Snapshot)
	if err != nil {
		return err
	}
	if err := checkVisible(principalOf(r.Context()), e, snap); err != nil {
		return err
	}
	if err := d.repo.Restore(r.Context(), e.s, snap.ID); err != nil {
		return fmt.Errorf("restore %s to %s: %w", e.id, snap.ID[:12], err)
	}
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
