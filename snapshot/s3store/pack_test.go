package s3store_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// packedSnapshot pushes a snapshot of n small files, each saying its
// number, through s and returns its ID and the files.
func packedSnapshot(t *testing.T, s snapshot.Store, n int) (string, map[string]string) {
	t.Helper()
	ctx := context.Background()
	a := repoOn(t, s, 0)
	sa, err := a.NewSession(ctx, snapshot.SessionOptions{ID: "a"})
	require.NoError(t, err)
	files := map[string]string{}
	for i := range n {
		f := fmt.Sprintf("d%02d/f%04d.txt", i/50, i)
		files[f] = fmt.Sprintf("file %d: %s\n", i, strings.Repeat("x", i%700))
		_, err := sa.WriteFile(ctx, vfs.MustPath(f), strings.NewReader(files[f]), vfs.WriteOptions{CreateParents: true})
		require.NoError(t, err)
	}
	snap, rep := snapshotPushed(t, a, sa)
	require.Equal(t, n, rep.UploadedBlobs)
	require.Equal(t, 1, rep.UploadedPacks)
	return snap.ID, files
}

// snapshotPushed snapshots sess on r and pushes the snapshot.
func snapshotPushed(t *testing.T, r *snapshot.Repo, sess *vfs.Session) (*snapshot.Snapshot, snapshot.PushReport) {
	t.Helper()
	snap, err := r.Snapshot(context.Background(), sess, "")
	require.NoError(t, err)
	rep, err := r.Push(context.Background(), snap.ID)
	require.NoError(t, err)
	return snap, rep
}

// TestPackCacheSmallerThanReads: a daemon whose cache holds a few KiB
// reads 300 packed files, 8 at a time, twice over: windows are evicted
// while others are read and written, every read returns its file's
// bytes, and the cache passes its bound by one window at most. (With a
// file per pack, kept while in use, the first version of the pack cache
// grew past its bound by the whole pack.)
func TestPackCacheSmallerThanReads(t *testing.T) {
	ctx := context.Background()
	s := open(t, testConfig(t))
	defer s.Close()
	id, files := packedSnapshot(t, s, 300)

	dir := t.TempDir()
	b, err := snapshot.OpenLocalRepo(ctx, dir, snapshot.RepoOptions{})
	require.NoError(t, err)
	defer b.Close()
	const cache = 16 << 10
	require.NoError(t, b.SetRemote(s, snapshot.RemoteOptions{CacheBytes: cache, StateDir: filepath.Join(dir, "remote")}))
	sb, err := b.Fork(ctx, snapshot.Source{Snapshot: id}, snapshot.SessionOptions{ID: "b"})
	require.NoError(t, err)
	names := make([]string, 0, len(files))
	for f := range files {
		names = append(names, f)
	}
	for round := range 2 {
		var wg sync.WaitGroup
		errs := make(chan error, len(names))
		work := make(chan string)
		for range 8 {
			wg.Go(func() {
				for f := range work {
					got, _, err := sb.ReadFile(ctx, vfs.MustPath(f))
					switch {
					case err != nil:
						errs <- fmt.Errorf("round %d, %s: %w", round, f, err)
					case string(got) != files[f]:
						errs <- fmt.Errorf("round %d, %s: read %q", round, f, got)
					}
				}
			})
		}
		for _, f := range names {
			work <- f
		}
		close(work)
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
	}
	st := b.RemoteCache()
	require.LessOrEqual(t, st.Bytes, int64(cache+cache/16+1024), "the cache passes its bound by one window at most: %+v", st)
}

