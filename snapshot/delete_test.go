package snapshot_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// objects counts the objects of a namespace and their bytes.
func objects(t testing.TB, store snapshot.Store, ns snapshot.Namespace) (int, int64) {
	t.Helper()
	n, size := 0, int64(0)
	require.NoError(t, store.List(ctx, ns, func(_ vfs.Hash, s int64) error {
		n++
		size += s
		return nil
	}))
	return n, size
}

// TestDeleteSnapshotsAndGCReclaim: whatever a session can make it can also
// lose. Deleting snapshots and collecting garbage brings the store back to
// its empty size, and never damages a snapshot that stays (later snapshots
// share manifests stored in earlier records).
func TestDeleteSnapshotsAndGCReclaim(t *testing.T) {
	dir := t.TempDir()
	r, err := snapshot.OpenLocalRepo(ctx, dir, snapshot.RepoOptions{})
	require.NoError(t, err)
	store := r.Store()
	_, baseline := objects(t, store, snapshot.Blobs)

	s, err := r.NewSession(ctx, snapshot.SessionOptions{ID: "work"})
	require.NoError(t, err)
	write(t, s, "keep/deep/a.txt", strings.Repeat("kept content\n", 1000))
	write(t, s, "keep/deep/b.txt", "b")
	write(t, s, "other/f.txt", "v1")
	a, err := r.Snapshot(ctx, s, "a")
	require.NoError(t, err)
	write(t, s, "other/f.txt", strings.Repeat("v2", 5000))
	b, err := r.Snapshot(ctx, s, "b")
	require.NoError(t, err)
	require.Less(t, b.ManifestCount(), a.ManifestCount(), "b shares keep/ and keep/deep with a's record")

	// A snapshot a live session needs is refused, naming the session.
	_, err = r.Fork(ctx, snapshot.Source{Snapshot: b.ID}, snapshot.SessionOptions{ID: "fork"})
	require.NoError(t, err)
	_, err = r.DeleteSnapshots(ctx, []string{a.ID, b.ID}, snapshot.DeleteOptions{})
	var inUse *snapshot.InUseError
	require.ErrorAs(t, err, &inUse)
	require.ErrorIs(t, err, vfs.ErrConflict)
	require.Equal(t, []string{"session fork"}, inUse.Holders[b.ID])
	require.Contains(t, err.Error(), "session fork")
	_, err = r.Get(ctx, a.ID)
	require.NoError(t, err, "all or nothing: a stays too")
	// So is one that another holder names.
	_, err = r.DeleteSnapshots(ctx, []string{a.ID}, snapshot.DeleteOptions{Holders: func(id string) []string {
		return []string{"the daemon"}
	}})
	require.ErrorAs(t, err, &inUse)
	// Restoring makes a snapshot needed: recovery replays the restore.
	require.NoError(t, r.Restore(ctx, s, a.ID))
	_, err = r.DeleteSnapshots(ctx, []string{a.ID}, snapshot.DeleteOptions{})
	require.ErrorAs(t, err, &inUse)
	require.Equal(t, []string{"session work"}, inUse.Holders[a.ID])
	require.NoError(t, r.DeleteSession("work"))

	// Deleting a keeps b whole, even read afresh from the store.
	rep, err := r.DeleteSnapshots(ctx, []string{a.ID}, snapshot.DeleteOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{a.ID}, rep.Deleted)
	require.Positive(t, rep.Kept, "b's manifests that a's record held are kept")
	_, err = r.Get(ctx, a.ID)
	require.ErrorIs(t, err, vfs.ErrNotFound)
	snaps, err := r.List(ctx)
	require.NoError(t, err)
	require.Len(t, snaps, 1, "a manifest pack is not a snapshot")
	_, err = r.GC(ctx)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	r, err = snapshot.OpenLocalRepo(ctx, dir, snapshot.RepoOptions{})
	require.NoError(t, err)
	defer func() { r.Close() }()
	store = r.Store()
	got, err := r.Get(ctx, b.ID)
	require.NoError(t, err)
	n, ok, _ := got.Tree.Lookup(p("keep/deep/a.txt"))
	require.True(t, ok)
	blob, err := store.Open(ctx, snapshot.Blobs, n.Blob)
	require.NoError(t, err, "a blob b shares with a survives the GC")
	blob.Close()
	_, err = r.Resolve(ctx, b.ID[:8])
	require.NoError(t, err)

	// Once the last session and snapshot go, GC brings the store back to
	// its empty size.
	require.NoError(t, r.DeleteSession("fork"))
	_, err = r.DeleteSnapshots(ctx, []string{b.ID}, snapshot.DeleteOptions{})
	require.NoError(t, err)
	gc, err := r.GC(ctx)
	require.NoError(t, err)
	require.Positive(t, gc.Packs, "the pack nothing needs is dropped")
	records, _ := objects(t, store, snapshot.Records)
	require.Zero(t, records, "no records or packs are left")
	blobs, size := objects(t, store, snapshot.Blobs)
	require.Equal(t, 1, blobs, "only the empty blob is left")
	require.Equal(t, baseline, size)
	entries, err := filepath.Glob(filepath.Join(dir, "sessions", "*", "upper", "*"))
	require.NoError(t, err)
	require.Empty(t, entries, "no upper files are left")
}

// TestDeleteUnknownSnapshot: an unknown ID changes nothing.
func TestDeleteUnknownSnapshot(t *testing.T) {
	r, _, _ := newRepo(t)
	_, err := r.DeleteSnapshots(ctx, []string{strings.Repeat("ab", 32)}, snapshot.DeleteOptions{})
	require.True(t, errors.Is(err, vfs.ErrNotFound), "%v", err)
}
