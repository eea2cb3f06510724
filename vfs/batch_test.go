package vfs_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/vfstest"
)

func TestBatchCommitsAllOrNothing(t *testing.T) {
	blobs := vfstest.NewBlobs()
	opts := vfstest.Options(t, blobs)
	s, err := vfs.Create(ctx, opts, vfs.Tree{}, "")
	require.NoError(t, err)
	write(t, s, "a.txt", "A")
	write(t, s, "dir/b.txt", "B")
	before := s.Tree().Encode()

	t.Run("a failing change leaves the session as it was", func(t *testing.T) {
		b := s.NewBatch()
		require.NoError(t, b.Write(ctx, p("new.txt"), strings.NewReader("N"), vfs.WriteOptions{}))
		require.NoError(t, b.Remove(p("a.txt"), vfs.RemoveOptions{}))
		require.NoError(t, b.Rename(p("missing"), p("x"), vfs.RenameOptions{}))
		_, err := b.Commit(ctx)
		require.ErrorIs(t, err, vfs.ErrNotFound)
		require.Contains(t, err.Error(), "change 3 of 3")
		require.Equal(t, before, s.Tree().Encode())
	})

	t.Run("a batch refuses appends", func(t *testing.T) {
		b := s.NewBatch()
		err := b.Write(ctx, p("a.txt"), strings.NewReader("x"), vfs.WriteOptions{Mode: vfs.WriteAppend})
		require.ErrorIs(t, err, vfs.ErrInvalid)
		_, err = b.Commit(ctx)
		require.Error(t, err, "a batch that lost a change does not commit the rest")
		require.Equal(t, before, s.Tree().Encode())
	})

	t.Run("changes apply in order and survive recovery", func(t *testing.T) {
		h, err := s.OpenFile(ctx, p("dir/b.txt"), os.O_RDWR, 0)
		require.NoError(t, err)
		_, err = h.WriteAt([]byte("b!"), 0)
		require.NoError(t, err)
		require.NoError(t, h.Close())

		b := s.NewBatch()
		require.NoError(t, b.Write(ctx, p("src/new.go"), strings.NewReader("package x\n"), vfs.WriteOptions{CreateParents: true}))
		require.NoError(t, b.Rename(p("dir/b.txt"), p("src/b.txt"), vfs.RenameOptions{}))
		require.NoError(t, b.Write(ctx, p("src/b.txt"), strings.NewReader("moved and rewritten"), vfs.WriteOptions{Mode: vfs.WriteOverwrite}))
		require.NoError(t, b.Remove(p("a.txt"), vfs.RemoveOptions{}))
		require.Equal(t, 4, b.Len())
		seqBefore := s.Info().Seq
		_, err = b.Commit(ctx)
		require.NoError(t, err)
		require.Equal(t, seqBefore+1, s.Info().Seq, "one journal record")
		require.Equal(t, "moved and rewritten", read(t, s, "src/b.txt"))
		require.Equal(t, "package x\n", read(t, s, "src/new.go"))
		_, err = s.Stat(ctx, p("a.txt"))
		require.ErrorIs(t, err, vfs.ErrNotFound)

		want := s.Tree().Encode()
		require.NoError(t, s.Close())
		s2, err := vfs.Open(ctx, opts)
		require.NoError(t, err)
		defer s2.Close()
		require.Equal(t, want, s2.Tree().Encode())
		require.Equal(t, "moved and rewritten", read(t, s2, "src/b.txt"))
	})
}

func TestNoticesCarryTheOrigin(t *testing.T) {
	s, err := vfs.Create(ctx, vfstest.Options(t, vfstest.NewBlobs()), vfs.Tree{}, "")
	require.NoError(t, err)
	defer s.Close()
	var got []string
	cancel := s.Subscribe(func(n vfs.Notice) { got = append(got, string(n.Event.Op)+":"+n.Origin) })
	defer cancel()
	fuse := vfs.WithOrigin(ctx, "fuse")
	_, err = s.WriteFile(fuse, p("a"), strings.NewReader("x"), vfs.WriteOptions{})
	require.NoError(t, err)
	_, err = s.WriteFile(ctx, p("b"), strings.NewReader("y"), vfs.WriteOptions{})
	require.NoError(t, err)
	h, err := s.OpenFile(fuse, p("a"), os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = h.WriteAt([]byte("z"), 1)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	require.Equal(t, []string{"write:fuse", "write:", "copyup:fuse", "commit:fuse"}, got)
}

func TestBatchSymlink(t *testing.T) {
	blobs := vfstest.NewBlobs()
	s, err := vfs.Create(ctx, vfstest.Options(t, blobs), vfs.Tree{}, "")
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() }) // Windows cannot remove the open journal
	write(t, s, "a.txt", "A")
	before := s.Tree().Encode()

	for _, tc := range []struct {
		name, target string
	}{{"empty target", ""}, {"NUL in the target", "a\x00b"}, {"not UTF-8", "\xff"}} {
		t.Run(tc.name, func(t *testing.T) {
			b := s.NewBatch()
			require.ErrorIs(t, b.Symlink(tc.target, p("l")), vfs.ErrInvalid)
			_, err := b.Commit(ctx)
			require.Error(t, err)
			require.Equal(t, before, s.Tree().Encode())
		})
	}

	t.Run("a link in the way fails the whole batch", func(t *testing.T) {
		b := s.NewBatch()
		require.NoError(t, b.Write(ctx, p("new.txt"), strings.NewReader("N"), vfs.WriteOptions{}))
		require.NoError(t, b.Symlink("x", p("a.txt")))
		_, err := b.Commit(ctx)
		require.ErrorIs(t, err, vfs.ErrExists)
		require.Equal(t, before, s.Tree().Encode())
	})

	t.Run("links commit with the rest, parents created", func(t *testing.T) {
		b := s.NewBatch()
		require.NoError(t, b.Remove(p("a.txt"), vfs.RemoveOptions{}))
		require.NoError(t, b.Symlink("../b.txt", p("d/e/a.txt")))
		_, err := b.Commit(ctx)
		require.NoError(t, err)
		n, ok, _ := s.Tree().Lookup(p("d/e/a.txt"))
		require.True(t, ok)
		require.True(t, n.IsSymlink())
		require.Equal(t, "../b.txt", n.Target)
		_, ok, _ = s.Tree().Lookup(p("a.txt"))
		require.False(t, ok)
	})
}
