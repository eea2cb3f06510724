package coord_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/coord"
	"github.com/vfsd/vfsd/coord/coordtest"
)

func TestMemConformance(t *testing.T) {
	var last *coord.Mem
	coordtest.Run(t, func(t *testing.T) coord.Backend { last = coord.NewMem(); return last }, coordtest.Options{
		Raw: func(t *testing.T, key string, value []byte) {
			_, err := last.Put(context.Background(), key, value, coord.Cond{})
			require.NoError(t, err)
		},
	})
}

// TestSetRefRetriesConflicts: a move that loses the compare-and-swap (S3's
// 412, or its 409 for conditional writes in flight at once) reads again
// and tries again, and gives up with ErrConflict after bounded tries.
func TestSetRefRetriesConflicts(t *testing.T) {
	ctx := context.Background()
	m := coord.NewMem()
	f, err := coord.New(m, "d1")
	require.NoError(t, err)
	var fails atomic.Int32
	fails.Store(3)
	var puts atomic.Int32
	m.Inject = func(op, key string) error {
		if op == "put" {
			puts.Add(1)
			if fails.Add(-1) >= 0 {
				return coord.ErrConflict
			}
		}
		return nil
	}
	r, err := f.SetRef(ctx, "main", "1111111111111111111111111111111111111111111111111111111111111111", nil)
	require.NoError(t, err)
	require.EqualValues(t, 1, r.Seq)
	require.EqualValues(t, 4, puts.Load(), "three conflicts, then the write")

	fails.Store(1000)
	_, err = f.SetRef(ctx, "main", "2222222222222222222222222222222222222222222222222222222222222222", nil)
	require.ErrorIs(t, err, coord.ErrConflict)
	other := errors.New("boom")
	m.Inject = func(op, key string) error {
		if op == "put" {
			return other
		}
		return nil
	}
	_, err = f.SetRef(ctx, "main", "2222222222222222222222222222222222222222222222222222222222222222", nil)
	require.ErrorIs(t, err, other, "other errors are not retried")
}
