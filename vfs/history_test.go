package vfs_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/vfstest"
)

// reopen closes s and opens its directory again, as a daemon restart does.
func reopen(t *testing.T, s *vfs.Session, opts vfs.Options) *vfs.Session {
	t.Helper()
	require.NoError(t, s.Close())
	s2, err := vfs.Open(ctx, vfs.Options{Dir: opts.Dir, Blobs: opts.Blobs, LoadTree: opts.LoadTree, Clock: opts.Clock})
	require.NoError(t, err)
	t.Cleanup(func() { s2.Close() })
	return s2
}

func TestTreeAtReplaysFromCheckpoints(t *testing.T) {
	s, _ := vfstest.NewSession(t)
	var seqs []uint64
	// More events than one checkpoint spacing, so TreeAt replays from a
	// checkpoint that is not the base.
	for i := range 700 {
		write(t, s, "f", string(rune('a'+i%26)))
		seqs = append(seqs, s.Info().Seq)
	}
	for _, i := range []int{0, 1, 255, 256, 257, 511, 600, 699} {
		tr, err := s.TreeAt(ctx, seqs[i])
		require.NoError(t, err)
		n, ok, _ := tr.Lookup(p("f"))
		require.True(t, ok)
		h, _, _, err := vfstest.NewBlobs().Put(ctx, strings.NewReader(string(rune('a'+i%26))), false)
		require.NoError(t, err)
		require.Equal(t, h, n.Blob, "event %d", seqs[i])
	}
	tr, err := s.TreeAt(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, 1, tr.Len(), "position 0 is the empty start")
	_, err = s.TreeAt(ctx, s.Info().Seq+1)
	require.True(t, errors.Is(err, &vfs.Error{Code: vfs.CodeNotFound}), "a future position: %v", err)
}

func TestRewindAndRewindTheRewind(t *testing.T) {
	blobs := vfstest.NewBlobs()
	opts := vfstest.Options(t, blobs)
	s, err := vfs.Create(ctx, opts, vfs.Tree{}, "")
	require.NoError(t, err)
	write(t, s, "keep", "1")
	before := s.Info().Seq
	write(t, s, "keep", "2")
	write(t, s, "gone", "new file")
	_, err = s.Mkdir(ctx, p("dir/sub"), vfs.MkdirOptions{Parents: true})
	require.NoError(t, err)
	after := s.Info().Seq

	n, err := s.Rewind(ctx, before)
	require.NoError(t, err)
	require.Equal(t, after+1, n, "the rewind is one event")
	require.Equal(t, "1", read(t, s, "keep"))
	_, err = s.Stat(ctx, p("gone"))
	require.Error(t, err)
	_, err = s.Stat(ctx, p("dir"))
	require.Error(t, err)
	require.Positive(t, s.Info().Dirty, "what the rewind undid is dirty for the next snapshot")

	// Rewinding the rewind: back to just before it.
	_, err = s.Rewind(ctx, n-1)
	require.NoError(t, err)
	require.Equal(t, "2", read(t, s, "keep"))
	require.Equal(t, "new file", read(t, s, "gone"))
	st, err := s.Stat(ctx, p("dir/sub"))
	require.NoError(t, err)
	require.True(t, st.IsDir())
	want := s.Tree().Encode()

	// The history survives a restart: the rewinds are replayed, and the
	// positions are the same.
	s2 := reopen(t, s, opts)
	require.Equal(t, want, s2.Tree().Encode())
	tr, err := s2.TreeAt(ctx, n)
	require.NoError(t, err)
	_, ok, _ := tr.Lookup(p("gone"))
	require.False(t, ok, "just after the first rewind")
	_, err = s2.Rewind(ctx, before)
	require.NoError(t, err)
	require.Equal(t, "1", read(t, s2, "keep"))

	// New inodes never repeat one handed out before the rewind.
	r := write(t, s2, "fresh", "x")
	require.Greater(t, r.Node.Ino, tr.MaxIno())
}

