package s3store_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// repoOn opens a repository of its own that shares the S3 remote s.
func repoOn(t *testing.T, s snapshot.Store, grace time.Duration) *snapshot.Repo {
	t.Helper()
	dir := t.TempDir()
	r, err := snapshot.OpenLocalRepo(context.Background(), dir, snapshot.RepoOptions{})
	require.NoError(t, err)
	require.NoError(t, r.SetRemote(s, snapshot.RemoteOptions{Grace: grace, StateDir: filepath.Join(dir, "remote")}))
	t.Cleanup(func() { r.Close() })
	return r
}

// TestRemoteOverS3 pushes on one repository and forks on another through a
// real S3 server, then collects the remote's garbage: an orphan blob older
// than the grace period goes, a young one and every referenced one stay.
func TestRemoteOverS3(t *testing.T) {
	ctx := context.Background()
	s := open(t, testConfig(t))
	defer s.Close()
	const grace = 2 * time.Second
	a, b := repoOn(t, s, grace), repoOn(t, s, grace)

	sa, err := a.NewSession(ctx, snapshot.SessionOptions{ID: "a"})
	require.NoError(t, err)
	for _, f := range []string{"src/a.go", "src/b.go", "README"} {
		_, err := sa.WriteFile(ctx, vfs.MustPath(f), strings.NewReader("content of "+f), vfs.WriteOptions{CreateParents: true})
		require.NoError(t, err)
	}
	snap, err := a.Snapshot(ctx, sa, "")
	require.NoError(t, err)
	rep, err := a.Push(ctx, snap.ID)
	require.NoError(t, err)
	require.Equal(t, 3, rep.UploadedBlobs)

	sb, err := b.Fork(ctx, snapshot.Source{Snapshot: snap.ID}, snapshot.SessionOptions{ID: "b"})
	require.NoError(t, err)
	got, _, err := sb.ReadFile(ctx, vfs.MustPath("src/b.go"))
	require.NoError(t, err)
	require.Equal(t, "content of src/b.go", string(got))

	// An orphan: a push that never finished.
	old, _, err := s.Put(ctx, snapshot.Blobs, bytes.NewReader([]byte("orphan, old")), snapshot.PutOptions{})
	require.NoError(t, err)
	time.Sleep(grace + time.Second)
	young, _, err := s.Put(ctx, snapshot.Blobs, bytes.NewReader([]byte("orphan, young")), snapshot.PutOptions{})
	require.NoError(t, err)

	gc, err := b.RemoteGC(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, gc.Deleted, "%+v", gc)
	require.Equal(t, 1, gc.Young)
	_, err = s.Stat(ctx, snapshot.Blobs, old)
	require.ErrorIs(t, err, vfs.ErrNotFound)
	_, err = s.Stat(ctx, snapshot.Blobs, young)
	require.NoError(t, err)

	// The snapshot still forks whole on a third repository.
	c := repoOn(t, s, grace)
	sc, err := c.Fork(ctx, snapshot.Source{Snapshot: snap.ID}, snapshot.SessionOptions{ID: "c"})
	require.NoError(t, err)
	for _, f := range []string{"src/a.go", "src/b.go", "README"} {
		got, _, err := sc.ReadFile(ctx, vfs.MustPath(f))
		require.NoError(t, err)
		require.Equal(t, "content of "+f, string(got))
	}
}

// TestTouch renews an object's time; a missing one is not found.
func TestTouch(t *testing.T) {
	ctx := context.Background()
	s := open(t, testConfig(t))
	defer s.Close()
	h, _, err := s.Put(ctx, snapshot.Blobs, bytes.NewReader([]byte("touch me")), snapshot.PutOptions{})
	require.NoError(t, err)
	before := modified(t, s, h)
	time.Sleep(1100 * time.Millisecond) // S3 times have a resolution of a second
	require.NoError(t, s.Touch(ctx, snapshot.Blobs, h))
	require.True(t, modified(t, s, h).After(before))
	require.ErrorIs(t, s.Touch(ctx, snapshot.Blobs, vfs.HashOf([]byte("absent"))), vfs.ErrNotFound)
	require.Equal(t, []byte("touch me"), readAll(t, s, h))
}
