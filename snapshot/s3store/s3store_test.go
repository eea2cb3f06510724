package s3store_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"os"
	"path"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/snapshot/s3store"
	"github.com/vfsd/vfsd/snapshot/storetest"
	"github.com/vfsd/vfsd/vfs"
)

// testConfig returns the S3 server the tests use, named by
// VFSD_S3_TEST_URL (with credentials in AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY), under a fresh prefix; it skips t when unset.
func testConfig(t *testing.T) s3store.Config {
	t.Helper()
	raw := os.Getenv("VFSD_S3_TEST_URL")
	if raw == "" {
		t.Skip("no S3 server: set VFSD_S3_TEST_URL=s3://BUCKET?endpoint=HOST:PORT&insecure=1&create=1 and AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (.ci/run starts versitygw on loopback)")
	}
	cfg, err := s3store.ParseURL(raw)
	require.NoError(t, err)
	var b [6]byte
	_, _ = rand.Read(b[:])
	cfg.Prefix = path.Join(cfg.Prefix, "t-"+hex.EncodeToString(b[:]))
	cfg.TempDir = t.TempDir()
	return cfg
}

func open(t *testing.T, cfg s3store.Config) *s3store.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := s3store.Open(ctx, cfg)
	require.NoError(t, err)
	return s
}

func TestConformance(t *testing.T) {
	testConfig(t) // skip early
	storetest.Run(t, func(t *testing.T) snapshot.Store { return open(t, testConfig(t)) })
}

func TestParseURL(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want s3store.Config
		err  string
	}{
		{url: "s3://b", want: s3store.Config{Bucket: "b"}},
		{url: "s3://b/p/q/?region=eu-west-1", want: s3store.Config{Bucket: "b", Prefix: "p/q", Region: "eu-west-1"}},
		{url: "s3://b/p?endpoint=127.0.0.1:9000&insecure=1&create=1",
			want: s3store.Config{Bucket: "b", Prefix: "p", Endpoint: "127.0.0.1:9000", Insecure: true, Create: true, PathStyle: true}},
		{url: "s3://b?endpoint=h:1&virtual=1", want: s3store.Config{Bucket: "b", Endpoint: "h:1"}},
		{url: "http://b", err: "want s3://"},
		{url: "s3://key:secret@b", err: "no credentials in the URL"},
		{url: "s3://b?bogus=1", err: "unknown parameter"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			got, err := s3store.ParseURL(tc.url)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// TestCorruptObjectRejected stores an object under a name its content does
// not hash to, as a broken or hostile server might serve it: Open refuses it.
func TestCorruptObjectRejected(t *testing.T) {
	cfg := testConfig(t)
	s := open(t, cfg)
	defer s.Close()
	ctx := context.Background()
	h := storetest.Put(t, s, snapshot.Blobs, []byte("the real content"), snapshot.PutOptions{})

	mc := rawClient(t, cfg)
	key := path.Join(cfg.Prefix, string(snapshot.Blobs), h.String())
	_, err := mc.PutObject(ctx, cfg.Bucket, key, stringReader("tampered content"), int64(len("tampered content")), minio.PutObjectOptions{})
	require.NoError(t, err)

	_, err = s.Open(ctx, snapshot.Blobs, h)
	require.ErrorIs(t, err, snapshot.ErrCorruptObject)
	_, err = s.Open(ctx, snapshot.Blobs, vfs.HashOf([]byte("absent")))
	require.ErrorIs(t, err, vfs.ErrNotFound)
}

// TestOversizedObjectRefused: an object of the bucket larger than the
// reader's cap, under a blob's name, is refused once the cap is passed,
// with nothing left on disk; Open (no cap) still finds it corrupt.
func TestOversizedObjectRefused(t *testing.T) {
	cfg := testConfig(t)
	s := open(t, cfg)
	defer s.Close()
	ctx := context.Background()
	h := storetest.Put(t, s, snapshot.Blobs, []byte("the real content"), snapshot.PutOptions{})

	const big = 24 << 20 // past the in-memory spool: it would go to disk
	mc := rawClient(t, cfg)
	key := path.Join(cfg.Prefix, string(snapshot.Blobs), h.String())
	_, err := mc.PutObject(ctx, cfg.Bucket, key, io.LimitReader(zeros{}, big), big, minio.PutObjectOptions{})
	require.NoError(t, err)

	_, err = s.OpenCapped(ctx, snapshot.Blobs, h, 1<<20)
	require.ErrorIs(t, err, vfs.ErrTooLarge)
	require.ErrorContains(t, err, "more than 1048576 bytes")
	entries, err := os.ReadDir(cfg.TempDir)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing spooled")
	_, err = s.Open(ctx, snapshot.Blobs, h)
	require.ErrorIs(t, err, snapshot.ErrCorruptObject)
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestServerDown: requests to a server that is not there fail, promptly
// and with the store's URL in the message.
func TestServerDown(t *testing.T) {
	cfg := s3store.Config{Bucket: "bkt", Endpoint: "127.0.0.1:1", Insecure: true, PathStyle: true, AccessKey: "k", SecretKey: "s", MaxRetries: 1}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := s3store.Open(ctx, cfg)
	require.ErrorContains(t, err, "127.0.0.1:1")
	require.ErrorContains(t, err, "check the endpoint")
}
