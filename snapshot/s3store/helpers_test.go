package s3store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/snapshot/s3store"
	"github.com/vfsd/vfsd/vfs"
)

func stringReader(s string) *strings.Reader { return strings.NewReader(s) }

// rawClient is a plain S3 client of the test server, for tampering.
func rawClient(t *testing.T, cfg s3store.Config) *minio.Client {
	t.Helper()
	mc, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds:        credentials.NewEnvAWS(),
		Secure:       !cfg.Insecure,
		BucketLookup: minio.BucketLookupPath,
	})
	require.NoError(t, err)
	return mc
}

func modified(t *testing.T, s *s3store.Store, h vfs.Hash) time.Time {
	t.Helper()
	var out time.Time
	require.NoError(t, s.ListInfo(context.Background(), snapshot.Blobs, func(o snapshot.ObjectInfo) error {
		if o.Hash == h {
			out = o.Modified
		}
		return nil
	}))
	require.False(t, out.IsZero(), "object listed")
	return out
}

func readAll(t *testing.T, s *s3store.Store, h vfs.Hash) []byte {
	t.Helper()
	b, err := s.Open(context.Background(), snapshot.Blobs, h)
	require.NoError(t, err)
	defer b.Close()
	buf := make([]byte, b.Size())
	_, _ = b.ReadAt(buf, 0)
	return buf
}
