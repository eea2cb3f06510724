package snapshot_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// gcGrace is the grace period of the remote GC tests; their objects are
// dated twice that ago, so that only references keep them.
const gcGrace = time.Hour

// gcBucket returns a bucket holding a pushed snapshot of poisonFiles and an
// unreferenced blob, all older than gcGrace, and a repository on it.
func gcBucket(t *testing.T, opts snapshot.RemoteOptions) (*bucket, *snapshot.Repo, *snapshot.Snapshot, vfs.Hash) {
	t.Helper()
	remote := newBucket()
	opts.Grace = gcGrace
	a, _ := newRemoteRepo(t, remote, opts)
	sa, err := a.NewSession(ctx, snapshot.SessionOptions{ID: "a"})
	require.NoError(t, err)
	writeAll(t, sa, poisonFiles)
	snap, err := a.Snapshot(ctx, sa, "")
	require.NoError(t, err)
	_, err = a.Push(ctx, snap.ID)
	require.NoError(t, err)
	orphan, _, err := remote.Put(ctx, snapshot.Blobs, bytes.NewReader([]byte("an orphan: a push that never finished")), snapshot.PutOptions{})
	require.NoError(t, err)
	remote.age(2 * gcGrace)
	return remote, a, snap, orphan
}

// contentAddressed plants data in ns under its own hash and returns it.
func contentAddressed(b *bucket, ns snapshot.Namespace, data []byte) vfs.Hash {
	h := vfs.HashOf(data)
	b.Plant(ns, h, data, time.Now().Add(-2*gcGrace))
	return h
}

// packOf encodes a manifest pack holding data under the name h, whatever
// data's hash is.
func packOf(entries ...[]byte) []byte {
	b := []byte("vfsd-pack/1\n")
	for i := 0; i+1 < len(entries); i += 2 {
		b = append(b, entries[i]...)
		b = binary.AppendUvarint(b, uint64(len(entries[i+1])))
		b = append(b, entries[i+1]...)
	}
	return b
}

// rootOf returns the root manifest's hash of snapshot snap, as its record
// in the remote says.
func rootOf(t *testing.T, r *snapshot.Repo, snap *snapshot.Snapshot) vfs.Hash {
	t.Helper()
	got, err := r.Get(ctx, snap.ID)
	require.NoError(t, err)
	return got.Record.Root
}

// TestRemoteGCSkipsForeignRecords: anyone who can write the bucket can put
// anything under snapshots/. None of it may stop remote GC or make it
// delete what a snapshot references: an object whose content is not its
// name, content that is no record, a record line that does not parse, a
// record whose root no record holds, a truncated pack. Each is skipped and
// reported; GC deletes the orphan and nothing the snapshot needs, which
// another daemon then forks whole. On the old code the first of them
// failed the collection, and so every collection after it.
func TestRemoteGCSkipsForeignRecords(t *testing.T) {
	remote, a, snap, orphan := gcBucket(t, snapshot.RemoteOptions{})
	old := time.Now().Add(-2 * gcGrace)
	remote.Plant(snapshot.Records, vfs.HashOf([]byte("x")), []byte("not x"), old)
	contentAddressed(remote, snapshot.Records, []byte("hello, I am no record"))
	contentAddressed(remote, snapshot.Records, []byte("vfsd-snapshot/1\n{not json\n"))
	contentAddressed(remote, snapshot.Records, []byte(fmt.Sprintf("vfsd-snapshot/1\n{\"format\":\"vfsd-snapshot/1\",\"root\":%q}\n", vfs.HashOf([]byte("nowhere")))))
	contentAddressed(remote, snapshot.Records, []byte("vfsd-pack/1\n0123456789"))
	rep, err := a.RemoteGC(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Deleted, "%+v", rep)
	require.Equal(t, 5, rep.Skipped, "%+v", rep)
	require.Len(t, rep.SkippedWhy, 5)
	require.False(t, remote.has(snapshot.Blobs, orphan))
	for _, c := range poisonFiles {
		require.True(t, remote.has(snapshot.Blobs, vfs.HashOf([]byte(c))), "a referenced blob is kept")
	}
	forksWhole(t, remote, snap.ID, poisonFiles)
}

