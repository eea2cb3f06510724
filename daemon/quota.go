package daemon

// This file holds what bounds a session — its quota — and what lets the
// store shrink again: deleting snapshots, and releasing a closed session's
// snapshots and the host import caches.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/policy"
)

// effectiveQuota is a session's quota: what it asked for (m.Quota) or the
// daemon's defaults, lowered by its policy's caps. Zero is no limit.
func (d *Daemon) effectiveQuota(pol *policy.Policy, m *sessionMeta) api.Quota {
	q := api.Quota{MaxBytes: d.cfg.MaxSessionBytes, MaxFiles: d.cfg.MaxSessionFiles, MaxSnapshots: int64(d.cfg.MaxSnapshots)}
	if m.Quota != nil {
		q.MaxBytes = orDefault(m.Quota.MaxBytes, q.MaxBytes)
		q.MaxFiles = orDefault(m.Quota.MaxFiles, q.MaxFiles)
		q.MaxSnapshots = orDefault(m.Quota.MaxSnapshots, q.MaxSnapshots)
	}
	q.MaxBytes = policy.Clamp(q.MaxBytes, pol.Caps.MaxSessionBytes)
	q.MaxFiles = policy.Clamp(q.MaxFiles, pol.Caps.MaxSessionFiles)
	return q
}

// quotaHook gives the repository each session's quota, as policyHook gives
// its policy: from its metadata, registered before the session exists.
func (d *Daemon) quotaHook(id string) vfs.Quota {
	d.mu.RLock()
	e := d.sessions[id]
	d.mu.RUnlock()
	if e == nil {
		q := d.effectiveQuota(policy.Default(), &sessionMeta{})
		return vfs.Quota{MaxBytes: q.MaxBytes, MaxNodes: q.MaxFiles}
	}
	e.mu.Lock()
	q := d.effectiveQuota(e.pol, e.meta)
	e.mu.Unlock()
	return vfs.Quota{MaxBytes: q.MaxBytes, MaxNodes: q.MaxFiles}
}

// inheritQuota is the quota a session asks for (sessionMeta.Quota): the
// fields req gives, and for each it leaves 0 (all of them when req is
// nil) from's — a fork's origin's, so that 0 means "as its origin"; for a
// new session from is nil and 0 stays 0, the daemon's default
// (effectiveQuota). -1 is no limit.
func inheritQuota(req, from *api.Quota) *api.Quota {
	if req == nil && from == nil {
		return nil
	}
	var q api.Quota
	if req != nil {
		q = *req
	}
	if from != nil {
		for _, f := range []struct{ v, from *int64 }{{&q.MaxBytes, &from.MaxBytes}, {&q.MaxFiles, &from.MaxFiles}, {&q.MaxSnapshots, &from.MaxSnapshots}} {
			if *f.v == 0 {
				*f.v = *f.from
			}
		}
	}
	return &q
}

// checkQuotaRequest vets the quota req a creation asks for, m being the
// session's metadata with its quota set (inheritQuota) and pol its
// policy. The admin may ask for anything (-1: no limit). Through a session
// token a quota only shrinks: -1 is refused, and so is a fork whose
// effective quota is above its origin's in any field — compared after
// inheritance and the policies' caps, so no spelling of the request (0,
// a field left out) can raise it.
func (d *Daemon) checkQuotaRequest(req *api.Quota, by Caller, src *entry, pol *policy.Policy, m *sessionMeta) error {
	fields := func(q api.Quota) []int64 { return []int64{q.MaxBytes, q.MaxFiles, q.MaxSnapshots} }
	names := []string{"max_bytes", "max_files", "max_snapshots"}
	if req != nil {
		for _, v := range fields(*req) {
			if v < -1 {
				return apiErr(api.CodeInvalidInput, "quota fields are a limit, 0 to inherit (a fork: its origin's; a new session: the daemon's default) or -1 for none")
			}
		}
	}
	if by.Admin {
		return nil
	}
	if req != nil {
		for i, v := range fields(*req) {
			if v == -1 {
				return apiErr(api.CodeForbidden, "a session token cannot lift quota.%s (-1 is no limit); leave it 0 and the fork keeps its origin's, or ask the admin", names[i])
			}
		}
	}
	limit := d.effectiveQuota(policy.Default(), &sessionMeta{})
	if src != nil {
		src.mu.Lock()
		limit = d.effectiveQuota(src.pol, src.meta)
		src.mu.Unlock()
	}
	got := fields(d.effectiveQuota(pol, m))
	for i, max := range fields(limit) {
		if max > 0 && (got[i] <= 0 || got[i] > max) {
			return apiErr(api.CodeForbidden, "a session token cannot raise quota.%s above %d, its session's; ask for less (0 keeps it), or ask the admin", names[i], max)
		}
	}
	return nil
}

