package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCowSmoke runs the benchmark at a tiny size: every field is filled in,
// and the copy-on-write operations work end to end. Timings are not checked
// here; see the README for the measured figures.
func TestCowSmoke(t *testing.T) {
	var out bytes.Buffer
	err := Cow(context.Background(), CowOptions{Sizes: []int{60, 120}, SizeKB: 1, Dir: t.TempDir(), Repeats: 1}, &out)
	require.NoError(t, err)
	dec := json.NewDecoder(&out)
	for _, files := range []int{60, 120} {
		var res CowResult
		require.NoError(t, dec.Decode(&res))
		require.Equal(t, files, res.Files)
		require.Positive(t, res.Dirs)
		for name, v := range map[string]float64{
			"fork": res.ForkMs, "restore": res.RestoreMs, "dirty10": res.SnapshotDirty10Ms,
			"full": res.SnapshotFullMs, "full blobs": res.SnapshotFullBlobsMs, "cp -a": res.CpAMs,
			"meta": res.MetaBytesPerFile,
		} {
			require.Positive(t, v, name)
		}
	}
}
