package vfs_test

import (
	"context"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/vfstest"
)

// syncCounter is a blob store that counts its Syncs and the deferred Puts
// not synced yet.
type syncCounter struct {
	*vfstest.Blobs
	syncs, unsynced atomic.Int64
}

func (b *syncCounter) Put(ctx context.Context, r io.Reader, deferred bool) (vfs.Hash, int64, func(), error) {
	if deferred {
		b.unsynced.Add(1)
	}
	return b.Blobs.Put(ctx, r, deferred)
}

func (b *syncCounter) Sync(ctx context.Context) error {
	b.syncs.Add(1)
	b.unsynced.Store(0)
	return nil
}

// TestDeferredBlobIsSyncedBeforeItsRecord checks that a write whose content
// is deferred (the overlay ingest's) costs no store sync of its own, and
// that the journal's next sync — Sync, the background flush, a durable
// mutation — syncs the store first, once.
func TestDeferredBlobIsSyncedBeforeItsRecord(t *testing.T) {
	blobs := &syncCounter{Blobs: vfstest.NewBlobs()}
	opts := vfstest.Options(t, blobs)
	opts.FlushInterval = time.Hour // no background flush during the test
	s, err := vfs.Create(context.Background(), opts, vfs.Tree{}, "")
	require.NoError(t, err)
	defer s.Close()
	deferred := vfs.WriteOptions{DeferredBlob: true}
	rctx := vfs.Relaxed(ctx)

	for i, c := range []string{"one", "two", "three"} {
		_, err := s.WriteFile(rctx, p("f"), strings.NewReader(c), deferred)
		require.NoError(t, err)
		require.EqualValues(t, i+1, blobs.unsynced.Load())
	}
	require.Zero(t, blobs.syncs.Load(), "relaxed deferred writes sync nothing")
	require.NoError(t, s.Sync())
	require.EqualValues(t, 1, blobs.syncs.Load(), "one store sync covers them all, before the journal's")
	require.Zero(t, blobs.unsynced.Load())
	require.NoError(t, s.Sync())
	require.EqualValues(t, 1, blobs.syncs.Load(), "nothing pending: no store sync")

	// A durable mutation syncs pending content with the journal.
	_, err = s.WriteFile(rctx, p("g"), strings.NewReader("four"), deferred)
	require.NoError(t, err)
	_, err = s.Mkdir(ctx, p("d"), vfs.MkdirOptions{})
	require.NoError(t, err)
	require.EqualValues(t, 2, blobs.syncs.Load())

	// A deferred write under a durable context returns durable.
	_, err = s.WriteFile(ctx, p("h"), strings.NewReader("five"), deferred)
	require.NoError(t, err)
	require.EqualValues(t, 3, blobs.syncs.Load())
	require.Zero(t, blobs.unsynced.Load())
	require.Equal(t, "five", read(t, s, "h"))

	// Closing syncs what is pending, too.
	_, err = s.WriteFile(rctx, p("i"), strings.NewReader("six"), deferred)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.EqualValues(t, 4, blobs.syncs.Load())
}
