//go:build linux

package csi_test

import (
	"os"
	"strings"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/internal/s3server"
)

// TestSnapshotReadyWhenPushed: with a remote, a VolumeSnapshot is
// ready_to_use only once its push is done. The S3 server (versitygw on
// loopback) is paused while the snapshot is taken, so the push cannot
// finish: CreateSnapshot answers ready_to_use false, and asked again (as
// the snapshotter does) true once the server is back and the push is done.
func TestSnapshotReadyWhenPushed(t *testing.T) {
	bin, err := s3server.Find()
	if err != nil {
		if os.Getenv("VFSD_REQUIRE_SHARED") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	srv, err := s3server.Start(t.Context(), bin, t.TempDir())
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	e := newEnv(t, envOpts{backend: api.BackendFUSE, remote: srv.URL("csi-test", "ready")})
	e.create("vol", nil)
	require.NoError(t, srv.Pause())
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			_ = srv.Resume()
		}
	})
	req := &csipb.CreateSnapshotRequest{Name: "s1", SourceVolumeId: "vol"}
	r, err := e.ctl.CreateSnapshot(e.ctx(), req)
	require.NoError(t, err)
	require.False(t, r.GetSnapshot().GetReadyToUse(), "not in the remote yet")
	require.NoError(t, srv.Resume())
	resumed = true
	deadline := time.Now().Add(60 * time.Second)
	for {
		again, err := e.ctl.CreateSnapshot(e.ctx(), req)
		require.NoError(t, err)
		require.Equal(t, r.GetSnapshot().GetSnapshotId(), again.GetSnapshot().GetSnapshotId(), "the same snapshot")
		if again.GetSnapshot().GetReadyToUse() {
			break
		}
		require.True(t, time.Now().Before(deadline), "the snapshot never became ready: %+v", e.d.RemoteStatus(t.Context()))
		time.Sleep(100 * time.Millisecond)
	}
}
