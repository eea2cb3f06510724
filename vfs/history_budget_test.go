package vfs_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/vfstest"
)

// heldBytes sums the sizes of the distinct blobs s keeps from garbage
// collection.
func heldBytes(t *testing.T, s *vfs.Session, blobs *vfstest.Blobs) int64 {
	t.Helper()
	var total int64
	seen := map[vfs.Hash]bool{}
	s.BlobRefs(func(h vfs.Hash) {
		if seen[h] {
			return
		}
		seen[h] = true
		b, err := blobs.Open(ctx, h)
		require.NoError(t, err)
		total += b.Size()
		b.Close()
	})
	return total
}

// TestHistoryIsBoundedByTheQuota: a session within its byte quota must not
// be able to fill the disk through its history. Rewriting one 64 KiB file
// 400 times under a 1 MiB quota kept every version (25 MiB) from garbage
// collection for as long as the session lived. The history now keeps at
// most MaxHistoryBytes (the quota's MaxBytes unless set) of content it
// alone names, dropping its oldest part; the recent past still rewinds,
// the dropped past is refused, and a reopened session agrees.
func TestHistoryIsBoundedByTheQuota(t *testing.T) {
	const quota = 1 << 20
	blobs := vfstest.NewBlobs()
	opts := vfstest.Options(t, blobs)
	opts.Quota = vfs.Quota{MaxBytes: quota}
	s, err := vfs.Create(ctx, opts, vfs.Tree{}, "")
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })

	chunk := strings.Repeat("x", 64<<10-8)
	var seqs []uint64
	for i := range 400 {
		write(t, s, "big", fmt.Sprintf("%08d%s", i, chunk))
		seqs = append(seqs, s.Info().Seq)
	}
	held := heldBytes(t, s, blobs)
	require.LessOrEqual(t, held, int64(3*quota), "the session holds %d bytes of content under a %d-byte quota", held, quota)

	// The recent past rewinds.
	start := s.HistoryStart()
	require.Greater(t, start, seqs[0], "the oldest history was dropped")
	recent := seqs[len(seqs)-3]
	require.GreaterOrEqual(t, recent, start)
	tr, err := s.TreeAt(ctx, recent)
	require.NoError(t, err)
	n, ok, _ := tr.Lookup("big")
	require.True(t, ok)
	b, err := blobs.Open(ctx, n.Blob)
	require.NoError(t, err, "the content of a kept position is kept")
	b.Close()
	// The dropped past is refused, not answered with missing content.
	_, err = s.TreeAt(ctx, seqs[0])
	require.Error(t, err)

	// Reopened (a daemon restart), the history is bounded the same way.
	require.NoError(t, s.Close())
	s2, err := vfs.Open(ctx, opts)
	require.NoError(t, err)
	t.Cleanup(func() { s2.Close() })
	require.LessOrEqual(t, heldBytes(t, s2, blobs), int64(3*quota))
	_, err = s2.TreeAt(ctx, recent)
	require.NoError(t, err)
}
