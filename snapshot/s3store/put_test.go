package s3store_test

import (
	"bytes"
	"context"
	"path"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/snapshot/s3store"
	"github.com/vfsd/vfsd/vfs"
)

// plant puts data under the key of object h, as another tenant of the
// bucket can, with the plain S3 client.
func plant(t *testing.T, mc *minio.Client, cfg s3store.Config, ns snapshot.Namespace, h vfs.Hash, data []byte) {
	t.Helper()
	_, err := mc.PutObject(context.Background(), cfg.Bucket, path.Join(cfg.Prefix, string(ns), h.String()),
		bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{})
	require.NoError(t, err)
}

// rawObject returns what the bucket holds under the key of object h.
func rawObject(t *testing.T, mc *minio.Client, cfg s3store.Config, ns snapshot.Namespace, h vfs.Hash) []byte {
	t.Helper()
	o, err := mc.GetObject(context.Background(), cfg.Bucket, path.Join(cfg.Prefix, string(ns), h.String()), minio.GetObjectOptions{})
	require.NoError(t, err)
	defer o.Close()
	var buf bytes.Buffer
	_, err = buf.ReadFrom(o)
	require.NoError(t, err)
	return buf.Bytes()
}

// TestPutReplacesWrongObject: Put without Absent asks whether the object
// is there before uploading; an object under the name that is not the
// content (another tenant's junk, of any size) must not count as there.
// On the old code Put returned success and left the junk.
func TestPutReplacesWrongObject(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	s := open(t, cfg)
	defer s.Close()
	mc := rawClient(t, cfg)
	for _, junk := range []string{"junk", "JUNK OF THE RIGHT SIZE!!"} {
		content := []byte("the content of the right size")[:len(junk)]
		if len(junk) == 4 {
			content = []byte("a longer content than the junk")
		}
		h := vfs.HashOf(content)
		plant(t, mc, cfg, snapshot.Records, h, []byte(junk))
		got, _, err := s.Put(ctx, snapshot.Records, bytes.NewReader(content), snapshot.PutOptions{})
		require.NoError(t, err)
		require.Equal(t, h, got)
		require.Equal(t, content, rawObject(t, mc, cfg, snapshot.Records, h), "junk %q", junk)
	}
}
