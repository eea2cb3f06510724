package s3store_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/snapshot/s3store"
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

// countingStore counts the requests a repository makes of its remote.
type countingStore struct {
	*s3store.Store
	mu sync.Mutex
	requests
}

// requests are the counts of a countingStore.
type requests struct {
	puts                           map[snapshot.Namespace]int
	absent                         int // puts that skipped the existence check
	lists, stats, touches, deletes int
	opens                          int
	packPuts, packReads            int
}

func (c *countingStore) count(f func()) {
	c.mu.Lock()
	f()
	c.mu.Unlock()
}

func (c *countingStore) Put(ctx context.Context, ns snapshot.Namespace, r io.Reader, o snapshot.PutOptions) (vfs.Hash, int64, error) {
	info, err := c.PutInfo(ctx, ns, r, o)
	return info.Hash, info.Size, err
}

func (c *countingStore) PutInfo(ctx context.Context, ns snapshot.Namespace, r io.Reader, o snapshot.PutOptions) (snapshot.ObjectInfo, error) {
	c.count(func() {
		c.puts[ns]++
		if o.Absent {
			c.absent++
		}
	})
	return c.Store.PutInfo(ctx, ns, r, o)
}

func (c *countingStore) Open(ctx context.Context, ns snapshot.Namespace, h vfs.Hash) (vfs.Blob, error) {
	c.count(func() { c.opens++ })
	return c.Store.Open(ctx, ns, h)
}

func (c *countingStore) OpenCapped(ctx context.Context, ns snapshot.Namespace, h vfs.Hash, max int64) (vfs.Blob, error) {
	c.count(func() { c.opens++ })
	return c.Store.OpenCapped(ctx, ns, h, max)
}

func (c *countingStore) List(ctx context.Context, ns snapshot.Namespace, fn func(vfs.Hash, int64) error) error {
	c.count(func() { c.lists++ })
	return c.Store.List(ctx, ns, fn)
}

func (c *countingStore) ListInfo(ctx context.Context, ns snapshot.Namespace, fn func(snapshot.ObjectInfo) error) error {
	c.count(func() { c.lists++ })
	return c.Store.ListInfo(ctx, ns, fn)
}

func (c *countingStore) Stat(ctx context.Context, ns snapshot.Namespace, h vfs.Hash) (int64, error) {
	c.count(func() { c.stats++ })
	return c.Store.Stat(ctx, ns, h)
}

func (c *countingStore) Touch(ctx context.Context, ns snapshot.Namespace, h vfs.Hash) error {
	c.count(func() { c.touches++ })
	return c.Store.Touch(ctx, ns, h)
}

func (c *countingStore) PutPack(ctx context.Context, name vfs.Hash, size int64, r io.Reader) (snapshot.ObjectInfo, error) {
	c.count(func() { c.packPuts++ })
	return c.Store.PutPack(ctx, name, size, r)
}

func (c *countingStore) ReadPack(ctx context.Context, name vfs.Hash, off, n int64) ([]byte, string, error) {
	c.count(func() { c.packReads++ })
	return c.Store.ReadPack(ctx, name, off, n)
}

func (c *countingStore) ListPacks(ctx context.Context, fn func(snapshot.ObjectInfo) error) error {
	c.count(func() { c.lists++ })
	return c.Store.ListPacks(ctx, fn)
}

func (c *countingStore) Delete(ctx context.Context, ns snapshot.Namespace, h vfs.Hash) error {
	c.count(func() { c.deletes++ })
	return c.Store.Delete(ctx, ns, h)
}

// reset returns the counts so far and zeroes them.
func (c *countingStore) reset() requests {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.requests
	c.requests = requests{puts: map[snapshot.Namespace]int{}}
	return out
}

