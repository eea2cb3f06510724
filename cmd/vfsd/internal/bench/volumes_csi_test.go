//go:build linux

package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/internal/mountinfo"
	"github.com/vfsd/vfsd/mount/overlay"
)

// TestVolumesCSISmoke runs the CSI part of `vfsd bench volumes` at 200
// files, 2 forks, one round, with each backend that can mount here: every
// figure is filled in and nothing is left mounted. Timings are not checked
// here.
func TestVolumesCSISmoke(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the CSI driver mounts volumes: run as root (CI does)")
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap is not installed (.ci/run installs it)")
	}
	backends := []string{api.BackendFUSE}
	if overlay.Available() == nil {
		backends = append(backends, api.BackendOverlay)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, VolumesCSI(ctx, VolumesCSIOptions{Sizes: []int{200}, Forks: 2, Repeats: 1, Backends: backends, Dir: dir}, &out))
	sc := bufio.NewScanner(&out)
	n := 0
	for sc.Scan() {
		var res VolumesCSIResult
		require.NoError(t, json.Unmarshal(sc.Bytes(), &res), sc.Text())
		require.Equal(t, backends[n], res.Backend)
		require.Equal(t, 200, res.Files)
		for name, v := range map[string]float64{"forks": res.ForksReadyMs, "fork": res.ForkReadyMs, "copies": res.CopiesMs,
			"publish to read": res.PublishToReadMs, "container": res.ContainerReadMs, "copy to read": res.CopyToReadMs} {
			require.Positive(t, v, name)
		}
		if res.Backend == api.BackendOverlay {
			require.Positive(t, res.MetaColdMs)
			require.Positive(t, res.ForkReadyColdMs)
		}
		n++
	}
	require.Equal(t, len(backends), n)
	ms, err := mountinfo.Read()
	require.NoError(t, err)
	for _, m := range ms {
		require.NotContains(t, m.MountPoint, dir, "left mounted")
	}
}
