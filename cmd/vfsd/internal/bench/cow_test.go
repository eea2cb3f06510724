package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
		if overlayUsable() == nil {
			require.Positive(t, res.SnapshotFullOverlayMs, "snapshot through the overlay")
		}
	}
}

// TestToolsSmoke runs the tools benchmark on a small generated tree.
func TestToolsSmoke(t *testing.T) {
	tree := t.TempDir()
	for i := range 30 {
		dir := filepath.Join(tree, fmt.Sprint("pkg", i%4))
		require.NoError(t, os.MkdirAll(dir, 0o755))
		src := fmt.Sprintf("package p\n\nfunc serve%dHandler() {}\n", i)
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprint("f", i, ".go")), []byte(src), 0o644))
	}
	var out bytes.Buffer
	err := Tools(context.Background(), ToolsOptions{Tree: tree, Dir: t.TempDir(), Repeats: 1, Edits: 5}, &out)
	require.NoError(t, err)
	var res ToolsResult
	require.NoError(t, json.Unmarshal(out.Bytes(), &res))
	require.Equal(t, int64(30), res.Files)
	require.Equal(t, 30, res.GrepMatches)
	require.Equal(t, 30, res.GlobFiles)
	require.Positive(t, res.EditCallsPerS)
	require.Positive(t, res.GrepVsRg)
}
