package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/vfsd/vfsd/mount/overlay"
	"github.com/vfsd/vfsd/snapshot"
)

// overlayUsable says why the cow benchmark cannot time a snapshot through
// the kernel overlay backend here, or nil.
func overlayUsable() error { return overlay.Available() }

// fullSnapshotOverlay times the first snapshot of a fresh session mounted
// with the kernel overlay backend, after n new files (file i holding
// content(block, offset+i)) were written through the mount by this
// process, as a container would write them: Sync (the ingest of the upper
// directory, every file's content stored, made durable) and the snapshot,
// what the daemon does for a snapshot of a mounted session. The mount is
// made and unmounted off the clock.
func fullSnapshotOverlay(ctx context.Context, repo *snapshot.Repo, root string, block []byte, n, offset int) (time.Duration, error) {
	s, err := repo.NewSession(ctx, snapshot.SessionOptions{})
	if err != nil {
		return 0, err
	}
	defer repo.DeleteSession(s.ID())
	work, err := os.MkdirTemp(root, "overlay-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(work)
	dir := filepath.Join(work, "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return 0, err
	}
	m, err := overlay.New(ctx, repo, s, dir, overlay.Options{
		StateDir:  filepath.Join(work, "state"),
		MetaCache: filepath.Join(root, "overlay-meta"),
	})
	if err != nil {
		return 0, fmt.Errorf("mount: %w", err)
	}
	mounted := true
	defer func() {
		if mounted {
			m.Unmount()
		}
	}()
	for i := range n {
		if err := os.MkdirAll(filepath.Join(dir, string(fileLayout(i).Parent())), 0o755); err != nil {
			return 0, err
		}
	}
	err = parallel(n, func(i int) error {
		return os.WriteFile(filepath.Join(dir, string(fileLayout(i))), content(block, offset+i), 0o644)
	})
	if err != nil {
		return 0, err
	}
	quiesce(root)
	t := time.Now()
	if err := m.Sync(ctx); err != nil {
		return 0, err
	}
	_, err = repo.Snapshot(ctx, s, "full")
	d := time.Since(t)
	if err != nil {
		return 0, err
	}
	mounted = false
	if err := m.Unmount(); err != nil {
		return 0, fmt.Errorf("unmount: %w", err)
	}
	return d, nil
}