// TestRemoteGCIgnoresLyingManifest: a pack planted under snapshots/ that
// names the snapshot's root manifest but holds an empty directory under
// that name. On the old code, which read it after the snapshot's record
// and let the last one win, GC marked nothing and deleted every blob of
// the snapshot. A manifest that does not match its hash is never used.
func TestRemoteGCIgnoresLyingManifest(t *testing.T) {
	remote, a, snap, orphan := gcBucket(t, snapshot.RemoteOptions{})
	// It lists after the snapshot's record.
	root := rootOf(t, a, snap)
	id, err := vfs.ParseHash(snap.ID)
	require.NoError(t, err)
	for i := 0; ; i++ {
		filler := vfs.HashOf([]byte(fmt.Sprint(i)))
		lie := packOf(root[:], []byte("vfsd-dir/2\n"), filler[:], []byte("filler"))
		if h := vfs.HashOf(lie); bytes.Compare(h[:], id[:]) > 0 {
			contentAddressed(remote, snapshot.Records, lie)
			break
		}
	}

	rep, err := a.RemoteGC(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Deleted, "%+v", rep)
	require.False(t, remote.has(snapshot.Blobs, orphan))
	for f, c := range poisonFiles {
		require.True(t, remote.has(snapshot.Blobs, vfs.HashOf([]byte(c))), "%s is kept", f)
	}
	forksWhole(t, remote, snap.ID, poisonFiles)
}

// TestRemoteGCKeepsAllForUnknownFormat: a record in a format this daemon
// does not know (a newer vfsd's) may reference any blob, so GC deletes
// nothing and says why, naming the object.
func TestRemoteGCKeepsAllForUnknownFormat(t *testing.T) {
	remote, a, _, orphan := gcBucket(t, snapshot.RemoteOptions{})
	newer := contentAddressed(remote, snapshot.Records, []byte("vfsd-snapshot/2\n{\"format\":\"vfsd-snapshot/2\"}\n"))
	rep, err := a.RemoteGC(ctx)
	require.ErrorIs(t, err, snapshot.ErrRemoteGCRefused)
	require.ErrorContains(t, err, newer.String())
	require.Zero(t, rep.Deleted)
	require.True(t, remote.has(snapshot.Blobs, orphan))
}

// TestRemoteGCHugeRecordBoundedMemory: a planted object of 96 MiB under
// snapshots/ (its name its hash) is not read into memory: GC looks at its
// head, finds no record and skips it. On the old code GC allocated the
// whole object, then failed.
func TestRemoteGCHugeRecordBoundedMemory(t *testing.T) {
	remote, a, _, orphan := gcBucket(t, snapshot.RemoteOptions{})
	huge := bytes.Repeat([]byte("not a record, and large. "), 96<<20/25)
	contentAddressed(remote, snapshot.Records, huge)
	allocated := allocatedBy(t, func() {
		rep, err := a.RemoteGC(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, rep.Deleted, "%+v", rep)
		require.Equal(t, 1, rep.Skipped, "%+v", rep)
	})
	require.Less(t, allocated, uint64(16<<20), "bytes allocated by the collection")
	require.False(t, remote.has(snapshot.Blobs, orphan))
}

