package daemon

import (
	"fmt"
	"net/http"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/hostmount"
)

// handleApply writes what changed in a session since its import back to
// the host folders it was staged from, refusing (and reporting) each path
// the host changed meanwhile. After a real apply that wrote everything, the
// session's current state becomes its import snapshot, so the next apply
// writes only what changes after this one.
func (d *Daemon) handleApply(w http.ResponseWriter, r *http.Request) error {
	e, err := d.lookup(r.PathValue("id"))
	if err != nil {
		return err
	}
	var req api.ApplyRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	e.hostMu.Lock()
	defer e.hostMu.Unlock()
	e.mu.Lock()
	base, mounts := e.meta.Import, e.meta.Mounts
	e.mu.Unlock()
	if base == "" || len(mounts) == 0 {
		return apiErr(api.CodeConflict, "session %s has no host folders to apply to: only sessions created with mounts (and their forks) can be applied; read its diff instead", e.id)
	}
	im, err := d.importer(e.pol.ASCIIOnly)
	if err != nil {
		return err
	}
	ctx := r.Context()
	// What a real apply writes is snapshotted first: it becomes the next
	// import base. (A tool call racing the apply may land after the
	// snapshot and still be written; the next apply then reports that
	// path as a conflict rather than write it twice.)
	var applied string
	if !req.DryRun {
		snap, err := d.repo.Snapshot(ctx, e.s, "apply")
		if err != nil {
			return fmt.Errorf("apply %s: %w", e.id, err)
		}
		applied = snap.ID
	}
	rep, err := im.Apply(ctx, d.repo, base, e.s, mounts, hostmount.ApplyOptions{DryRun: req.DryRun})
	if err != nil {
		return fmt.Errorf("apply %s: %w", e.id, err)
	}
	out := applyReport(rep)
	if !req.DryRun && len(rep.Conflicts) == 0 {
		if err := d.updateMeta(e, func(m *sessionMeta) { m.Import = applied }); err != nil {
			return err
		}
		out.ImportSnapshot = applied
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
