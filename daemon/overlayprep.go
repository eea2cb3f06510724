package daemon

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/mount/overlay"
	"github.com/vfsd/vfsd/vfs"
)

// OverlayPrep reports PrepareOverlay: the metadata layer of a snapshot for
// the kernel overlay backend.
type OverlayPrep struct {
	// Cached is set when the layer was built already (by an earlier mount
	// or preparation of the same state).
	Cached bool
	// Entries is how many nodes a build wrote (0 when cached).
	Entries int
	// Duration is how long the build (or the look-up) took.
	Duration time.Duration
}

// PrepareOverlay builds the kernel overlay backend's metadata layer of
// snapshot ref (a full ID or a unique prefix) into the daemon's layer
// cache, so that an overlay mount of a session in that state — a fork of
// the snapshot, or the session it was taken of while unchanged — finds it
// built and does not pay for it. The layer is keyed by state, not by
// snapshot: every fork of the snapshot shares it. It is a cache like any
// other: mounts collect unused layers beyond a few (overlay.Options.
// MetaCacheKeep), and a mount whose layer was collected builds it again.
// Where the overlay backend is unavailable it answers unavailable.
func (d *Daemon) PrepareOverlay(ctx context.Context, ref string) (*OverlayPrep, error) {
	if err := overlay.Available(); err != nil {
		return nil, apiErr(api.CodeUnavailable, "%v", err)
	}
	snap, err := d.snapshotByRef(ctx, ref)
	if err != nil {
		return nil, err
	}
	// A mount builds the layer with its session's default owner: a session
	// the daemon creates is owned by the daemon's user (vfs.Options.Owner).
	def := vfs.Owner{Uid: uint32(os.Geteuid()), Gid: uint32(os.Getegid())}
	prep, err := buildOverlayMeta(ctx, snap, d.overlayMetaCache(), def)
	if err != nil {
		return nil, apiErr(api.CodeInternal, "%v", err)
	}
	return prep, nil
}

// overlayMetaCache is where overlay mounts keep their metadata layers.
func (d *Daemon) overlayMetaCache() string {
	return filepath.Join(d.cfg.DataDir, "overlay", "meta")
}
