package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/internal/s3server"
)

// TestRemoteSmoke runs `vfsd bench remote` at 200 files against a
// versitygw it starts: every field is filled in and the 10-change
// snapshot's push uploads exactly the 10 new blobs and one record holding
// the changed directories' manifests. Timings are not checked here.
func TestRemoteSmoke(t *testing.T) {
	if _, err := s3server.Find(); err != nil {
		t.Skip(err.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, Remote(ctx, RemoteOptions{Files: 200, Repeats: 1, Dir: t.TempDir()}, &out))
	var res RemoteResult
	require.NoError(t, json.Unmarshal(out.Bytes(), &res), out.String())
	require.Equal(t, 200, res.Files)
	require.Equal(t, 3, res.Dirs, "g000, d0000, d0001")
	require.Positive(t, res.Bytes)
	require.Equal(t, 1+2, res.PushUploaded, "one pack of the 200 blobs, the import's record and the snapshot's")
	for name, v := range map[string]float64{
		"push": res.PushS, "baseline": res.BaselineCopyS, "fork": res.ForkFirstCallMs, "lazy read": res.LazyReadS,
		"ratio":               res.PushVsBaseline,
		"hand-off first call": res.HandoffFirstCallMs, "hand-off move": res.HandoffMoveMs, "manual hand-off": res.ManualHandoffMs,
		"ref move": res.RefMoveMs, "ref put baseline": res.RefPutBaselineMs,
	} {
		require.Positive(t, v, name)
	}
	require.Equal(t, 10, res.Snap10UploadedBlobs)
	require.Equal(t, 1, res.Snap10UploadedRecords)
	require.Equal(t, 1, res.Snap10UploadedPacks)
	require.Positive(t, res.LazyReadLocalS)
	require.Positive(t, res.PrefetchS)
	if res.LazyReadFUSESkipped == "" {
		require.Positive(t, res.LazyReadFUSES)
	}
	require.Equal(t, res.Snap10ChangedDirs, res.Snap10UploadedManifests)
}
