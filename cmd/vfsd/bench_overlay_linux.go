package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/vfsd/vfsd/cmd/vfsd/internal/bench"
	"github.com/vfsd/vfsd/mount/overlay"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// The mount benchmark's vfsd_overlay target is the kernel overlay backend,
// its state and metadata layers beside the mount point.
func init() {
	bench.OverlayBackendUsable = overlay.Available
	bench.OverlayBackend = func(ctx context.Context, repo *snapshot.Repo, s *vfs.Session, dir string) (func() error, error) {
		parent := filepath.Dir(dir)
		m, err := overlay.New(ctx, repo, s, dir, overlay.Options{
			StateDir:  filepath.Join(parent, bench.OverlayStateDir),
			MetaCache: filepath.Join(parent, "overlay-meta"),
		})
		if err != nil {
			return nil, err
		}
		return func() error {
			// The unmount's ingest is not timed: say what it cost.
			start := time.Now()
			err := m.Unmount()
			rep := m.LastIngest()
			fmt.Fprintf(os.Stderr, "vfsd_overlay: unmount %v: ingest %v (%d upper entries, %d changes, %d files hashed, %d bytes)\n",
				time.Since(start).Round(time.Millisecond), rep.Duration.Round(time.Millisecond), rep.Entries, rep.Changes, rep.Hashed, rep.Bytes)
			return err
		}, nil
	}
}
