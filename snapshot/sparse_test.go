//go:build linux

package snapshot_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// allocated returns the disk space the files under dir occupy (st_blocks),
// which is what a sparse file saves: du, not ls.
func allocated(t testing.TB, dir string) int64 {
	t.Helper()
	var total int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(path, &st); err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		total += st.Blocks * 512
		return nil
	})
	require.NoError(t, err)
	return total
}

// sparseSupported skips t unless dir's filesystem keeps holes.
func sparseSupported(t *testing.T, dir string) {
	t.Helper()
	f, err := os.CreateTemp(dir, "sparse")
	require.NoError(t, err)
	defer os.Remove(f.Name())
	defer f.Close()
	require.NoError(t, f.Truncate(64<<20))
	if allocated(t, dir) > 1<<20 {
		t.Skip("the test's temporary filesystem does not keep holes")
	}
}

// TestSparseFileStaysSparse is the attack of issue 11: `truncate -s 3G`
// through the mount plus one diff grew the store by 3.1 GB. Holes must stay
// holes wherever content goes: sealed into the store by a snapshot or a
// diff of the live session, and copied up again for the next write.
func TestSparseFileStaysSparse(t *testing.T) {
	if testing.Short() {
		t.Skip("hashes 3 GiB of zeros")
	}
	r, store, dir := newRepo(t)
	sparseSupported(t, dir)
	s, err := r.NewSession(ctx, snapshot.SessionOptions{ID: "sparse"})
	require.NoError(t, err)

	const size = 3 << 30
	h, err := s.OpenFile(ctx, p("disk.img"), os.O_RDWR|os.O_CREATE, 0)
	require.NoError(t, err)
	require.NoError(t, h.Truncate(size))
	_, err = h.WriteAt([]byte("boot sector"), 0)
	require.NoError(t, err)
	_, err = h.WriteAt([]byte("the end"), size-7)
	require.NoError(t, err)
	require.NoError(t, h.Close())

	before := allocated(t, store.Dir())
	// A diff of the live session seals the file into the store.
	d, err := r.Diff(ctx, snapshot.Source{Snapshot: mustEmpty(t, r)}, snapshot.Source{Session: s}, snapshot.DiffOptions{Text: true})
	require.NoError(t, err)
	require.Len(t, d.Entries, 1)
	require.True(t, d.Entries[0].Binary, "a 3 GiB file gets no text diff")
	snap, err := r.Snapshot(ctx, s, "sparse")
	require.NoError(t, err)
	require.EqualValues(t, size, snap.Record.Bytes)
	grown := allocated(t, store.Dir()) - before
	require.Less(t, grown, int64(1<<20), "the store grew by %d bytes for a sparse file", grown)

	// The blob reads back right.
	n, _, _ := snap.Tree.Lookup(p("disk.img"))
	b, err := store.Open(ctx, snapshot.Blobs, n.Blob)
	require.NoError(t, err)
	buf := make([]byte, 11)
	_, err = b.ReadAt(buf, 0)
	require.NoError(t, err)
	require.Equal(t, "boot sector", string(buf))
	_, err = b.ReadAt(buf[:7], size-7)
	require.NoError(t, err)
	require.Equal(t, "the end", string(buf[:7]))
	_, err = b.ReadAt(buf, 1<<30)
	require.NoError(t, err)
	require.Equal(t, make([]byte, 11), buf)
	b.Close()
	require.NoError(t, store.Verify(ctx, snapshot.Blobs, n.Blob))

	// Writing to it again copies it up without filling the holes.
	sessions := filepath.Join(dir, "sessions")
	before = allocated(t, sessions)
	h, err = s.OpenFile(ctx, p("disk.img"), os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = h.WriteAt([]byte("X"), 1<<30)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	grown = allocated(t, sessions) - before
	require.Less(t, grown, int64(1<<20), "the copy-up took %d bytes for a sparse file", grown)
	got := make([]byte, 2)
	rh, err := s.OpenFile(ctx, p("disk.img"), os.O_RDONLY, 0)
	require.NoError(t, err)
	_, err = rh.ReadAt(got, 1<<30)
	require.NoError(t, err)
	require.Equal(t, "X\x00", string(got))
	require.NoError(t, rh.Close())
}

func mustEmpty(t *testing.T, r *snapshot.Repo) string {
	t.Helper()
	snap, err := r.CommitTree(ctx, vfs.EmptyTree(0), "empty")
	require.NoError(t, err)
	return snap.ID
}