// TestPushAfterTenChanges: after a pushed snapshot of 300 files in 30
// directories, a snapshot after 10 changes uploads exactly the 10 new
// blobs and one record holding the changed directories' manifests, and
// nothing else: no listing of the remote (the first push's is reused), no
// existence check per object, nothing touched, deleted or read back;
// pushing it again sends nothing and reads nothing back, but lists the
// remote anew (how an object overwritten since is found and repaired).
func TestPushAfterTenChanges(t *testing.T) {
	ctx := context.Background()
	s := open(t, testConfig(t))
	defer s.Close()
	cs := &countingStore{Store: s, requests: requests{puts: map[snapshot.Namespace]int{}}}
	dir := t.TempDir()
	a, err := snapshot.OpenLocalRepo(ctx, dir, snapshot.RepoOptions{})
	require.NoError(t, err)
	defer a.Close()
	require.NoError(t, a.SetRemote(cs, snapshot.RemoteOptions{StateDir: filepath.Join(dir, "remote")}))

	sa, err := a.NewSession(ctx, snapshot.SessionOptions{ID: "a"})
	require.NoError(t, err)
	file := func(i int) vfs.Path { return vfs.MustPath(fmt.Sprintf("g%d/d%02d/f%03d.txt", i/100, i/10, i)) }
	for i := range 300 {
		_, err := sa.WriteFile(ctx, file(i), strings.NewReader(fmt.Sprintf("file %d\n", i)), vfs.WriteOptions{CreateParents: true})
		require.NoError(t, err)
	}
	first, err := a.Snapshot(ctx, sa, "300 files")
	require.NoError(t, err)
	rep, err := a.Push(ctx, first.ID)
	require.NoError(t, err)
	require.Equal(t, 300, rep.UploadedBlobs)
	require.Equal(t, 1, rep.UploadedPacks, "300 small blobs in one pack")
	require.Equal(t, 1+3+30, rep.UploadedManifests, "root, 3 groups, 30 directories")
	c := cs.reset()
	require.Zero(t, c.puts[snapshot.Blobs], "no blob of its own")
	require.Equal(t, 1, c.packPuts)
	require.Equal(t, rep.Uploaded-rep.UploadedPacks, c.puts[snapshot.Records])
	require.Equal(t, c.puts[snapshot.Records], c.absent, "a push checks nothing it listed as missing")
	require.Equal(t, len(snapshot.Namespaces)+1, c.lists, "one listing per namespace and of the packs, once")
	require.Zero(t, c.opens+c.packReads, "nothing read back: the listing lacked all of it")

	// 10 changes: files 5, 15, ..., 95 (10 directories of group 0).
	for i := 5; i < 100; i += 10 {
		_, err := sa.WriteFile(ctx, file(i), strings.NewReader(fmt.Sprintf("file %d, changed\n", i)), vfs.WriteOptions{})
		require.NoError(t, err)
	}
	second, err := a.Snapshot(ctx, sa, "10 changes")
	require.NoError(t, err)
	rep, err = a.Push(ctx, second.ID)
	require.NoError(t, err)
	require.Equal(t, 300, rep.Blobs)
	require.Equal(t, 10, rep.UploadedBlobs)
	require.Equal(t, 2, rep.Uploaded, "a pack of the 10 blobs and the snapshot's record")
	require.Equal(t, 1+1+10, rep.UploadedManifests, "the root, g0 and the 10 changed directories")
	c = cs.reset()
	require.Equal(t, map[snapshot.Namespace]int{snapshot.Records: 1}, c.puts)
	require.Equal(t, 1, c.packPuts)
	require.Zero(t, c.lists, "no listing of the remote again")
	require.Equal(t, 1, c.absent, "no existence check before an upload")
	require.Zero(t, c.stats+c.touches+c.deletes+c.opens+c.packReads, "no request per object besides the uploads")

	rep, err = a.Push(ctx, second.ID)
	require.NoError(t, err)
	require.Zero(t, rep.Uploaded)
	require.Zero(t, rep.Verified+rep.Repaired+rep.Rewritten+rep.Unrepaired, "%+v", rep)
	c = cs.reset()
	require.Zero(t, c.puts[snapshot.Blobs]+c.puts[snapshot.Records]+c.packPuts+c.stats+c.touches+c.opens+c.packReads)
	require.Equal(t, len(snapshot.Namespaces)+1, c.lists, "a push again lists the remote anew")
}

