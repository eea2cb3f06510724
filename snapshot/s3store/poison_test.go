package s3store_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/snapshot/s3store"
	"github.com/vfsd/vfsd/vfs"
)

var s3PoisonFiles = map[string]string{
	"src/main.go": "package main\n\nfunc main() {}\n",
	"src/util.go": "package main\n\nfunc util() int { return 42 }\n",
	"docs/README": "read me\n",
}

// forkReadsAll forks snapshot id on a repository of its own (another
// daemon) and reads every file of want.
func forkReadsAll(t *testing.T, s snapshot.Store, id string, want map[string]string) {
	t.Helper()
	ctx := context.Background()
	b := repoOn(t, s, time.Hour)
	sb, err := b.Fork(ctx, snapshot.Source{Snapshot: id}, snapshot.SessionOptions{ID: "reader"})
	require.NoError(t, err, "fork on another daemon")
	for f, c := range want {
		got, _, err := sb.ReadFile(ctx, vfs.MustPath(f))
		require.NoError(t, err, "read %s on another daemon", f)
		require.Equal(t, c, string(got), f)
	}
}

// TestPushRepairsPoisonedBucket: before a push, another tenant of the
// bucket puts junk, with the plain S3 client, under three keys the push
// writes: a blob's (other size), another blob's (the right size) and the
// snapshot's record's (the right size). The push must not take the
// listing's word for them: another daemon then forks the snapshot and
// reads every file. On the old code the push skipped all three as present
// and the fork failed with corrupt_object.
func TestPushRepairsPoisonedBucket(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	s := open(t, cfg)
	defer s.Close()
	mc := rawClient(t, cfg)
	a := repoOn(t, s, time.Hour)
	sa, err := a.NewSession(ctx, snapshot.SessionOptions{ID: "a"})
	require.NoError(t, err)
	for f, c := range s3PoisonFiles {
		_, err := sa.WriteFile(ctx, vfs.MustPath(f), strings.NewReader(c), vfs.WriteOptions{CreateParents: true})
		require.NoError(t, err)
	}
	snap, err := a.Snapshot(ctx, sa, "")
	require.NoError(t, err)
	id, err := vfs.ParseHash(snap.ID)
	require.NoError(t, err)

	plant(t, mc, cfg, snapshot.Blobs, vfs.HashOf([]byte(s3PoisonFiles["src/main.go"])), []byte("junk"))
	util := s3PoisonFiles["src/util.go"]
	plant(t, mc, cfg, snapshot.Blobs, vfs.HashOf([]byte(util)), bytes.Repeat([]byte("X"), len(util)))
	rec, err := a.Store().Open(ctx, snapshot.Records, id)
	require.NoError(t, err)
	plant(t, mc, cfg, snapshot.Records, id, bytes.Repeat([]byte("Y"), int(rec.Size())))
	rec.Close()

	rep, err := a.Push(ctx, snap.ID)
	require.NoError(t, err)
	require.Equal(t, 3, rep.Repaired, "%+v", rep)
	forkReadsAll(t, s, snap.ID, s3PoisonFiles)
	require.Equal(t, util, string(rawObject(t, mc, cfg, snapshot.Blobs, vfs.HashOf([]byte(util)))))
}

// TestRePushRepairsOverwrittenS3Object: after a push, another tenant
// overwrites the pack holding the snapshot's small blobs, changing one
// blob's bytes (same size, header kept). Another daemon's read of that
// file fails with corrupt_object — never the planted bytes — while the
// other files of the pack read right; the owner pushing the snapshot again
// sees the pack's new ETag, packs its blobs again unread (a pack of the
// same name: the planted one is replaced), and the same fork then reads
// the file. On the old code (an object per blob) the same held for an
// overwritten blob; this is the attack on packs.
func TestRePushRepairsOverwrittenS3Object(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	s := open(t, cfg)
	defer s.Close()
	mc := rawClient(t, cfg)
	a := repoOn(t, s, time.Hour)
	sa, err := a.NewSession(ctx, snapshot.SessionOptions{ID: "a"})
	require.NoError(t, err)
	for f, c := range s3PoisonFiles {
		_, err := sa.WriteFile(ctx, vfs.MustPath(f), strings.NewReader(c), vfs.WriteOptions{CreateParents: true})
		require.NoError(t, err)
	}
	snap, err := a.Snapshot(ctx, sa, "")
	require.NoError(t, err)
	rep, err := a.Push(ctx, snap.ID)
	require.NoError(t, err)
	require.Equal(t, 1, rep.UploadedPacks, "%+v", rep)

	readme := s3PoisonFiles["docs/README"]
	key, pack := onlyPack(t, mc, cfg)
	at := bytes.Index(pack, []byte(readme))
	require.Positive(t, at)
	copy(pack[at:], bytes.Repeat([]byte("Z"), len(readme)))
	_, err = mc.PutObject(ctx, cfg.Bucket, key, bytes.NewReader(pack), int64(len(pack)), minio.PutObjectOptions{})
	require.NoError(t, err)

	b := repoOn(t, s, time.Hour)
	sb, err := b.Fork(ctx, snapshot.Source{Snapshot: snap.ID}, snapshot.SessionOptions{ID: "b"})
	require.NoError(t, err)
	_, _, err = sb.ReadFile(ctx, vfs.MustPath("docs/README"))
	require.ErrorIs(t, err, snapshot.ErrCorruptObject)
	got, _, err := sb.ReadFile(ctx, vfs.MustPath("src/main.go"))
	require.NoError(t, err, "the pack's other blobs still check out")
	require.Equal(t, s3PoisonFiles["src/main.go"], string(got))

	rep, err = a.Push(ctx, snap.ID)
	require.NoError(t, err)
	require.Equal(t, len(s3PoisonFiles), rep.Rewritten, "%+v", rep)
	require.Equal(t, 1, rep.Uploaded, "%+v", rep)
	_, repaired := onlyPack(t, mc, cfg)
	require.NotContains(t, string(repaired), "ZZZZ")
	got, _, err = sb.ReadFile(ctx, vfs.MustPath("docs/README"))
	require.NoError(t, err)
	require.Equal(t, readme, string(got))
}

