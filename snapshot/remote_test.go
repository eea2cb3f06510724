package snapshot_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// flakyStore is a remote that can be switched off, and counts its Puts.
type flakyStore struct {
	snapshot.Store
	down  atomic.Bool
	puts  atomic.Int64
	opens atomic.Int64
}

var errDown = errors.New("remote down (test)")

func (f *flakyStore) Put(ctx context.Context, ns snapshot.Namespace, r io.Reader, o snapshot.PutOptions) (vfs.Hash, int64, error) {
	if f.down.Load() {
		return vfs.Hash{}, 0, errDown
	}
	f.puts.Add(1)
	return f.Store.Put(ctx, ns, r, o)
}

func (f *flakyStore) Open(ctx context.Context, ns snapshot.Namespace, h vfs.Hash) (vfs.Blob, error) {
	if f.down.Load() {
		return nil, errDown
	}
	f.opens.Add(1)
	return f.Store.Open(ctx, ns, h)
}

func (f *flakyStore) Stat(ctx context.Context, ns snapshot.Namespace, h vfs.Hash) (int64, error) {
	if f.down.Load() {
		return 0, errDown
	}
	return f.Store.Stat(ctx, ns, h)
}

func (f *flakyStore) List(ctx context.Context, ns snapshot.Namespace, fn func(vfs.Hash, int64) error) error {
	if f.down.Load() {
		return errDown
	}
	return f.Store.List(ctx, ns, fn)
}

// newRemoteRepo opens a repository (its own local store and sessions) that
// shares remote.
func newRemoteRepo(t *testing.T, remote snapshot.Store, opts snapshot.RemoteOptions) (*snapshot.Repo, string) {
	t.Helper()
	dir := t.TempDir()
	r, err := snapshot.OpenLocalRepo(ctx, dir, snapshot.RepoOptions{})
	require.NoError(t, err)
	if opts.StateDir == "" {
		opts.StateDir = filepath.Join(dir, "remote")
	}
	require.NoError(t, r.SetRemote(remote, opts))
	t.Cleanup(func() { r.Close() })
	return r, dir
}

func TestRemotePushForkRestore(t *testing.T) {
	remote := &flakyStore{Store: snapshot.NewMemory()}
	a, _ := newRemoteRepo(t, remote, snapshot.RemoteOptions{})
	b, _ := newRemoteRepo(t, remote, snapshot.RemoteOptions{})

	sa, err := a.NewSession(ctx, snapshot.SessionOptions{ID: "a"})
	require.NoError(t, err)
	for i := range 20 {
		write(t, sa, fmt.Sprintf("dir%d/f%d.txt", i%4, i), fmt.Sprintf("content %d", i))
	}
	snapA, err := a.Snapshot(ctx, sa, "on A")
	require.NoError(t, err)

	// B does not have it before the push.
	_, err = b.Get(ctx, snapA.ID)
	require.ErrorIs(t, err, vfs.ErrNotFound)

	rep, err := a.Push(ctx, snapA.ID)
	require.NoError(t, err)
	require.Equal(t, 20, rep.Blobs)
	require.Equal(t, 20, rep.UploadedBlobs)
	again, err := a.Push(ctx, snapA.ID)
	require.NoError(t, err)
	require.Zero(t, again.Uploaded, "a second push sends nothing")

	// Fork on B: the tree comes from the remote, the blobs on first read.
	opensBefore := remote.opens.Load()
	sb, err := b.Fork(ctx, snapshot.Source{Snapshot: snapA.ID}, snapshot.SessionOptions{ID: "b"})
	require.NoError(t, err)
	require.LessOrEqual(t, remote.opens.Load()-opensBefore, int64(3), "a fork fetches records, not blobs")
	require.Equal(t, "content 7", read(t, sb, "dir3/f7.txt"))
	require.Equal(t, 1, b.RemoteCache().Blobs)

	// Edit on B, snapshot, push: only the changes go up.
	write(t, sb, "dir3/f7.txt", "edited on B")
	write(t, sb, "new.txt", "new on B")
	snapB, err := b.Snapshot(ctx, sb, "on B")
	require.NoError(t, err)
	require.Equal(t, snapA.ID, snapB.Record.Parent)
	rep, err = b.Push(ctx, snapB.ID)
	require.NoError(t, err)
	require.Equal(t, 2, rep.UploadedBlobs, "only the two changed files' blobs")
	require.Equal(t, 1, rep.Uploaded-rep.UploadedBlobs, "and B's record, which holds the changed manifests")

	// Restore on A.
	require.NoError(t, a.Restore(ctx, sa, snapB.ID))
	require.Equal(t, "edited on B", read(t, sa, "dir3/f7.txt"))
	require.Equal(t, "new on B", read(t, sa, "new.txt"))
	require.Equal(t, "content 8", read(t, sa, "dir0/f8.txt"))
}

