package search

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeRG puts in rg's place a stand-in that never finishes: it starts a
// child that holds its output open (as a helper of rg's could), records
// both process IDs in the returned file, and waits. It is restored when
// the test ends.
func fakeRG(t *testing.T) (pids string) {
	t.Helper()
	dir := t.TempDir()
	pids = filepath.Join(dir, "pids")
	script := filepath.Join(dir, "rg")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\nsleep 600 &\necho $! >> "+pids+"\necho $$ >> "+pids+"\nwait\n"), 0o755))
	old := rgPath
	rgPath = func() (string, error) { return script, nil }
	t.Cleanup(func() { rgPath = old })
	return pids
}

// recordedPIDs returns the process IDs the fake rg recorded.
func recordedPIDs(t *testing.T, file string) []int {
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	var out []int
	for _, f := range strings.Fields(string(b)) {
		n, err := strconv.Atoi(f)
		require.NoError(t, err)
		out = append(out, n)
	}
	return out
}

// processGone reports whether pid has exited (it is gone, or a zombie
// nobody has reaped yet).
func processGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// "pid (comm) S ...": the state follows the last ')'.
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'Z'
}

// TestGrepCancelKillsRG: cancelling a grep stops it at once and leaves no
// rg process behind, nor any process rg started, even one that holds its
// output open.
func TestGrepCancelKillsRG(t *testing.T) {
	if runtime.GOOS == "windows" {
		// Under Wine /proc is the Linux host's, so the check below passes.
		t.Skip("the fake rg is a shell script and processes are watched in /proc; on Windows the context's end terminates rg, which starts no children")
	}
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc to watch processes in")
	}
	pidFile := fakeRG(t)
	s := localSession(t)
	fill(t, s, map[string]string{"a.txt": "alpha\n", "b/c.txt": "beta\n"})

	cctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := Grep(cctx, s, GrepOptions{Pattern: "alpha", Engine: EngineRG})
		done <- err
	}()
	deadline := time.Now().Add(30 * time.Second)
	for len(recordedPIDs(t, pidFile)) < 2 {
		select {
		case err := <-done:
			t.Fatalf("grep returned before rg started: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "the fake rg did not start")
	}
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(20 * time.Second):
		t.Fatal("grep kept running after its context was cancelled")
	}
	for _, pid := range recordedPIDs(t, pidFile) {
		deadline := time.Now().Add(20 * time.Second)
		for !processGone(pid) {
			require.True(t, time.Now().Before(deadline), "process %d still runs after grep was cancelled", pid)
			time.Sleep(10 * time.Millisecond)
		}
	}
}
