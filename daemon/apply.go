package daemon

import (
	"context"
	"fmt"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/hostmount"
)

// Apply writes what changed in a session since its import back to
// the host folders it was staged from, refusing (and reporting) each path
// the host changed meanwhile or would not take. The answer is always the
// whole report: a change that fails half-way is a conflict with its
// reason, not an error. After a real apply the session's import snapshot
// advances by exactly what was applied (to the session's state when
// everything was), so the next apply writes only what is left or changes
// later.
func (d *Daemon) Apply(ctx context.Context, id string, req api.ApplyRequest) (*api.ApplyReport, error) {
	e, err := d.lookup(id)
	if err != nil {
		return nil, err
	}
	e.hostMu.Lock()
	defer e.hostMu.Unlock()
	base, mounts, im, err := d.hostFolders(ctx, e, "to apply to: only sessions created with mounts (and their forks) can be applied; read its diff instead")
	if err != nil {
		return nil, err
	}
	// A real apply snapshots the session and writes from that snapshot: a
	// tool call racing the apply is wholly in it or left for the next.
	rep, err := im.Apply(ctx, d.repo, base, e.s, mounts, hostmount.ApplyOptions{DryRun: req.DryRun, KeepSetID: req.KeepSetID})
	if err != nil {
		return nil, fmt.Errorf("apply %s: %w", e.id, err)
	}
	out := applyReport(rep)
	if !req.DryRun && rep.Import != "" {
		if rep.Import != base {
			if err := d.updateMeta(e, func(m *sessionMeta) { m.Import = rep.Import }); err != nil {
				return nil, err
			}
		}
		out.ImportSnapshot = rep.Import
	}
	return &out, nil
}

// hostFolders settles session e's mounts and returns what an operation on
// its host folders starts from: its import snapshot, its folders and the
// importer for its policy. A session without folders is a conflict, said
// with why (the end of the sentence "session ID has no host folders ...").
// The caller holds e.hostMu.
func (d *Daemon) hostFolders(ctx context.Context, e *entry, why string) (string, []hostmount.Mount, *hostmount.Importer, error) {
	if err := d.settle(ctx, e); err != nil {
		return "", nil, nil, err
	}
	e.mu.Lock()
	base, mounts := e.meta.Import, e.meta.Mounts
	e.mu.Unlock()
	if base == "" || len(mounts) == 0 {
		return "", nil, nil, apiErr(api.CodeConflict, "session %s has no host folders %s", e.id, why)
	}
	im, err := d.importer(e.pol.ASCIIOnly)
	if err != nil {
		return "", nil, nil, err
	}
	return base, mounts, im, nil
}
