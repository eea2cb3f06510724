package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/internal/s3server"
	"github.com/vfsd/vfsd/vfs"
)

// TestRemotePoisonedKeysAreRepaired is finding 8 of the third security
// review, end to end: another tenant of the bucket writes junk under the
// keys a push is about to write — one blob of another size, one of the
// same size — before the push. The push (through the real daemon and its
// API) repairs both and says so; a second daemon forks the snapshot and
// reads every file right. On 83e4d1b the push trusted the listing,
// reported success, and the fork answered corrupt_object for good.
func TestRemotePoisonedKeysAreRepaired(t *testing.T) {
	srv := startS3(t)
	const bucket, prefix = "vfsd-poison", "fleet"
	dirA, sockA := newDaemonDirs(t)
	dirB, sockB := newDaemonDirs(t)
	a := startDaemon(t, dirA, sockA, "--remote", srv.URL(bucket, prefix))
	b := startDaemon(t, dirB, sockB, "--remote", srv.URL(bucket, prefix))
	ca, cb := a.client(), b.client()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	files := map[string]string{
		"other-size.txt": "the content another tenant overwrites with junk of another size\n",
		"same-size.txt":  "the content another tenant overwrites with junk of the same size\n",
	}
	mc, err := minio.New(srv.Addr, &minio.Options{Creds: credentials.NewStaticV4(s3server.AccessKey, s3server.SecretKey, ""),
		BucketLookup: minio.BucketLookupPath})
	require.NoError(t, err)
	if ok, _ := mc.BucketExists(ctx, bucket); !ok {
		require.NoError(t, mc.MakeBucket(ctx, bucket, minio.MakeBucketOptions{}))
	}
	for name, content := range files {
		junk := "junk"
		if name == "same-size.txt" {
			junk = strings.Repeat("j", len(content))
		}
		key := fmt.Sprintf("%s/blobs/%s", prefix, vfs.HashOf([]byte(content)))
		_, err := mc.PutObject(ctx, bucket, key, strings.NewReader(junk), int64(len(junk)), minio.PutObjectOptions{})
		require.NoError(t, err)
	}

	_, err = ca.CreateSession(ctx, api.CreateSessionRequest{ID: "a"})
	require.NoError(t, err)
	for name, content := range files {
		tool(t, ca, "a", "write_file", map[string]any{"path": name, "content": content})
	}
	snap, err := ca.CreateSnapshot(ctx, "a", "poisoned")
	require.NoError(t, err)
	rep, err := ca.PushSnapshot(ctx, snap.ID)
	require.NoError(t, err)
	st, err := ca.RemoteStatus(ctx)
	require.NoError(t, err)
	repaired := rep.Repaired
	if st.LastPushReport != nil && st.LastPushReport.Snapshot == snap.ID {
		repaired = max(repaired, st.LastPushReport.Repaired) // the background push may have got there first
	}
	require.Equal(t, 2, repaired, "the push reports the two objects it found wrong and overwrote: %+v", rep)

	_, err = cb.ForkSnapshot(ctx, snap.ID, api.CreateSessionRequest{ID: "b"})
	require.NoError(t, err)
	for name, content := range files {
		require.Equal(t, content, readText(t, cb, "b", name))
	}
}