func TestRemoteDown(t *testing.T) {
	remote := &flakyStore{Store: snapshot.NewMemory()}
	a, _ := newRemoteRepo(t, remote, snapshot.RemoteOptions{})
	b, _ := newRemoteRepo(t, remote, snapshot.RemoteOptions{})
	sa, err := a.NewSession(ctx, snapshot.SessionOptions{ID: "a"})
	require.NoError(t, err)
	write(t, sa, "x", "local content")
	snap, err := a.Snapshot(ctx, sa, "")
	require.NoError(t, err)

	remote.down.Store(true)
	// Local work goes on.
	require.Equal(t, "local content", read(t, sa, "x"))
	write(t, sa, "y", "more")
	_, err = a.Snapshot(ctx, sa, "")
	require.NoError(t, err)
	// A push fails, and is queued to resume.
	_, err = a.Push(ctx, snap.ID)
	require.ErrorIs(t, err, errDown)
	require.NoError(t, a.QueuePush(snap.ID))
	require.Eventually(t, func() bool { return a.PushStatus().LastError != "" }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, []string{snap.ID}, a.PushStatus().Pending)
	// A remote fork fails with a clear error.
	_, err = b.Fork(ctx, snapshot.Source{Snapshot: snap.ID}, snapshot.SessionOptions{ID: "b"})
	require.ErrorContains(t, err, "retry once it is reachable")
	require.Equal(t, vfs.CodeIO, vfs.CodeOf(err))

	remote.down.Store(false)
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	require.NoError(t, a.WaitPushed(wctx))
	sb, err := b.Fork(ctx, snapshot.Source{Snapshot: snap.ID}, snapshot.SessionOptions{ID: "b"})
	require.NoError(t, err)
	require.Equal(t, "local content", read(t, sb, "x"))
}

func TestRemotePushQueueSurvivesRestart(t *testing.T) {
	remote := &flakyStore{Store: snapshot.NewMemory()}
	dir := t.TempDir()
	a, err := snapshot.OpenLocalRepo(ctx, dir, snapshot.RepoOptions{})
	require.NoError(t, err)
	opts := snapshot.RemoteOptions{StateDir: filepath.Join(dir, "remote")}
	require.NoError(t, a.SetRemote(remote, opts))
	s, err := a.NewSession(ctx, snapshot.SessionOptions{ID: "a"})
	require.NoError(t, err)
	write(t, s, "x", "queued")
	snap, err := a.Snapshot(ctx, s, "")
	require.NoError(t, err)
	remote.down.Store(true)
	require.NoError(t, a.QueuePush(snap.ID))
	require.NoError(t, a.Close())

	remote.down.Store(false)
	a, err = snapshot.OpenLocalRepo(ctx, dir, snapshot.RepoOptions{})
	require.NoError(t, err)
	defer a.Close()
	require.NoError(t, a.SetRemote(remote, opts))
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	require.NoError(t, a.WaitPushed(wctx))
	h, err := vfs.ParseHash(snap.ID)
	require.NoError(t, err)
	_, err = remote.Stat(ctx, snapshot.Records, h)
	require.NoError(t, err)
}

func TestRemoteCacheBounded(t *testing.T) {
	remote := &flakyStore{Store: snapshot.NewMemory()}
	a, _ := newRemoteRepo(t, remote, snapshot.RemoteOptions{})
	const files, size = 40, 1000
	sa, err := a.NewSession(ctx, snapshot.SessionOptions{ID: "a"})
	require.NoError(t, err)
	for i := range files {
		write(t, sa, fmt.Sprintf("f%02d", i), fmt.Sprintf("%0*d", size, i))
	}
	snap, err := a.Snapshot(ctx, sa, "")
	require.NoError(t, err)
	_, err = a.Push(ctx, snap.ID)
	require.NoError(t, err)

	b, _ := newRemoteRepo(t, remote, snapshot.RemoteOptions{CacheBytes: 10 * size})
	sb, err := b.Fork(ctx, snapshot.Source{Snapshot: snap.ID}, snapshot.SessionOptions{ID: "b"})
	require.NoError(t, err)
	// A blob B writes itself is never evicted.
	write(t, sb, "mine", fmt.Sprintf("%0*d", size, 999))
	for round := range 2 {
		for i := range files {
			require.Equal(t, fmt.Sprintf("%0*d", size, i), read(t, sb, fmt.Sprintf("f%02d", i)), "round %d", round)
			st := b.RemoteCache()
			require.LessOrEqual(t, st.Bytes, int64(10*size))
		}
	}
	remote.down.Store(true)
	require.Equal(t, fmt.Sprintf("%0*d", size, 999), read(t, sb, "mine"), "own content reads with the remote down")
	require.Equal(t, fmt.Sprintf("%0*d", size, files-1), read(t, sb, fmt.Sprintf("f%02d", files-1)), "a cached blob too")
}