func TestRewindAcrossRestoreSurvivesRestart(t *testing.T) {
	blobs := vfstest.NewBlobs()
	opts := vfstest.Options(t, blobs)
	trees := map[string]vfs.Tree{}
	opts.LoadTree = func(_ context.Context, id string) (vfs.Tree, error) { return trees[id], nil }
	s, err := vfs.Create(ctx, opts, vfs.Tree{}, "")
	require.NoError(t, err)
	write(t, s, "f", "one")
	trees["snap"] = s.Tree()
	write(t, s, "f", "two")
	two := s.Info().Seq
	require.NoError(t, s.ResetTo(ctx, trees["snap"], "snap"))
	require.Equal(t, "one", read(t, s, "f"))
	_, err = s.Rewind(ctx, two)
	require.NoError(t, err, "back to before the restore")
	require.Equal(t, "two", read(t, s, "f"))
	want := s.Tree().Encode()
	// The rewind reaches before the restore: opening keeps the whole
	// journal (no compaction) so the rewind replays.
	s2 := reopen(t, s, opts)
	require.Equal(t, want, s2.Tree().Encode())
	require.Equal(t, uint64(0), s2.HistoryStart())
}

func TestRestartAfterRestoreCompactsHistory(t *testing.T) {
	blobs := vfstest.NewBlobs()
	opts := vfstest.Options(t, blobs)
	trees := map[string]vfs.Tree{}
	opts.LoadTree = func(_ context.Context, id string) (vfs.Tree, error) { return trees[id], nil }
	s, err := vfs.Create(ctx, opts, vfs.Tree{}, "")
	require.NoError(t, err)
	write(t, s, "f", "one")
	trees["snap"] = s.Tree()
	write(t, s, "f", "two")
	require.NoError(t, s.ResetTo(ctx, trees["snap"], "snap"))
	restore := s.Info().Seq
	write(t, s, "g", "a")
	ga := s.Info().Seq
	write(t, s, "g", "b")
	s2 := reopen(t, s, opts)
	require.Equal(t, restore, s2.HistoryStart())
	_, err = s2.TreeAt(ctx, restore-1)
	require.True(t, errors.Is(err, &vfs.Error{Code: vfs.CodeNotFound}))
	_, err = s2.Rewind(ctx, ga)
	require.NoError(t, err)
	require.Equal(t, "a", read(t, s2, "g"))
	s3 := reopen(t, s2, opts)
	require.Equal(t, "a", read(t, s3, "g"))
}

