package s3store_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/coord"
	"github.com/vfsd/vfsd/coord/coordtest"
	"github.com/vfsd/vfsd/snapshot/s3store"
)

// TestCoordConformance runs the fleet's conformance suite on the bucket:
// it shows that the server honours If-None-Match: * and If-Match on
// PutObject (versitygw v1.8.0 does: a second create and a stale or wrong
// ETag are refused with 412) and that exactly one of 8 racing writers
// wins each round.
func TestCoordConformance(t *testing.T) {
	testConfig(t) // skip early
	var last *s3store.CoordBackend
	coordtest.Run(t, func(t *testing.T) coord.Backend {
		last = open(t, testConfig(t)).Coord()
		return last
	}, coordtest.Options{
		Rounds: 30,
		Raw: func(t *testing.T, key string, value []byte) {
			require.NoError(t, last.RawPut(context.Background(), key, value))
		},
	})
}

// TestCoordConflict409 puts a proxy in front of the real server that
// answers the first conditional writes with 409 ConditionalRequestConflict
// — what S3 answers when conditional writes of one key overlap, which no
// loopback server produces on demand: the backend reports ErrConflict, and
// a ref move retries through them.
func TestCoordConflict409(t *testing.T) {
	cfg := testConfig(t)
	target, err := url.Parse("http://" + cfg.Endpoint)
	require.NoError(t, err)
	var refuse, seen atomic.Int32
	refuse.Store(2)
	rp := httputil.NewSingleHostReverseProxy(target)
	director := rp.Director
	rp.Director = func(r *http.Request) {
		host := r.Host
		director(r)
		r.Host = host // the client signed the proxy's host
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && (r.Header.Get("If-Match") != "" || r.Header.Get("If-None-Match") != "") {
			seen.Add(1)
			if refuse.Add(-1) >= 0 {
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(http.StatusConflict)
				fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>ConditionalRequestConflict</Code><Message>A conflicting conditional operation is currently in progress against this resource.</Message></Error>`)
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	cfg.Endpoint = srv.Listener.Addr().String()
	b := open(t, cfg).Coord()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = b.Put(ctx, "k", []byte("v"), coord.Cond{Absent: true})
	require.ErrorIs(t, err, coord.ErrConflict, "a 409 is a lost compare-and-swap")
	f, err := coord.New(b, "d1")
	require.NoError(t, err)
	r, err := f.SetRef(ctx, "main", "1111111111111111111111111111111111111111111111111111111111111111", nil)
	require.NoError(t, err, "the move retried past the 409")
	require.EqualValues(t, 1, r.Seq)
	require.EqualValues(t, 3, seen.Load(), "two refused, then the write that went through")
}
