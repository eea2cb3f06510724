package snapshot

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/vfsd/vfsd/vfs"
)

// HoldLocal makes every blob of snapshot id local and keeps it local until
// release is called: what a reader that bypasses the repository needs —
// the kernel serving an overlay mount straight from the blob directory
// cannot fetch a blob on first read as the tools and the FUSE mount do.
//
// The blobs are pinned first (so the cache cannot evict one while the rest
// arrive), then the missing ones fetched Parallel at a time, each verified
// against its hash. progress, when set, is told how many of the missing
// blobs have arrived. Without a remote every blob of a snapshot is local
// already and HoldLocal only pins them.
//
// A snapshot whose missing blobs would not fit in the remote cache
// (RemoteOptions.CacheBytes) is refused before anything is fetched, with a
// CodeTooLarge error: pinned, they would hold the cache past its bound.
// On any error nothing stays pinned.
func (r *Repo) HoldLocal(ctx context.Context, id string, progress func(done, total int)) (release func(), err error) {
	snap, err := r.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	var unpins []func()
	release = func() {
		for _, u := range unpins {
			u()
		}
	}
	seen := map[vfs.Hash]bool{}
	var blobs []cacheEntry
	err = snap.Tree.Walk(vfs.Root, func(_ vfs.Path, n vfs.Node) error {
		if !n.IsFile() || n.Blob.IsZero() || n.Blob == vfs.EmptyHash || seen[n.Blob] {
			return nil
		}
		seen[n.Blob] = true
		unpins = append(unpins, r.pins.pin(n.Blob))
		blobs = append(blobs, cacheEntry{h: n.Blob, size: n.Size})
		return nil
	})
	if err != nil {
		release()
		return nil, fmt.Errorf("hold the blobs of snapshot %s: %w", id, err)
	}
	l := r.remote
	if l == nil {
		return release, nil
	}
	var missing []cacheEntry
	var need int64
	for _, b := range blobs {
		if _, err := r.store.Stat(ctx, Blobs, b.h); err == nil {
			continue
		}
		missing = append(missing, b)
		need += b.size
	}
	if need > l.opts.CacheBytes {
		release()
		return nil, &vfs.Error{Op: "hold snapshot " + id, Code: vfs.CodeTooLarge,
			Msg: fmt.Sprintf("%d blobs (%d bytes) must come from the remote, more than the local cache holds (%d bytes); raise --remote-cache-bytes or use the FUSE backend, which fetches on first read",
				len(missing), need, l.opts.CacheBytes)}
	}
	if err := r.fetchAll(ctx, missing, progress); err != nil {
		release()
		return nil, fmt.Errorf("hold the blobs of snapshot %s: %w", id, err)
	}
	return release, nil
}

// fetchAll fetches blobs from the remote, Parallel at a time, and stops at
// the first failure.
func (r *Repo) fetchAll(ctx context.Context, blobs []cacheEntry, progress func(done, total int)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan vfs.Hash)
	var (
		done    atomic.Int64
		errOnce sync.Once
		first   error
		wg      sync.WaitGroup
	)
	for range r.remote.opts.Parallel {
		wg.Go(func() {
			for h := range work {
				if err := r.fetch(ctx, Blobs, h); err != nil {
					errOnce.Do(func() { first = err; cancel() })
					continue
				}
				n := done.Add(1)
				if progress != nil {
					progress(int(n), len(blobs))
				}
			}
		})
	}
feed:
	for _, b := range blobs {
		select {
		case work <- b.h:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}