// TestPackHeadersKeptAcrossRestart: a daemon that read a pack's header
// keeps it in its state directory; after a restart it lists the packs
// but reads only the window it needs.
func TestPackHeadersKeptAcrossRestart(t *testing.T) {
	ctx := context.Background()
	s := open(t, testConfig(t))
	defer s.Close()
	id, files := packedSnapshot(t, s, 50)

	dir := t.TempDir()
	read := func() requests {
		cs := &countingStore{Store: s, requests: requests{puts: map[snapshot.Namespace]int{}}}
		b, err := snapshot.OpenLocalRepo(ctx, dir, snapshot.RepoOptions{})
		require.NoError(t, err)
		defer b.Close()
		require.NoError(t, b.SetRemote(cs, snapshot.RemoteOptions{StateDir: filepath.Join(dir, "remote")}))
		sb, err := b.Fork(ctx, snapshot.Source{Snapshot: id}, snapshot.SessionOptions{})
		require.NoError(t, err)
		got, _, err := sb.ReadFile(ctx, vfs.MustPath("d00/f0007.txt"))
		require.NoError(t, err)
		require.Equal(t, files["d00/f0007.txt"], string(got))
		return cs.reset()
	}
	first := read()
	require.Equal(t, 2, first.packReads, "the header, then a window: %+v", first)
	again := read()
	require.Equal(t, 1, again.packReads, "the window only: the header was kept (the pack cache starts empty): %+v", again)
}

// TestOldPackedBlobPackedAgain: a push relies on a blob already in a pack
// only if its parent's record references it or the pack is younger than
// half the grace period. A second session with the same content, pushed
// after that, packs the blob again; then the first snapshot is deleted
// and remote GC repacks the old pack without the first snapshot's own
// blob — and the second snapshot still forks whole. (A push that took the
// old pack's word would lose the shared blob to a collection that marked
// between the push's plan and the upload of its record: too narrow a race
// to force here, so the test checks the rule — the blob is sent again —
// and fails on a push that relies on the old pack.)
func TestOldPackedBlobPackedAgain(t *testing.T) {
	ctx := context.Background()
	s := open(t, testConfig(t))
	defer s.Close()
	const grace = 2 * time.Second
	a := repoOn(t, s, grace)
	write := func(id string, files map[string]string) *snapshot.Snapshot {
		sess, err := a.NewSession(ctx, snapshot.SessionOptions{ID: id})
		require.NoError(t, err)
		for f, c := range files {
			_, err := sess.WriteFile(ctx, vfs.MustPath(f), strings.NewReader(c), vfs.WriteOptions{CreateParents: true})
			require.NoError(t, err)
		}
		snap, err := a.Snapshot(ctx, sess, "")
		require.NoError(t, err)
		return snap
	}
	first := write("one", map[string]string{"shared.txt": "shared content", "only-one.txt": "first only"})
	rep, err := a.Push(ctx, first.ID)
	require.NoError(t, err)
	require.Equal(t, 2, rep.UploadedBlobs)

	time.Sleep(grace/2 + 500*time.Millisecond) // the pack is now too old to rely on
	secondFiles := map[string]string{"shared.txt": "shared content", "only-two.txt": "second only"}
	second := write("two", secondFiles)
	rep, err = a.Push(ctx, second.ID)
	require.NoError(t, err)
	require.Equal(t, 2, rep.UploadedBlobs, "the shared blob is packed again with the new one: %+v", rep)
	require.Equal(t, 1, rep.UploadedPacks, "%+v", rep)

	require.NoError(t, a.DeleteSession("one"))
	_, err = a.DeleteSnapshots(ctx, []string{first.ID}, snapshot.DeleteOptions{})
	require.NoError(t, err)
	_, err = a.DeleteRemote(ctx, []string{first.ID})
	require.NoError(t, err)
	time.Sleep(grace + 500*time.Millisecond)
	gc, err := a.RemoteGC(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, gc.PacksRepacked+gc.PacksDeleted, "the first pack goes: %+v", gc)
	forkReadsAll(t, s, second.ID, secondFiles)
}

