package snapshot

import (
	"context"
	"fmt"
	"time"

	"github.com/vfsd/vfsd/vfs"
)

// GCReport tells what a garbage collection did.
type GCReport struct {
	Snapshots    int           `json:"snapshots"`     // snapshots whose trees were marked
	Sessions     int           `json:"sessions"`      // live sessions whose trees were marked
	Marked       int           `json:"marked"`        // blobs found referenced
	Scanned      int           `json:"scanned"`       // blobs in the store
	Deleted      int           `json:"deleted"`       // blobs deleted
	DeletedBytes int64         `json:"deleted_bytes"` // their total size
	Kept         int           `json:"kept"`          // unreferenced but pinned: in use by a write in flight
	Packs        int           `json:"packs"`         // manifest packs of deleted snapshots dropped or rewritten
	Duration     time.Duration `json:"duration_ns"`
}

// sweepBatch is how many blobs one exclusive hold of the gc lock deletes:
// writers wait at most that long.
const sweepBatch = 64

// GC deletes every blob that no snapshot, live session or write in flight
// references (the empty blob always stays), and the manifests that
// deleted snapshots left behind once no snapshot uses them. It never deletes a referenced blob, however it races with
// writers: blobs pinned since the collection started are kept, and deletes
// happen under the lock every Put holds until its blob is pinned.
func (r *Repo) GC(ctx context.Context) (GCReport, error) {
	start := time.Now()
	r.gcRun.Lock()
	defer r.gcRun.Unlock()

	r.pins.mu.Lock()
	r.pins.fresh = make(map[vfs.Hash]struct{}, len(r.pins.counts))
	for h := range r.pins.counts {
		r.pins.fresh[h] = struct{}{}
	}
	r.pins.mu.Unlock()
	defer func() {
		r.pins.mu.Lock()
		r.pins.fresh, r.pins.freshSnaps = nil, nil
		r.pins.mu.Unlock()
	}()

	var rep GCReport
	packs, err := r.collectPacks(ctx)
	if err != nil {
		return rep, fmt.Errorf("gc: manifest packs: %w", err)
	}
	rep.Packs = packs
	m := &marker{r: r, marked: map[vfs.Hash]struct{}{vfs.EmptyHash: {}}, seenDirs: make(map[vfs.Hash]struct{})}
	snaps, err := r.List(ctx)
	if err != nil {
		return rep, fmt.Errorf("gc: list snapshots: %w", err)
	}
	for _, snap := range snaps {
		if err := m.snapshot(ctx, snap); err != nil {
			return rep, fmt.Errorf("gc: %w", err)
		}
		rep.Snapshots++
	}
	// What a session references is in its journal and upper files: every
	// session must be open, and one that cannot be fails the collection
	// (nothing it may reference is deleted).
	sessions, err := r.OpenSessions()
	if err != nil {
		return rep, fmt.Errorf("gc: %w", err)
	}
	for _, s := range sessions {
		if err := s.WalkBlobRefs(m.mark); err != nil {
			return rep, fmt.Errorf("gc: session %s: %w", s.ID(), err)
		}
		rep.Sessions++
	}
	rep.Marked = len(m.marked)

	var garbage []vfs.Hash
	err = r.store.List(ctx, Blobs, func(h vfs.Hash, _ int64) error {
		rep.Scanned++
		if _, ok := m.marked[h]; !ok {
			garbage = append(garbage, h)
		}
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("gc: list blobs: %w", err)
	}
	for len(garbage) > 0 {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		n := min(sweepBatch, len(garbage))
		if err := r.sweep(ctx, garbage[:n], m, &rep); err != nil {
			return rep, err
		}
		garbage = garbage[n:]
	}
	rep.Duration = time.Since(start)
	return rep, nil
}

// sweep deletes a batch of unreferenced blobs, skipping any pinned since the
// collection began or referenced by a snapshot recorded since.
func (r *Repo) sweep(ctx context.Context, batch []vfs.Hash, m *marker, rep *GCReport) error {
	r.gc.Lock()
	defer r.gc.Unlock()
	r.pins.mu.Lock()
	defer r.pins.mu.Unlock()
	for _, snap := range r.pins.freshSnaps {
		if err := m.snapshot(ctx, snap); err != nil {
			return err
		}
	}
	r.pins.freshSnaps = r.pins.freshSnaps[:0]
	for _, h := range batch {
		_, marked := m.marked[h]
		if _, fresh := r.pins.fresh[h]; fresh || marked || r.pins.counts[h] > 0 {
			rep.Kept++
			continue
		}
		size, err := r.store.Stat(ctx, Blobs, h)
		if err != nil {
			continue
		}
		if err := r.store.Delete(ctx, Blobs, h); err != nil {
			return fmt.Errorf("gc: delete %s: %w", h.Short(), err)
		}
		rep.Deleted++
		rep.DeletedBytes += size
	}
	return nil
}

// marker collects the blobs a collection must keep.
type marker struct {
	r        *Repo
	marked   map[vfs.Hash]struct{}
	seenDirs map[vfs.Hash]struct{}
}

func (m *marker) mark(h vfs.Hash) { m.marked[h] = struct{}{} }

// snapshot marks the blobs of snap's tree, read from its manifests,
// skipping directories whose manifest was seen already: snapshots share
// most of their directories.
func (m *marker) snapshot(ctx context.Context, snap *Snapshot) error {
	return m.r.walkManifests(ctx, snap, m.seenDirs, nil, func(n vfs.Node) {
		if !n.Blob.IsZero() {
			m.mark(n.Blob)
		}
	})
}
