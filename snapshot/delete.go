package snapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/vfsd/vfsd/vfs"
)

// DeleteOptions tune DeleteSnapshots.
type DeleteOptions struct {
	// Holders, if set, names what else holds a snapshot (besides the
	// repository's live sessions, which are always asked): a daemon's
	// session metadata, say. A held snapshot is not deleted.
	Holders func(id string) []string
}

// DeleteReport tells what DeleteSnapshots did.
type DeleteReport struct {
	Deleted []string `json:"deleted"` // the snapshots deleted
	// Kept is how many manifests of the deleted records later snapshots
	// still use, moved to a manifest pack.
	Kept int `json:"kept_manifests"`
}

// InUseError refuses to delete snapshots that live sessions (or what
// DeleteOptions.Holders names) still need. It matches vfs.ErrConflict.
type InUseError struct {
	// Holders maps each refused snapshot to what holds it.
	Holders map[string][]string
}

// Error names the snapshots and their holders.
func (e *InUseError) Error() string {
	ids := make([]string, 0, len(e.Holders))
	for id := range e.Holders {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "snapshot %s is in use by %s", short(id), strings.Join(e.Holders[id], ", "))
	}
	b.WriteString(": close those sessions first (a session needs the snapshot it started from, and its import snapshot)")
	return b.String()
}

// Is makes errors.Is(err, vfs.ErrConflict) match.
func (e *InUseError) Is(target error) bool { return target == vfs.ErrConflict }

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// DeleteSnapshots deletes the snapshots ids (full IDs): their records go at
// once, and the blobs only they referenced go at the next GC. It deletes
// all of them or none: an unknown ID fails with vfs.ErrNotFound, and a
// snapshot a live session needs (see vfs.Session.Snapshots) or that
// opts.Holders names fails with an *InUseError.
//
// A snapshot's record also stores the directory manifests it was the first
// to write, which later snapshots share. Those still used by a remaining
// snapshot are moved into a manifest pack before the record is deleted, so
// deleting a snapshot never damages another; GC drops a pack once nothing
// uses it.
func (r *Repo) DeleteSnapshots(ctx context.Context, ids []string, opts DeleteOptions) (*DeleteReport, error) {
	r.gcRun.Lock()
	defer r.gcRun.Unlock()
	r.records.Lock()
	defer r.records.Unlock()

	doomed := make(map[vfs.Hash]bool, len(ids))
	for _, id := range ids {
		if _, err := r.Get(ctx, id); err != nil {
			return nil, err
		}
		h, _ := vfs.ParseHash(id)
		doomed[h] = true
	}
	if err := r.checkUnheld(ctx, ids, opts.Holders); err != nil {
		return nil, err
	}
	rep := &DeleteReport{Deleted: []string{}}
	if len(doomed) == 0 {
		return rep, nil
	}
	snaps, err := r.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("delete snapshots: %w", err)
	}
	needed, seen := make(map[vfs.Hash]bool), make(map[vfs.Hash]struct{})
	for _, snap := range snaps {
		if h, _ := vfs.ParseHash(snap.ID); !doomed[h] {
			if err := r.neededBy(ctx, snap, needed, seen); err != nil {
				return nil, fmt.Errorf("delete snapshots: %w", err)
			}
		}
	}
	if err := r.dropRecords(ctx, doomed, needed, rep); err != nil {
		return nil, fmt.Errorf("delete snapshots: %w", err)
	}
	for h := range doomed {
		rep.Deleted = append(rep.Deleted, h.String())
	}
	sort.Strings(rep.Deleted)
	return rep, nil
}

// checkUnheld fails with an *InUseError if a live session or holders holds
// one of ids.
func (r *Repo) checkUnheld(ctx context.Context, ids []string, holders func(string) []string) error {
	held := make(map[string][]string)
	needs, err := r.sessionSnapshots(ctx)
	if err != nil {
		return fmt.Errorf("delete snapshots: %w", err)
	}
	for _, sid := range slices.Sorted(maps.Keys(needs)) {
		for _, id := range needs[sid] {
			if slices.Contains(ids, id) {
				held[id] = append(held[id], "session "+sid)
			}
		}
	}
	if holders != nil {
		for _, id := range ids {
			for _, h := range holders(id) {
				if !slices.Contains(held[id], h) {
					held[id] = append(held[id], h)
				}
			}
		}
	}
	if len(held) > 0 {
		return &InUseError{Holders: held}
	}
	return nil
}