// checkStagedQuota refuses a session whose starting point is already over
// its quota: every write would fail, which is better said at once.
func (d *Daemon) checkStagedQuota(ctx context.Context, pol *policy.Policy, m *sessionMeta) error {
	if m.Base == "" {
		return nil
	}
	snap, err := d.repo.Get(ctx, m.Base)
	if err != nil {
		return err
	}
	q := d.effectiveQuota(pol, m)
	nodes := int64(snap.Tree.Len() - 1)
	switch {
	case q.MaxBytes > 0 && snap.Record.Bytes > q.MaxBytes:
		return apiErr(api.CodeTooLarge, "the session would start with %d bytes of files, over its quota of %d; stage less (include/exclude globs) or ask for a larger quota.max_bytes (vfsd serve --max-session-bytes)", snap.Record.Bytes, q.MaxBytes)
	case q.MaxFiles > 0 && nodes > q.MaxFiles:
		return apiErr(api.CodeTooLarge, "the session would start with %d files, directories and symlinks, over its quota of %d; stage less or ask for a larger quota.max_files (vfsd serve --max-session-files)", nodes, q.MaxFiles)
	}
	return nil
}

// checkSnapshotQuota refuses a snapshot of e with an oversized label or
// beyond the session's snapshot quota. The caller holds e.snapMu.
func (d *Daemon) checkSnapshotQuota(ctx context.Context, e *entry, label string) error {
	if len(label) > d.cfg.MaxLabelBytes {
		return apiErr(api.CodeTooLarge, "the label is %d bytes; labels are at most %d", len(label), d.cfg.MaxLabelBytes)
	}
	e.mu.Lock()
	max := d.effectiveQuota(e.pol, e.meta).MaxSnapshots
	e.mu.Unlock()
	if max <= 0 {
		return nil
	}
	snaps, err := d.repo.List(ctx)
	if err != nil {
		return fmt.Errorf("count snapshots: %w", err)
	}
	n := int64(0)
	for _, s := range snaps {
		if e.took(s.Record) {
			n++
		}
	}
	if n >= max {
		return apiErr(api.CodeTooLarge, "session %s has %d snapshots, its quota; delete some first with DELETE /v1/sessions/%s/snapshots/{snap} (vfsd snapshot rm)", e.id, n, e.id)
	}
	return nil
}

// quotaView is a session's effective quota as the API shows it.
func (d *Daemon) quotaView(e *entry) *api.Quota {
	e.mu.Lock()
	defer e.mu.Unlock()
	q := d.effectiveQuota(e.pol, e.meta)
	return &q
}

// metaHolders names the sessions whose metadata holds snapshot id: as the
// snapshot they started from, or as their import snapshot (which apply
// and diffs need).
func (d *Daemon) metaHolders(id string) []string {
	d.mu.RLock()
	entries := make([]*entry, 0, len(d.sessions))
	for _, e := range d.sessions {
		entries = append(entries, e)
	}
	d.mu.RUnlock()
	var out []string
	for _, e := range entries {
		e.mu.Lock()
		held := e.meta.Base == id || e.meta.Import == id
		e.mu.Unlock()
		if held {
			out = append(out, "session "+e.id)
		}
	}
	slices.Sort(out)
	return out
}

