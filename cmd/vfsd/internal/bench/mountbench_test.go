//go:build linux

package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/stretchr/testify/require"
)

// requireMountBench skips unless this process can mount FUSE filesystems
// and the workload's tools are installed.
func requireMountBench(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("the mount benchmark needs FUSE, and /dev/fuse is not there: %v", err)
	}
	if os.Geteuid() != 0 {
		if _, err := exec.LookPath("fusermount3"); err != nil {
			t.Skip("the mount benchmark needs FUSE: run as root, or install fusermount3 (apt-get install fuse3)")
		}
	}
	for _, tool := range []string{"tar", "rg", "find", "sed", "rm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the mount benchmark runs %s, which is not installed", tool)
		}
	}
	// /dev/fuse may be there and mounting still be refused (a container
	// without CAP_SYS_ADMIN): try once.
	dir := t.TempDir()
	root, err := gofs.NewLoopbackRoot(t.TempDir())
	require.NoError(t, err)
	server, err := gofs.Mount(dir, root, &gofs.Options{MountOptions: fuse.MountOptions{DirectMount: true}})
	if err != nil {
		t.Skipf("the mount benchmark needs FUSE, and mounting one failed: %v", err)
	}
	require.NoError(t, server.Unmount())
}

// TestMountSmoke runs the mount benchmark on a tiny tree with a tiny
// workload: every step runs on every target, the targets agree on what they
// hold (the benchmark checks that), and every line is filled in. Timings
// are not checked here.
func TestMountSmoke(t *testing.T) {
	requireMountBench(t)
	tree := t.TempDir()
	for i := range 24 {
		dir := filepath.Join(tree, "net", "http", fmt.Sprint("pkg", i%3))
		if i%2 == 1 {
			dir = filepath.Join(tree, fmt.Sprint("lib", i%4))
		}
		require.NoError(t, os.MkdirAll(dir, 0o755))
		src := fmt.Sprintf("package p\n\nfunc serve%dHandler() {}\n", i)
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprint("f", i, ".go")), []byte(src), 0o644))
	}
	require.NoError(t, os.Symlink("lib0", filepath.Join(tree, "link")))

	var out, log bytes.Buffer
	profile := filepath.Join(t.TempDir(), "prof")
	err := Mount(context.Background(), MountOptions{Tree: tree, Dir: t.TempDir(), Repeats: 1, WriteMB: 2, Creates: 20,
		CPUProfile: profile, Settle: -1, Log: &log, GoPackages: 2, NpmPackages: 20}, &out)
	require.NoError(t, err, "progress:\n%s", log.String())

	dec := json.NewDecoder(&out)
	var sum MountSummary
	var lines []map[string]any
	for {
		var raw json.RawMessage
		require.NoError(t, dec.Decode(&raw))
		if bytes.Contains(raw, []byte(`"summary":true`)) {
			require.NoError(t, json.Unmarshal(raw, &sum))
			break
		}
		var line map[string]any
		require.NoError(t, json.Unmarshal(raw, &line))
		lines = append(lines, line)
	}
	require.False(t, dec.More(), "nothing after the summary")
	require.True(t, sum.Summary)
	require.Len(t, lines, len(sum.Steps))
	for i, line := range lines {
		step := sum.Steps[i]
		require.Equal(t, step, line["step"])
		for _, name := range sum.Targets {
			// Reported in milliseconds: a step of this tiny tree may
			// round to 0 on a fast target, never below.
			v, ok := line[name+"_s"].(float64)
			require.True(t, ok, "%s: no %s_s in %v", step, name, line)
			require.GreaterOrEqual(t, v, 0.0, "%s on %s", step, name)
		}
		require.Equal(t, step == stepSeqRead, line["cache_note"] != nil, step)
	}
	require.Subset(t, sum.Targets, []string{targetNative, targetVfsd, targetLoopback, targetLoopNoPT})
	for _, name := range knownTargets {
		_, ran := sum.GeomeanVsNative[name]
		_, left := sum.Skipped[name]
		require.True(t, name == targetNative || ran != left, "%s: ran %v, left out %v", name, ran, left)
	}
	require.Equal(t, mountSteps, sum.Steps[:len(mountSteps)])
	if _, left := sum.Skipped["container_steps"]; !left {
		require.Equal(t, containerSteps, sum.Steps[len(mountSteps):])
		require.NotEmpty(t, sum.ContainerGeomeanVsNative)
	}
	require.Len(t, sum.Workload, len(sum.Steps))
	require.Equal(t, int64(24), sum.Files)
	require.Equal(t, int64(1), sum.Symlinks)
	require.Equal(t, 24, sum.GrepMatches)
	require.Equal(t, "net/http", sum.SedSubtree)
	require.Equal(t, len(sum.SlowerThanLoopback) == 0, sum.FasterThanLoopbackAllSteps)
	require.Positive(t, sum.TotalS[targetVfsd])
	require.Positive(t, sum.SeqWriteVsNative)

	require.Positive(t, sum.TotalS[targetLoopNoPT])
	for _, target := range []string{targetVfsd, targetLoopback, targetLoopNoPT} {
		fi, err := os.Stat(fmt.Sprintf("%s-%s-%s.pprof", profile, target, stepUntar))
		require.NoError(t, err)
		require.Positive(t, fi.Size())
	}
}

// TestMountRoundTrip runs the opt-in round_trip step on every target: the
// fresh process (this test binary, see TestMain) asks each target's file
// for a missing xattr and gets ENODATA.
func TestMountRoundTrip(t *testing.T) {
	requireMountBench(t)
	tree := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(tree, "f.go"), []byte("package p\n"), 0o644))
	var out, log bytes.Buffer
	err := Mount(context.Background(), MountOptions{Tree: tree, Dir: t.TempDir(), Repeats: 1, Settle: -1,
		Steps: []string{stepRoundTrip}, Log: &log}, &out)
	require.NoError(t, err, "progress:\n%s", log.String())
	var line map[string]any
	require.NoError(t, json.NewDecoder(&out).Decode(&line))
	require.Equal(t, stepRoundTrip, line["step"])
	for _, name := range []string{targetNative, targetVfsd, targetLoopNoPT} {
		v, ok := line[name+"_s"].(float64)
		require.True(t, ok, "no %s_s in %v", name, line)
		require.Greater(t, v, 0.0, name)
	}
}