// TestPlantedPackDoesNotWin: another tenant who knows a snapshot's blob
// hashes (they are in its records) plants a newer pack whose header is
// valid and names one of them, holding junk of the right length. A reader
// tries the newest pack first, finds the junk, marks that pack bad and
// reads the blob from the pack the owner pushed: it gets the right bytes,
// and never the junk.
func TestPlantedPackDoesNotWin(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	s := open(t, cfg)
	defer s.Close()
	id, files := packedSnapshot(t, s, 20)
	victim := "d00/f0003.txt"
	content := files[victim]

	// The pack format, written by hand: magic, header length, count, then
	// each blob's hash and length; the name is the hash of all that.
	h := vfs.HashOf([]byte(content))
	head := []byte("vfsdpk1\n\x00\x00\x00\x00")
	head = binary.AppendUvarint(head, 1)
	head = append(head, h[:]...)
	head = binary.AppendUvarint(head, uint64(len(content)))
	binary.BigEndian.PutUint32(head[8:], uint32(len(head)-12))
	junk := bytes.Repeat([]byte("J"), len(content))
	planted := append(append([]byte{}, head...), junk...)
	time.Sleep(1100 * time.Millisecond) // newer than the owner's pack, to the second
	mc := rawClient(t, cfg)
	_, err := mc.PutObject(ctx, cfg.Bucket, path.Join(cfg.Prefix, "packs", vfs.HashOf(head).String()),
		bytes.NewReader(planted), int64(len(planted)), minio.PutObjectOptions{})
	require.NoError(t, err)

	b := repoOn(t, s, time.Hour)
	sb, err := b.Fork(ctx, snapshot.Source{Snapshot: id}, snapshot.SessionOptions{ID: "b"})
	require.NoError(t, err)
	got, _, err := sb.ReadFile(ctx, vfs.MustPath(victim))
	require.NoError(t, err)
	require.Equal(t, content, string(got))
	for f, want := range files {
		got, _, err := sb.ReadFile(ctx, vfs.MustPath(f))
		require.NoError(t, err, f)
		require.Equal(t, want, string(got), f)
	}
}

// TestSmallPacksMerged: five pushes of two new files each leave five
// small packs; once they are past the grace period, remote GC merges them
// into one (every daemon that lists the packs then reads one header, not
// five), and every snapshot still forks whole on a daemon that never saw
// the old packs.
func TestSmallPacksMerged(t *testing.T) {
	ctx := context.Background()
	s := open(t, testConfig(t))
	defer s.Close()
	const grace = 2 * time.Second
	a := repoOn(t, s, grace)
	sa, err := a.NewSession(ctx, snapshot.SessionOptions{ID: "a"})
	require.NoError(t, err)
	all := map[string]string{}
	var snaps []string
	var wants []map[string]string
	for i := range 5 {
		for j := range 2 {
			f := fmt.Sprintf("push%d/file%d.txt", i, j)
			all[f] = fmt.Sprintf("push %d, file %d\n", i, j)
			_, err := sa.WriteFile(ctx, vfs.MustPath(f), strings.NewReader(all[f]), vfs.WriteOptions{CreateParents: true})
			require.NoError(t, err)
		}
		snap, rep := snapshotPushed(t, a, sa)
		require.Equal(t, 1, rep.UploadedPacks, "push %d: %+v", i, rep)
		snaps = append(snaps, snap.ID)
		want := map[string]string{}
		for f, c := range all {
			want[f] = c
		}
		wants = append(wants, want)
	}
	time.Sleep(grace + 500*time.Millisecond)
	gc, err := a.RemoteGC(ctx)
	require.NoError(t, err)
	require.Equal(t, 5, gc.BlobPacks, "%+v", gc)
	require.Equal(t, 5, gc.PacksRepacked, "%+v", gc)
	require.Zero(t, gc.Deleted, "every blob is referenced: %+v", gc)
	var packs int
	require.NoError(t, s.ListPacks(ctx, func(snapshot.ObjectInfo) error { packs++; return nil }))
	require.Equal(t, 1, packs)
	for i, id := range snaps {
		forkReadsAll(t, s, id, wants[i])
	}
	// One pack is not merged again.
	time.Sleep(grace + 500*time.Millisecond)
	gc, err = a.RemoteGC(ctx)
	require.NoError(t, err)
	require.Zero(t, gc.PacksRepacked+gc.PacksDeleted, "%+v", gc)
}
