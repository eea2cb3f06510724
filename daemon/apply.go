package daemon

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/hostmount"
	"github.com/vfsd/vfsd/vfs"
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
	base, mounts, im, err := d.hostFolders(ctx, e, "to apply to")
	if err != nil {
		return nil, err
	}
	unresolved, err := d.unresolvedConflicts(ctx, e)
	if err != nil {
		return nil, err
	}
	if len(unresolved) > 0 && !req.DryRun && !req.AllowConflicts {
		return nil, apiErr(api.CodeConflict, "session %s has %d file(s) a rebase left conflict markers in (<<<<<<< session ... >>>>>>> host): %s; resolve them in the session (vfsd log %s -p shows the rebase; edit the files with the session's tools), or apply them as they are with vfsd apply %s --allow-conflicts",
			e.id, len(unresolved), strings.Join(firstN(unresolved, 5), ", "), e.id, e.id)
	}
	// A real apply snapshots the session and writes from that snapshot: a
	// tool call racing the apply is wholly in it or left for the next.
	rep, err := im.Apply(ctx, d.repo, base, e.s, mounts, hostmount.ApplyOptions{DryRun: req.DryRun, KeepSetID: req.KeepSetID})
	if err != nil {
		return nil, fmt.Errorf("apply %s: %w", e.id, err)
	}
	out := applyReport(rep)
	out.Unresolved = unresolved
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
// with what for ("to apply to") and why it has none. The caller holds
// e.hostMu.
func (d *Daemon) hostFolders(ctx context.Context, e *entry, what string) (string, []hostmount.Mount, *hostmount.Importer, error) {
	if err := d.settle(ctx, e); err != nil {
		return "", nil, nil, err
	}
	e.mu.Lock()
	base, mounts := e.meta.Import, e.meta.Mounts
	e.mu.Unlock()
	if base == "" || len(mounts) == 0 {
		return "", nil, nil, apiErr(api.CodeConflict, "session %s has no host folders %s: it was not staged from any (only a session created with host folders — vfsd session create --folder DIR — and the forks of such a live session have them; a fork of a snapshot, or of a session without folders, does not); read its changes with vfsd diff %s",
			e.id, what, e.id)
	}
	im, err := d.importer(e.pol.ASCIIOnly)
	if err != nil {
		return "", nil, nil, err
	}
	return base, mounts, im, nil
}

// conflictMarkers begin the lines a rebase's merge marks a conflict with
// (textdiff.Merge, labelled "session" and "host").
var conflictMarkers = []string{"<<<<<<< session", ">>>>>>> host"}

// unresolvedConflicts returns the files of session e a rebase left
// conflict markers in that still hold them, and forgets those that do
// not any more (edited, deleted, rewound past the rebase).
func (d *Daemon) unresolvedConflicts(ctx context.Context, e *entry) ([]string, error) {
	e.mu.Lock()
	paths := slices.Clone(e.meta.Conflicted)
	e.mu.Unlock()
	if len(paths) == 0 {
		return nil, nil
	}
	var still []string
	for _, wp := range paths {
		p, err := vfs.ParsePath(wp)
		if err != nil {
			continue
		}
		n, err := e.s.Stat(ctx, p)
		if err != nil || !n.IsFile() || n.Size > rebaseMergeMax+rebaseMergeMax/4 {
			continue // gone, or no longer the merged text
		}
		b, _, err := e.s.ReadFile(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("apply %s: read %s for conflict markers: %w", e.id, wp, err)
		}
		if holdsMarkers(string(b)) {
			still = append(still, wp)
		}
	}
	if len(still) < len(paths) {
		if err := d.updateMeta(e, func(m *sessionMeta) {
			m.Conflicted = slices.DeleteFunc(slices.Clone(m.Conflicted), func(p string) bool {
				return slices.Contains(paths, p) && !slices.Contains(still, p)
			})
		}); err != nil {
			return nil, err
		}
	}
	return still, nil
}

// holdsMarkers reports whether text has a line starting with a conflict
// marker.
func holdsMarkers(text string) bool {
	for line := range strings.SplitSeq(text, "\n") {
		for _, m := range conflictMarkers {
			if strings.HasPrefix(line, m) {
				return true
			}
		}
	}
	return false
}

// firstN returns at most n of ss, with "..." for the rest.
func firstN(ss []string, n int) []string {
	if len(ss) <= n {
		return ss
	}
	return append(slices.Clone(ss[:n]), "...")
}
