package daemon

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/snapshot/s3store"
	"github.com/vfsd/vfsd/vfs"
)

// linkRemote opens Config.Remote, if set, and links the repository to it:
// snapshots are pushed to it after they are taken, and snapshots, manifests
// and blobs missing locally are fetched from it (see snapshot.SetRemote).
// The remote's push queue and cache list live in DataDir/remote.
func (d *Daemon) linkRemote(ctx context.Context) error {
	if d.cfg.Remote == "" {
		return nil
	}
	cfg, err := s3store.ParseURL(d.cfg.Remote)
	if err != nil {
		return fmt.Errorf("--remote: %w", err)
	}
	cfg.TempDir = filepath.Join(d.cfg.DataDir, "store", "tmp")
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	remote, err := s3store.Open(octx, cfg)
	if err != nil {
		return fmt.Errorf("--remote: %w", err)
	}
	d.remoteURL = cfg.String()
	if err := d.startFleet(remote.Coord()); err != nil {
		return fmt.Errorf("--remote: fleet: %w", err)
	}
	return d.repo.SetRemote(remote, snapshot.RemoteOptions{
		OnPushed:        d.afterPush,
		CacheBytes:      d.cfg.RemoteCacheBytes,
		Grace:           d.cfg.RemoteGrace,
		GCMaxEntries:    d.cfg.RemoteGCMaxEntries,
		GCMaxSpoolBytes: d.cfg.RemoteGCMaxSpoolBytes,
		StateDir:        filepath.Join(d.cfg.DataDir, "remote"),
		Logger:          d.log,
	})
}

// afterSnapshot queues a new snapshot for a background push when the
// daemon has a remote: the snapshot's caller does not wait for the remote.
func (d *Daemon) afterSnapshot(snap *snapshot.Snapshot) {
	if d.repo.Remote() == nil {
		return
	}
	if err := d.repo.QueuePush(snap.ID); err != nil {
		d.log.Warn("remote: could not queue the push", "snapshot", snap.ID, "err", err)
	}
}

// prefetch fetches, in the background, the manifests and blobs of snapshot
// base that are not local yet: the snapshot a session was just forked from
// or restored to. With the manifests local, no later call of the session
// waits on the remote for a directory; the blobs come while the cache has
// room, the rest on first read.
func (d *Daemon) prefetch(base string) {
	if d.repo.Remote() == nil || base == "" {
		return
	}
	d.bgMu.Lock()
	defer d.bgMu.Unlock()
	select {
	case <-d.stopping:
		return
	default:
	}
	d.bg.Add(1)
	go func() {
		defer d.bg.Done()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			select {
			case <-d.stopping:
				cancel()
			case <-ctx.Done():
			}
		}()
		n, err := d.repo.Prefetch(ctx, base)
		if err != nil && ctx.Err() == nil {
			d.log.Warn("remote: prefetch stopped; the rest is fetched on first read", "snapshot", base, "fetched", n, "err", err)
			return
		}
		d.log.Debug("remote: prefetched", "snapshot", base, "blobs", n)
	}()
}

// remoteErr turns a failure of the remote into an unavailable error.
func (d *Daemon) remoteErr(err error) error {
	if err != nil && d.repo.Remote() != nil && vfs.CodeOf(err) == vfs.CodeIO {
		return apiErr(api.CodeUnavailable, "%v", err)
	}
	return err
}

// Push uploads snapshot ref (an ID or a unique prefix) to the remote.
func (d *Daemon) Push(ctx context.Context, ref string) (*api.PushReport, error) {
	if d.repo.Remote() == nil {
		return nil, apiErr(api.CodeUnavailable, "this daemon has no remote; start vfsd serve with --remote s3://BUCKET/PREFIX?endpoint=HOST:PORT")
	}
	snap, err := d.snapshotByRef(ctx, ref)
	if err != nil {
		return nil, err
	}
	rep, err := d.repo.Push(ctx, snap.ID)
	if err != nil {
		return nil, apiErr(api.CodeUnavailable, "%v; what was uploaded stays, so pushing again sends only the rest", err)
	}
	d.afterPush(ctx, snap.ID)
	return apiPushReport(rep), nil
}

