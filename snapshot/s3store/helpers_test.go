package s3store_test

import (
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot/s3store"
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