func TestRewindKeepsContentWrittenThroughHandles(t *testing.T) {
	s, _ := vfstest.NewSession(t)
	h, err := s.OpenFile(ctx, p("h"), os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	_, err = h.WriteAt([]byte("first"), 0)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	first := s.Info().Seq // "first" is in an upper file, not sealed
	h, err = s.OpenFile(ctx, p("h"), os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = h.WriteAt([]byte("SECOND"), 0)
	require.NoError(t, err)
	require.NoError(t, h.Close())

	// Content at `first` was overwritten in place before any seal: the
	// history does not hold it, and the rewind says so and changes nothing.
	seq := s.Info().Seq
	_, err = s.Rewind(ctx, first)
	require.True(t, errors.Is(err, &vfs.Error{Code: vfs.CodeConflict}), "%v", err)
	require.Equal(t, "SECOND", read(t, s, "h"))
	require.GreaterOrEqual(t, s.Info().Seq, seq)

	// Sealed content is held: rewind to just after the seal the failed
	// rewind made, then write more, then rewind back.
	sealed := s.Info().Seq
	h, err = s.OpenFile(ctx, p("h"), os.O_RDWR|os.O_TRUNC, 0)
	require.NoError(t, err)
	_, err = h.WriteAt([]byte("third"), 0)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	_, err = s.Rewind(ctx, sealed)
	require.NoError(t, err)
	require.Equal(t, "SECOND", read(t, s, "h"))
	tr, lost, err := s.ResolvedTreeAt(ctx, s.Info().Seq-1)
	require.NoError(t, err)
	require.Empty(t, lost)
	n, _, _ := tr.Lookup(p("h"))
	require.Zero(t, n.Upper, "the rewind sealed \"third\" first")
}

func TestHistoryBlobsAreReferenced(t *testing.T) {
	s, blobs := vfstest.NewSession(t)
	write(t, s, "f", "old content")
	write(t, s, "f", "new content")
	refs := map[vfs.Hash]bool{}
	s.BlobRefs(func(h vfs.Hash) { refs[h] = true })
	old, _, _, err := vfstest.NewBlobs().Put(ctx, strings.NewReader("old content"), false)
	require.NoError(t, err)
	require.True(t, refs[old], "overwritten content stays for a rewind")
	_ = blobs
}

func TestEventsCarryTheirOrigin(t *testing.T) {
	s, _ := vfstest.NewSession(t)
	_, err := s.WriteFile(vfs.WithOrigin(ctx, "fuse:1:/mnt"), p("f"), strings.NewReader("x"), vfs.WriteOptions{})
	require.NoError(t, err)
	write(t, s, "g", "y")
	var origins []string
	require.NoError(t, s.History(ctx, 0, s.Info().Seq, func(_ uint64, e *vfs.Event) error {
		origins = append(origins, e.Origin)
		return nil
	}))
	require.Equal(t, []string{"fuse:1:/mnt", ""}, origins)
}

// BenchmarkRewind rewinds 20 events in workspaces of growing size: the
// cost follows the history replayed, not the number of files.
func BenchmarkRewind(b *testing.B) {
	for _, files := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("files=%d", files), func(b *testing.B) {
			blobs := vfstest.NewBlobs()
			h, _, _, err := blobs.Put(ctx, strings.NewReader("x"), false)
			require.NoError(b, err)
			root, _, _ := vfs.EmptyTree(0).Lookup(vfs.Root)
			tb := vfs.NewTreeBuilder(root)
			for i := range files {
				tb.Set(vfs.MustPath(fmt.Sprintf("d%03d/f%06d", i%500, i)), vfs.Node{Kind: vfs.KindFile, Blob: h, Size: 1, Mode: 0o644, Ino: uint64(i + 1000), Nlink: 1})
			}
			for i := range 500 {
				tb.Set(vfs.MustPath(fmt.Sprintf("d%03d", i)), vfs.Node{Kind: vfs.KindDir, Mode: 0o755, Ino: uint64(i + 2), Nlink: 2})
			}
			base := tb.Tree()
			s, err := vfs.Create(ctx, vfstest.Options(b, blobs), base, "base")
			require.NoError(b, err)
			defer s.Close()
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				start := s.Info().Seq
				for j := range 20 {
					_, err := s.WriteFile(ctx, vfs.MustPath(fmt.Sprintf("d001/new%d", j)), strings.NewReader("y"), vfs.WriteOptions{})
					require.NoError(b, err)
				}
				b.StartTimer()
				_, err := s.Rewind(ctx, start)
				require.NoError(b, err)
			}
		})
	}
}

// TestRewindToACreateForWriting: a file created for writing gets an empty
// upper file in the event that creates it; the tree just after that event
// holds the empty file, which a rewind restores, though the upper file was
// written and committed to since.
func TestRewindToACreateForWriting(t *testing.T) {
	s, _ := vfstest.NewSession(t)
	write(t, s, "keep", "k")
	h, err := s.OpenFile(ctx, p("new"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	require.NoError(t, err)
	created := s.Info().Seq
	_, err = h.WriteAt([]byte("written later"), 0)
	require.NoError(t, err)
	require.NoError(t, h.Close())

	tr, lost, err := s.ResolvedTreeAt(ctx, created)
	require.NoError(t, err)
	require.Empty(t, lost)
	n, ok, _ := tr.Lookup(p("new"))
	require.True(t, ok)
	require.Zero(t, n.Upper)
	require.Equal(t, vfs.EmptyHash, n.Blob)

	_, err = s.Rewind(ctx, created)
	require.NoError(t, err)
	require.Equal(t, "", read(t, s, "new"))
	require.Equal(t, "k", read(t, s, "keep"))
}