// onlyPack returns the key and content of the one pack under cfg's prefix.
func onlyPack(t *testing.T, mc *minio.Client, cfg s3store.Config) (string, []byte) {
	t.Helper()
	ctx := context.Background()
	var keys []string
	for o := range mc.ListObjects(ctx, cfg.Bucket, minio.ListObjectsOptions{Prefix: path.Join(cfg.Prefix, "packs") + "/", Recursive: true}) {
		require.NoError(t, o.Err)
		keys = append(keys, o.Key)
	}
	require.Len(t, keys, 1)
	o, err := mc.GetObject(ctx, cfg.Bucket, keys[0], minio.GetObjectOptions{})
	require.NoError(t, err)
	defer o.Close()
	var buf bytes.Buffer
	_, err = buf.ReadFrom(o)
	require.NoError(t, err)
	return keys[0], buf.Bytes()
}

// TestRemoteGCOverPoisonedBucket: another tenant plants, with the plain S3
// client, junk under a record's key (content that is not its name), keys
// that are no object names at all, and a manifest pack that names the
// snapshot's root manifest but holds an empty directory. Remote GC skips
// and reports them, collects the orphan, and keeps every blob the
// snapshot needs. On the old code the first failed the collection (and
// every later one); the pack alone made it delete the snapshot's blobs.
func TestRemoteGCOverPoisonedBucket(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	s := open(t, cfg)
	defer s.Close()
	mc := rawClient(t, cfg)
	const grace = 2 * time.Second
	a := repoOn(t, s, grace)
	sa, err := a.NewSession(ctx, snapshot.SessionOptions{ID: "a"})
	require.NoError(t, err)
	for f, c := range s3PoisonFiles {
		_, err := sa.WriteFile(ctx, vfs.MustPath(f), strings.NewReader(c), vfs.WriteOptions{CreateParents: true})
		require.NoError(t, err)
	}
	snap, err := a.Snapshot(ctx, sa, "")
	require.NoError(t, err)
	_, err = a.Push(ctx, snap.ID)
	require.NoError(t, err)

	plant(t, mc, cfg, snapshot.Records, vfs.HashOf([]byte("x")), []byte("not x"))
	for _, key := range []string{"snapshots/not-a-hash", "blobs/README.txt", "snapshots/" + strings.Repeat("g", 64)} {
		_, err := mc.PutObject(ctx, cfg.Bucket, path.Join(cfg.Prefix, key), strings.NewReader("junk"), 4, minio.PutObjectOptions{})
		require.NoError(t, err)
	}
	root := snap.Record.Root
	lie := append([]byte("vfsd-pack/1\n"), root[:]...)
	lie = binary.AppendUvarint(lie, uint64(len("vfsd-dir/2\n")))
	lie = append(lie, "vfsd-dir/2\n"...)
	plant(t, mc, cfg, snapshot.Records, vfs.HashOf(lie), lie)
	orphan, _, err := s.Put(ctx, snapshot.Blobs, strings.NewReader("an orphan"), snapshot.PutOptions{})
	require.NoError(t, err)
	time.Sleep(grace + time.Second)

	rep, err := a.RemoteGC(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Deleted, "%+v", rep)
	require.Contains(t, rep.SkippedWhy, "snapshots/"+vfs.HashOf([]byte("x")).String()+": its content does not match its name")
	_, err = s.Stat(ctx, snapshot.Blobs, orphan)
	require.ErrorIs(t, err, vfs.ErrNotFound)
	forkReadsAll(t, s, snap.ID, s3PoisonFiles)
}