// deleteSnapshots deletes snapshots by full ID unless a session holds one.
func (d *Daemon) deleteSnapshots(ctx context.Context, ids []string) (*api.DeleteSnapshotsResponse, error) {
	rep, err := d.repo.DeleteSnapshots(ctx, ids, snapshot.DeleteOptions{Holders: d.metaHolders})
	var inUse *snapshot.InUseError
	if errors.As(err, &inUse) {
		return nil, apiErr(api.CodeConflict, "%v", err)
	}
	if err != nil {
		return nil, err
	}
	d.log.Info("snapshots deleted", "snapshots", rep.Deleted)
	resp := &api.DeleteSnapshotsResponse{Deleted: rep.Deleted}
	if err := d.deleteRemoteSnapshots(ctx, rep.Deleted, resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// DeleteSnapshot deletes snapshot ref (an ID or a unique prefix) unless a
// session holds it, here and on the remote.
func (d *Daemon) DeleteSnapshot(ctx context.Context, ref string) (*api.DeleteSnapshotsResponse, error) {
	snap, err := d.snapshotByRef(ctx, ref)
	if err != nil {
		return nil, err
	}
	return d.deleteSnapshots(ctx, []string{snap.ID})
}

// DeleteSessionSnapshot deletes snapshot ref, which must have been taken
// of session id: what a session's own token may delete.
func (d *Daemon) DeleteSessionSnapshot(ctx context.Context, id, ref string) (*api.DeleteSnapshotsResponse, error) {
	e, err := d.lookup(id)
	if err != nil {
		return nil, err
	}
	snap, err := d.snapshotFor(ctx, callerOf(ctx), e, ref)
	if err != nil {
		return nil, err
	}
	if !e.took(snap.Record) {
		return nil, apiErr(api.CodeForbidden, "snapshot %s was not taken of session %s; a session deletes only its own snapshots (the admin deletes any with DELETE /v1/snapshots/{snap})", snap.ID[:12], e.id)
	}
	return d.deleteSnapshots(ctx, []string{snap.ID})
}

// releaseSnapshots deletes what a closed session leaves behind: the
// snapshots made for it (m.Owned), its import snapshot, and with purge
// (took not nil) every snapshot taken of it — each unless another session
// still holds it (the last session holding an import deletes it when it
// closes). The session must be gone from d.sessions already.
func (d *Daemon) releaseSnapshots(ctx context.Context, m *sessionMeta, took func(snapshot.Record) bool) {
	candidates := slices.Clone(m.Owned)
	if m.Import != "" {
		candidates = append(candidates, m.Import)
	}
	if took != nil {
		snaps, err := d.repo.List(ctx)
		if err != nil {
			d.log.Warn("purge: list snapshots", "session", m.ID, "err", err)
		}
		for _, s := range snaps {
			if took(s.Record) {
				candidates = append(candidates, s.ID)
			}
		}
	}
	slices.Sort(candidates)
	candidates = slices.Compact(candidates)
	var deleted []string
	for _, id := range candidates {
		rep, err := d.repo.DeleteSnapshots(ctx, []string{id}, snapshot.DeleteOptions{Holders: d.metaHolders})
		switch {
		case err == nil:
			deleted = append(deleted, rep.Deleted...)
		case errors.Is(err, vfs.ErrNotFound), errors.Is(err, vfs.ErrConflict):
			// Gone already, or still needed by another session.
		default:
			d.log.Warn("delete a closed session's snapshot", "session", m.ID, "snapshot", id, "err", err)
		}
	}
	if len(deleted) > 0 {
		d.log.Info("deleted a closed session's snapshots", "session", m.ID, "snapshots", deleted)
	}
}

// dropImportCaches forgets the host import caches when no session is left:
// what they remember was stored for sessions that are gone (GC has just
// collected it), and a cache the size of the last import is not worth
// keeping over an empty store. It returns how many cache files it removed.
func (d *Daemon) dropImportCaches() int {
	d.imMu.Lock()
	defer d.imMu.Unlock()
	d.mu.RLock()
	busy := len(d.sessions) > 0 // reserved sessions included: they may be importing
	d.mu.RUnlock()
	if busy {
		return 0
	}
	for k, im := range d.importers {
		if err := im.Close(); err != nil {
			d.log.Warn("close the host importer", "err", err)
		}
		delete(d.importers, k)
	}
	n := 0
	for _, name := range []string{"import.cache", "import-ascii.cache"} {
		if err := os.Remove(filepath.Join(d.cfg.DataDir, name)); err == nil {
			n++
		}
	}
	return n
}
