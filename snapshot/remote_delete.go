package snapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/vfsd/vfsd/vfs"
)

// DeleteRemote deletes the records of snapshots ids (full IDs) from the
// remote, so that remote garbage collection (RemoteGC) may then collect
// the blobs only they referenced, once older than its grace period. It
// returns the IDs whose record the remote held; a snapshot never pushed is
// skipped.
//
// A record also holds the directory manifests its snapshot was the first to
// write, which other snapshots in the remote (children pushed by any daemon,
// possibly while this runs) may share. They are first stored in the remote
// as a manifest pack, so deleting a snapshot never damages another. Remote
// garbage collection keeps packs: they hold only manifests (a few hundred
// bytes per directory) and keep no blob alive, as only snapshot records
// are its roots.
//
// It does not delete the local record: DeleteSnapshots does, and callers
// run it first (it refuses snapshots a session still holds).
func (r *Repo) DeleteRemote(ctx context.Context, ids []string) ([]string, error) {
	l := r.remote
	if l == nil {
		return nil, errNoRemote
	}
	var deleted []string
	for _, id := range ids {
		h, err := vfs.ParseHash(id)
		if err != nil {
			return deleted, &vfs.Error{Op: "delete remote snapshot", Path: id, Code: vfs.CodeInvalid, Msg: "not a full snapshot ID"}
		}
		b, err := l.readAll(ctx, Records, h)
		if errors.Is(err, vfs.ErrNotFound) {
			l.forget(Records, h)
			continue // never pushed, or deleted already
		}
		if err != nil {
			return deleted, l.errRemote(Records, h, err)
		}
		if isPack(b) {
			return deleted, &vfs.Error{Op: "delete remote snapshot", Path: id, Code: vfs.CodeInvalid, Msg: "a manifest pack, not a snapshot"}
		}
		var keep []packEntry
		if _, err := decodeRecord(b, func(mh vfs.Hash, off, n int) {
			keep = append(keep, packEntry{hash: mh, data: b[off : off+n]})
		}); err != nil {
			return deleted, fmt.Errorf("remote record %s: %w", h.Short(), err)
		}
		if len(keep) > 0 {
			sort.Slice(keep, func(i, j int) bool { return bytes.Compare(keep[i].hash[:], keep[j].hash[:]) < 0 })
			// Absent: written whatever the remote holds under the pack's
			// name, so that no planted object stands in for it when the
			// record goes.
			info, err := putInfo(ctx, l.store, Records, bytes.NewReader(encodePack(keep)), PutOptions{Absent: true})
			if err != nil {
				return deleted, fmt.Errorf("delete remote snapshot %s: store its manifests as a pack: %w", h.Short(), err)
			}
			l.markGood(objKey{Records, info.Hash}, info.Size, etagOf(info.ETag), true)
		}
		if err := l.store.Delete(ctx, Records, h); err != nil && !errors.Is(err, vfs.ErrNotFound) {
			return deleted, fmt.Errorf("delete remote snapshot %s: %w", h.Short(), err)
		}
		l.forget(Records, h)
		deleted = append(deleted, id)
	}
	return deleted, nil
}