// TestDeleteRemote deletes a pushed snapshot from the remote: its record
// goes, a child snapshot that shares its manifests still forks whole
// elsewhere, and remote garbage collection then collects the blob only the
// deleted snapshot referenced.
func TestDeleteRemote(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	s := open(t, cfg)
	defer s.Close()
	const grace = 2 * time.Second
	a := repoOn(t, s, grace)
	sa, err := a.NewSession(ctx, snapshot.SessionOptions{ID: "a"})
	require.NoError(t, err)
	files := map[string]string{"src/a.go": "a v1", "src/b.go": "b", "docs/README": "readme"}
	for f, c := range files {
		_, err := sa.WriteFile(ctx, vfs.MustPath(f), strings.NewReader(c), vfs.WriteOptions{CreateParents: true})
		require.NoError(t, err)
	}
	first, err := a.Snapshot(ctx, sa, "first")
	require.NoError(t, err)
	_, err = a.Push(ctx, first.ID)
	require.NoError(t, err)
	files["src/a.go"] = "a v2"
	_, err = sa.WriteFile(ctx, vfs.MustPath("src/a.go"), strings.NewReader("a v2"), vfs.WriteOptions{})
	require.NoError(t, err)
	second, err := a.Snapshot(ctx, sa, "second")
	require.NoError(t, err)
	_, err = a.Push(ctx, second.ID)
	require.NoError(t, err)

	require.NoError(t, a.DeleteSession("a"))
	_, err = a.DeleteSnapshots(ctx, []string{first.ID}, snapshot.DeleteOptions{})
	require.NoError(t, err)
	deleted, err := a.DeleteRemote(ctx, []string{first.ID})
	require.NoError(t, err)
	require.Equal(t, []string{first.ID}, deleted)
	id, err := vfs.ParseHash(first.ID)
	require.NoError(t, err)
	_, err = s.Stat(ctx, snapshot.Records, id)
	require.ErrorIs(t, err, vfs.ErrNotFound)
	deleted, err = a.DeleteRemote(ctx, []string{first.ID})
	require.NoError(t, err)
	require.Empty(t, deleted, "gone already")

	// The child still forks whole on a repository that never saw either.
	c := repoOn(t, s, grace)
	sc, err := c.Fork(ctx, snapshot.Source{Snapshot: second.ID}, snapshot.SessionOptions{ID: "c"})
	require.NoError(t, err)
	for f, want := range files {
		got, _, err := sc.ReadFile(ctx, vfs.MustPath(f))
		require.NoError(t, err, f)
		require.Equal(t, want, string(got), f)
	}
	_, err = c.Get(ctx, first.ID)
	require.ErrorIs(t, err, vfs.ErrNotFound, "the deleted snapshot is in no remote record")

	// Remote GC collects "a v1", which only the deleted snapshot had: it
	// shared a pack with "b" and the README, which is repacked without it.
	require.True(t, bucketHolds(t, rawClient(t, cfg), cfg, "a v1"))
	// A reader that lists the packs now and reads only "a v2" (alone in
	// the second push's pack) has the first pack in its index when the
	// collection repacks it.
	e := repoOn(t, s, grace)
	se, err := e.Fork(ctx, snapshot.Source{Snapshot: second.ID}, snapshot.SessionOptions{ID: "e"})
	require.NoError(t, err)
	got, _, err := se.ReadFile(ctx, vfs.MustPath("src/a.go"))
	require.NoError(t, err)
	require.Equal(t, "a v2", string(got))
	time.Sleep(grace + time.Second)
	gc, err := c.RemoteGC(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, gc.Snapshots)
	require.Equal(t, 1, gc.Deleted, "%+v", gc)
	require.Equal(t, 1, gc.PacksRepacked, "%+v", gc)
	require.Equal(t, 2, gc.BlobPacks, "%+v", gc)
	require.False(t, bucketHolds(t, rawClient(t, cfg), cfg, "a v1"), "the deleted snapshot's content is gone from every object")
	// And the rest reads whole on a repository that never saw the packs.
	forkReadsAll(t, s, second.ID, files)
	// The stale reader finds the old pack gone, lists the packs again
	// and reads from the new one.
	for f, want := range files {
		got, _, err := se.ReadFile(ctx, vfs.MustPath(f))
		require.NoError(t, err, f)
		require.Equal(t, want, string(got), f)
	}
	// Nothing is left to collect.
	gc, err = c.RemoteGC(ctx)
	require.NoError(t, err)
	require.Zero(t, gc.Deleted+gc.PacksRepacked+gc.PacksDeleted, "%+v", gc)
}

// bucketHolds reports whether any object under cfg's prefix holds data,
// read with a plain S3 client.
func bucketHolds(t *testing.T, mc *minio.Client, cfg s3store.Config, data string) bool {
	t.Helper()
	ctx := context.Background()
	for o := range mc.ListObjects(ctx, cfg.Bucket, minio.ListObjectsOptions{Prefix: cfg.Prefix + "/", Recursive: true}) {
		require.NoError(t, o.Err)
		obj, err := mc.GetObject(ctx, cfg.Bucket, o.Key, minio.GetObjectOptions{})
		require.NoError(t, err)
		b, err := io.ReadAll(obj)
		obj.Close()
		require.NoError(t, err)
		if bytes.Contains(b, []byte(data)) {
			return true
		}
	}
	return false
}