// allocatedBy returns the bytes the process allocated while fn ran.
func allocatedBy(t *testing.T, fn func()) uint64 {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// manyBlobs is a bucket that also lists n unreferenced old blobs that take
// no memory (their names are made up as they are listed); deleting one
// counts it.
type manyBlobs struct {
	*bucket
	n       int
	deleted int
}

func (m *manyBlobs) ListInfo(ctx context.Context, ns snapshot.Namespace, fn func(snapshot.ObjectInfo) error) error {
	if err := m.bucket.ListInfo(ctx, ns, fn); err != nil || ns != snapshot.Blobs {
		return err
	}
	old := time.Now().Add(-2 * gcGrace)
	for i := range m.n {
		var h vfs.Hash
		binary.BigEndian.PutUint64(h[:], uint64(i)+1)
		if err := fn(snapshot.ObjectInfo{Hash: h, Size: 1, Modified: old}); err != nil {
			return err
		}
	}
	return nil
}

func (m *manyBlobs) Delete(ctx context.Context, ns snapshot.Namespace, h vfs.Hash) error {
	m.bucket.mu.Lock()
	m.deleted++
	m.bucket.mu.Unlock()
	return m.bucket.Delete(ctx, ns, h)
}

// TestRemoteGCManyBlobsBoundedMemory: a million planted blobs, none
// referenced, are deleted as they are listed, in batches: the collection's
// memory does not grow with them. On the old code it gathered them all in
// a list first (over 100 MB allocated here).
func TestRemoteGCManyBlobsBoundedMemory(t *testing.T) {
	remote, _, _, _ := gcBucket(t, snapshot.RemoteOptions{})
	many := &manyBlobs{bucket: remote, n: 1 << 20}
	r, _ := newRemoteRepo(t, many, snapshot.RemoteOptions{Grace: gcGrace})
	allocated := allocatedBy(t, func() {
		rep, err := r.RemoteGC(ctx)
		require.NoError(t, err)
		require.Equal(t, many.n+1, rep.Deleted)
	})
	require.Equal(t, many.n+1, many.deleted)
	require.Less(t, allocated, uint64(32<<20), "bytes allocated by the collection")
}

// TestRemoteGCSurvivesUndeletableBlob: an unreferenced blob the remote
// refuses to delete (a legal hold, a deny policy) is reported and passed
// over; the rest is collected. On the old code the collection failed at
// it, and the blobs listed after it were never collected.
func TestRemoteGCSurvivesUndeletableBlob(t *testing.T) {
	remote, a, _, orphan := gcBucket(t, snapshot.RemoteOptions{})
	var stuck vfs.Hash
	for i := 0; ; i++ {
		stuck = contentAddressed(remote, snapshot.Blobs, []byte(fmt.Sprint("held ", i)))
		if bytes.Compare(stuck[:], orphan[:]) < 0 {
			break // listed first
		}
		require.NoError(t, remote.Delete(ctx, snapshot.Blobs, stuck))
	}
	remote.undeletable[stuck] = true
	rep, err := a.RemoteGC(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Deleted, "%+v", rep)
	require.Equal(t, 1, rep.DeleteFailed, "%+v", rep)
	require.ErrorContains(t, errorString(rep.DeleteError), "legal hold")
	require.False(t, remote.has(snapshot.Blobs, orphan))
	require.True(t, remote.has(snapshot.Blobs, stuck))
}

type errorString string

func (e errorString) Error() string { return string(e) }

// TestRemoteGCRefusesPastItsBound: past RemoteOptions.GCMaxEntries hashes
// (manifests, referenced blobs, snapshots) GC stops before deleting
// anything, saying which bound to raise.
func TestRemoteGCRefusesPastItsBound(t *testing.T) {
	remote, a, _, orphan := gcBucket(t, snapshot.RemoteOptions{GCMaxEntries: 4})
	rep, err := a.RemoteGC(ctx)
	require.ErrorIs(t, err, snapshot.ErrRemoteGCRefused)
	require.ErrorContains(t, err, "GCMaxEntries")
	require.Zero(t, rep.Deleted)
	require.True(t, remote.has(snapshot.Blobs, orphan))
}

// movingBucket is a bucket where, the first time GC opens one record,
// another daemon deletes that snapshot from the remote (DeleteRemote: its
// manifests go to a new pack, then the record goes) before GC reads it.
type movingBucket struct {
	*bucket
	victim vfs.Hash
	move   func()
	once   sync.Once
}

func (m *movingBucket) Open(ctx context.Context, ns snapshot.Namespace, h vfs.Hash) (vfs.Blob, error) {
	if ns == snapshot.Records && h == m.victim {
		m.once.Do(m.move)
	}
	return m.bucket.Open(ctx, ns, h)
}

// TestRemoteGCFollowsManifestsMovedMeanwhile: while GC runs, another daemon
// deletes the parent snapshot from the remote: the manifests its child
// shares move into a pack the GC's listing has passed, and the record
// vanishes before GC reads it. GC lists again for them rather than take
// the child's unchanged directories for unreferenced (which would delete
// their blobs), and the child still forks whole.
func TestRemoteGCFollowsManifestsMovedMeanwhile(t *testing.T) {
	remote := newBucket()
	a, _ := newRemoteRepo(t, remote, snapshot.RemoteOptions{Grace: gcGrace})
	sa, err := a.NewSession(ctx, snapshot.SessionOptions{ID: "a"})
	require.NoError(t, err)
	writeAll(t, sa, poisonFiles)
	parent, err := a.Snapshot(ctx, sa, "")
	require.NoError(t, err)
	_, err = a.Push(ctx, parent.ID)
	require.NoError(t, err)
	change := map[string]string{"src/main.go": "package main // changed\n"}
	writeAll(t, sa, change)
	child, err := a.Snapshot(ctx, sa, "")
	require.NoError(t, err)
	_, err = a.Push(ctx, child.ID)
	require.NoError(t, err)
	remote.age(2 * gcGrace)

	pid, err := vfs.ParseHash(parent.ID)
	require.NoError(t, err)
	other, _ := newRemoteRepo(t, remote, snapshot.RemoteOptions{Grace: gcGrace})
	moving := &movingBucket{bucket: remote, victim: pid, move: func() {
		deleted, err := other.DeleteRemote(ctx, []string{parent.ID})
		require.NoError(t, err)
		require.Equal(t, []string{parent.ID}, deleted)
	}}
	gc, _ := newRemoteRepo(t, moving, snapshot.RemoteOptions{Grace: gcGrace})
	rep, err := gc.RemoteGC(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Deleted, "only the parent's old main.go: %+v", rep)
	forksWhole(t, remote, child.ID, maps(poisonFiles, change))
}