// neededBy adds every manifest snap's tree uses to needed. A manifest
// already in needed is not entered again: its subtree's manifests are
// there too, so snapshots sharing most directories cost what differs.
// seen, shared by the calls for one set of snapshots, holds what was
// entered already.
func (r *Repo) neededBy(ctx context.Context, snap *Snapshot, needed map[vfs.Hash]bool, seen map[vfs.Hash]struct{}) error {
	return r.walkManifests(ctx, snap, seen, func(h vfs.Hash) { needed[h] = true }, nil)
}

// dropRecords deletes the Records objects doomed after moving the manifests
// they are the index's source of and that needed lists into a new pack.
// The caller holds r.records exclusively.
func (r *Repo) dropRecords(ctx context.Context, doomed, needed map[vfs.Hash]bool, rep *DeleteReport) error {
	var keep []packEntry
	kept := make(map[vfs.Hash]bool)
	for id := range doomed {
		b, err := r.readObject(ctx, Records, id)
		if errors.Is(err, vfs.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		start := len(packFormat) + 1
		if !isPack(b) {
			rest := b[len(recordFormat)+1:]
			start = len(recordFormat) + 1 + bytes.IndexByte(rest, '\n') + 1
		}
		r.mu.Lock()
		err = decodePackEntries(b, start, func(h vfs.Hash, off, n int) {
			loc, ok := r.index[h]
			if !needed[h] || kept[h] || (ok && !doomed[loc.record]) {
				return // not needed, or stored in a record that stays
			}
			kept[h] = true
			keep = append(keep, packEntry{hash: h, data: b[off : off+n]})
		})
		r.mu.Unlock()
		if err != nil {
			return fmt.Errorf("record %s: %w", id.Short(), err)
		}
	}
	var packID vfs.Hash
	var packBytes []byte
	if len(keep) > 0 {
		sort.Slice(keep, func(i, j int) bool { return bytes.Compare(keep[i].hash[:], keep[j].hash[:]) < 0 })
		packBytes = encodePack(keep)
		h, _, err := r.store.Put(ctx, Records, bytes.NewReader(packBytes), PutOptions{})
		if err != nil {
			return fmt.Errorf("store a manifest pack: %w", err)
		}
		packID = h
		doomed = without(doomed, packID) // never delete the pack just written
	}
	r.mu.Lock()
	for id := range doomed {
		r.unindexLocked(id)
	}
	r.mu.Unlock()
	if packBytes != nil {
		if _, _, err := r.indexRecord(packID, packBytes); err != nil && !errors.Is(err, errIsPack) {
			return err
		}
	}
	for id := range doomed {
		if err := r.store.Delete(ctx, Records, id); err != nil {
			return err
		}
	}
	rep.Kept += len(keep)
	return r.store.Sync(ctx)
}

// without returns doomed without h.
func without(doomed map[vfs.Hash]bool, h vfs.Hash) map[vfs.Hash]bool {
	if !doomed[h] {
		return doomed
	}
	out := make(map[vfs.Hash]bool, len(doomed))
	for k := range doomed {
		if k != h {
			out[k] = true
		}
	}
	return out
}

// collectPacks drops the manifest packs no snapshot needs any more, and
// rewrites those only partly needed. It returns how many Records objects it
// deleted.
func (r *Repo) collectPacks(ctx context.Context) (int, error) {
	r.records.Lock()
	defer r.records.Unlock()
	snaps, err := r.List(ctx) // indexes every record, packs included
	if err != nil {
		return 0, err
	}
	r.mu.Lock()
	var packs []vfs.Hash
	for h := range r.packs {
		packs = append(packs, h)
	}
	r.mu.Unlock()
	if len(packs) == 0 {
		return 0, nil
	}
	needed, seen := make(map[vfs.Hash]bool), make(map[vfs.Hash]struct{})
	for _, snap := range snaps {
		if err := r.neededBy(ctx, snap, needed, seen); err != nil {
			return 0, err
		}
	}
	doomed := make(map[vfs.Hash]bool)
	for _, p := range packs {
		b, err := r.readObject(ctx, Records, p)
		if err != nil {
			if errors.Is(err, vfs.ErrNotFound) {
				continue
			}
			return 0, err
		}
		all := true
		_ = decodePackEntries(b, len(packFormat)+1, func(h vfs.Hash, _, _ int) {
			all = all && needed[h]
		})
		if !all {
			doomed[p] = true
		}
	}
	if len(doomed) == 0 {
		return 0, nil
	}
	var rep DeleteReport
	if err := r.dropRecords(ctx, doomed, needed, &rep); err != nil {
		return 0, err
	}
	return len(doomed), nil
}
