package daemon

import (
	"context"

	"github.com/vfsd/vfsd/mount/overlay"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// buildOverlayMeta builds snap's overlay metadata layer in cacheDir.
func buildOverlayMeta(ctx context.Context, snap *snapshot.Snapshot, cacheDir string, def vfs.Owner) (*OverlayPrep, error) {
	rep, err := overlay.BuildMeta(ctx, snap, cacheDir, def)
	if err != nil {
		return nil, err
	}
	return &OverlayPrep{Cached: rep.Cached, Entries: rep.Entries, Duration: rep.Duration}, nil
}
