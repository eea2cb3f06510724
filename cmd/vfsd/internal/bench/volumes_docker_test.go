//go:build linux

package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDockerVolumesSmall runs the Docker plugin's part of bench volumes on
// a tiny tree: it measures both contenders and prints one line per
// backend with a ratio. (The figures are the benchmark's; here only that
// it runs end to end.)
func TestDockerVolumesSmall(t *testing.T) {
	if _, err := os.Stat("/dev/fuse"); err != nil || os.Geteuid() != 0 {
		t.Skip("the plugin mounts volumes: needs root and /dev/fuse")
	}
	var out bytes.Buffer
	err := DockerVolumes(context.Background(), DockerVolumesOptions{Sizes: []int{50}, Volumes: 2, Rounds: 2,
		Backends: []string{"fuse"}, Dir: t.TempDir()}, &out)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 1)
	var r DockerVolumesResult
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &r))
	require.Equal(t, "docker_plugin", r.Path)
	require.Equal(t, "cp -a", r.Baseline, "no --docker-host: cp -a alone")
	require.Equal(t, 50, r.Files)
	require.Positive(t, r.VfsdMs)
	require.Positive(t, r.BaselineMs)
	require.Positive(t, r.Ratio)
}