func TestRemotePrefetch(t *testing.T) {
	remote := &flakyStore{Store: snapshot.NewMemory()}
	a, _ := newRemoteRepo(t, remote, snapshot.RemoteOptions{})
	sa, err := a.NewSession(ctx, snapshot.SessionOptions{ID: "a"})
	require.NoError(t, err)
	for i := range 30 {
		write(t, sa, fmt.Sprintf("d/f%d", i), fmt.Sprint("file ", i))
	}
	snap, err := a.Snapshot(ctx, sa, "")
	require.NoError(t, err)
	_, err = a.Push(ctx, snap.ID)
	require.NoError(t, err)

	b, _ := newRemoteRepo(t, remote, snapshot.RemoteOptions{})
	n, err := b.Prefetch(ctx, snap.ID)
	require.NoError(t, err)
	require.Equal(t, 30, n)
	remote.down.Store(true)
	sb, err := b.Fork(ctx, snapshot.Source{Snapshot: snap.ID}, snapshot.SessionOptions{ID: "b"})
	require.NoError(t, err)
	require.Equal(t, "file 17", read(t, sb, "d/f17"), "prefetched: no remote needed")
}

func TestRemoteCorruptObjectRefused(t *testing.T) {
	mem := snapshot.NewMemory()
	b, _ := newRemoteRepo(t, &corruptStore{Store: mem}, snapshot.RemoteOptions{})
	a, _ := newRemoteRepo(t, mem, snapshot.RemoteOptions{})
	sa, err := a.NewSession(ctx, snapshot.SessionOptions{ID: "a"})
	require.NoError(t, err)
	write(t, sa, "x", "genuine")
	snap, err := a.Snapshot(ctx, sa, "")
	require.NoError(t, err)
	_, err = a.Push(ctx, snap.ID)
	require.NoError(t, err)
	sb, err := b.Fork(ctx, snapshot.Source{Snapshot: snap.ID}, snapshot.SessionOptions{ID: "b"})
	require.NoError(t, err)
	_, _, err = sb.ReadFile(ctx, p("x"))
	require.ErrorIs(t, err, snapshot.ErrCorruptObject)
}

// corruptStore serves blobs with their content changed.
type corruptStore struct{ snapshot.Store }

func (c *corruptStore) Open(ctx context.Context, ns snapshot.Namespace, h vfs.Hash) (vfs.Blob, error) {
	b, err := c.Store.Open(ctx, ns, h)
	if err != nil || ns != snapshot.Blobs {
		return b, err
	}
	defer b.Close()
	data := make([]byte, b.Size())
	_, _ = b.ReadAt(data, 0)
	data = append(data, '!')
	m := snapshot.NewMemory()
	h2, _, _ := m.Put(ctx, ns, bytesReader(data), snapshot.PutOptions{})
	return m.Open(ctx, ns, h2)
}

func bytesReader(b []byte) io.Reader { return &sliceReader{b} }

type sliceReader struct{ b []byte }

func (s *sliceReader) Read(p []byte) (int, error) {
	if len(s.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.b)
	s.b = s.b[n:]
	return n, nil
}

// TestRemoteObjectLargerThanCache: an object of the remote larger than the
// daemon fetches is refused before it is stored here, with an error that
// says which option to raise; the rest of the session reads on.
func TestRemoteObjectLargerThanCache(t *testing.T) {
	mem := snapshot.NewMemory()
	a, _ := newRemoteRepo(t, mem, snapshot.RemoteOptions{})
	sa, err := a.NewSession(ctx, snapshot.SessionOptions{ID: "a"})
	require.NoError(t, err)
	write(t, sa, "big", string(make([]byte, 64<<10)))
	write(t, sa, "small", "small")
	snap, err := a.Snapshot(ctx, sa, "")
	require.NoError(t, err)
	_, err = a.Push(ctx, snap.ID)
	require.NoError(t, err)

	b, _ := newRemoteRepo(t, mem, snapshot.RemoteOptions{CacheBytes: 16 << 10, MaxObjectBytes: 16 << 10})
	sb, err := b.Fork(ctx, snapshot.Source{Snapshot: snap.ID}, snapshot.SessionOptions{ID: "b"})
	require.NoError(t, err)
	_, _, err = sb.ReadFile(ctx, p("big"))
	require.Error(t, err)
	require.Equal(t, vfs.CodeTooLarge, vfs.CodeOf(err), "%v", err)
	require.ErrorContains(t, err, "raise --remote-cache-bytes")
	require.Equal(t, "small", read(t, sb, "small"))
	require.LessOrEqual(t, b.RemoteCache().Bytes, int64(16<<10))
}
