package s3store

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/vfs"
)

// countingZeros is an endless stream of zeros that counts what is read.
type countingZeros struct{ n int64 }

func (c *countingZeros) Read(p []byte) (int, error) {
	clear(p)
	c.n += int64(len(p))
	return len(p), nil
}

// TestReadSpoolCapped: an object that sends more than the cap (whatever
// size it announced) is refused after max+1 bytes, in memory or spooled.
func TestReadSpoolCapped(t *testing.T) {
	s := &Store{cfg: Config{TempDir: t.TempDir()}}
	for _, max := range []int64{0, 1000, memLimit, memLimit + 4096} {
		src := &countingZeros{}
		_, err := s.readSpool(src, max)
		require.ErrorIs(t, err, vfs.ErrTooLarge, "max %d", max)
		require.LessOrEqual(t, src.n, max+1, "read past the cap %d", max)
	}
	sp, err := s.readSpool(io.LimitReader(&countingZeros{}, memLimit+10), memLimit+10)
	require.NoError(t, err, "exactly the cap is allowed")
	require.Equal(t, int64(memLimit+10), sp.size)
	sp.close()
}