// apiPushReport is a push report on the wire.
func apiPushReport(rep snapshot.PushReport) *api.PushReport {
	return &api.PushReport{Snapshot: rep.Snapshot, Blobs: rep.Blobs, Records: rep.Records,
		Uploaded: rep.Uploaded, UploadedBlobs: rep.UploadedBlobs, UploadedBytes: rep.UploadedBytes,
		UploadedManifests: rep.UploadedManifests, Present: rep.Present,
		Verified: rep.Verified, Repaired: rep.Repaired, Rewritten: rep.Rewritten, Unrepaired: rep.Unrepaired,
		UploadedPacks: rep.UploadedPacks, UploadedRecords: rep.UploadedRecords,
		DurationMs: float64(rep.Duration.Microseconds()) / 1000}
}

// RemoteStatus says what the daemon's remote holds for it: pushes pending
// and done, and its cache of fetched blobs.
func (d *Daemon) RemoteStatus(ctx context.Context) *api.RemoteStatus {
	out := &api.RemoteStatus{URL: d.remoteURL, Pending: []string{}}
	if d.repo.Remote() != nil {
		st, cs := d.repo.PushStatus(), d.repo.RemoteCache()
		out.Pending, out.LastPush, out.LastError = st.Pending, st.LastPush, st.LastError
		out.CacheBlobs, out.CacheBytes, out.CacheLimit = cs.Blobs, cs.Bytes, cs.Limit
		out.Fetched, out.Uploaded = cs.Fetched, cs.Uploaded
		if st.LastReport != nil {
			out.LastPushReport = apiPushReport(*st.LastReport)
		}
	}
	if out.Pending == nil {
		out.Pending = []string{}
	}
	return out
}

// RemoteGC collects the remote's garbage: what no snapshot there
// references, past a grace period.
func (d *Daemon) RemoteGC(ctx context.Context) (*api.RemoteGCReport, error) {
	if d.repo.Remote() == nil {
		return nil, apiErr(api.CodeUnavailable, "this daemon has no remote; start vfsd serve with --remote s3://BUCKET/PREFIX?endpoint=HOST:PORT")
	}
	rep, err := d.repo.RemoteGC(ctx)
	if errors.Is(err, vfs.ErrInvalid) {
		return nil, apiErr(api.CodeInvalidInput, "%v", err)
	}
	if errors.Is(err, snapshot.ErrRemoteGCRefused) {
		return nil, apiErr(api.CodeConflict, "%v (vfsd serve --remote-gc-max-entries, --remote-gc-max-spool raise the bounds)", err)
	}
	if err != nil {
		return nil, apiErr(api.CodeUnavailable, "remote garbage collection: %v; nothing was deleted past what the report of a rerun shows", err)
	}
	return &api.RemoteGCReport{Snapshots: rep.Snapshots, Marked: rep.Marked, Scanned: rep.Scanned,
		Deleted: rep.Deleted, DeletedBytes: rep.DeletedBytes, Young: rep.Young, Packs: rep.Packs,
		Skipped: rep.Skipped, SkippedWhy: rep.SkippedWhy, DeleteFailed: rep.DeleteFailed, DeleteError: rep.DeleteError,
		BlobPacks: rep.BlobPacks, PacksDeleted: rep.PacksDeleted, PacksRepacked: rep.PacksRepacked,
		GraceS: rep.Grace.Seconds(), DurationMs: float64(rep.Duration.Microseconds()) / 1000}, nil
}

// deleteRemoteSnapshots deletes from the remote, if the daemon has one, the
// records of snapshots just deleted locally on request (vfsd snapshot rm;
// not the snapshots a closing session releases, which other daemons may
// have forked). Their blobs go at the remote's next garbage collection.
func (d *Daemon) deleteRemoteSnapshots(ctx context.Context, ids []string, resp *api.DeleteSnapshotsResponse) error {
	if d.repo.Remote() == nil || len(ids) == 0 {
		return nil
	}
	// A snapshot a ref or a session head of the fleet points at stays in
	// the remote (its local copy is gone: the remote has it).
	if err := d.checkFleetHolds(ctx, ids); err != nil {
		return apiErr(APIError(err).Code, "snapshots %v were deleted here, not from the remote: %s", shortIDs(ids), APIError(err).Message)
	}
	deleted, err := d.repo.DeleteRemote(ctx, ids)
	if len(deleted) > 0 {
		d.log.Info("snapshots deleted from the remote", "snapshots", deleted)
	}
	resp.RemoteDeleted = deleted
	if err != nil {
		return apiErr(api.CodeUnavailable, "snapshots %v were deleted here, but not all from the remote: %v; run vfsd snapshot rm again once the remote is reachable (it finds them there)", ids, err)
	}
	return nil
}
