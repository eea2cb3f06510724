package tests

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/internal/crashpoint"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// The seal crash tests kill a snapshot (kill -9, at a named step: package
// internal/crashpoint) while it seals files written through handles into
// the blob store — by linking each upper file into the store — and check
// what recovery finds: every acknowledged write whole, every blob's bytes
// matching its name, and a session that snapshots and collects garbage
// as before.
const sealCrashChildEnv = "VFSD_SEAL_CRASH_DIR"

// sealCrashFiles is how many files the child writes through handles before
// its snapshot; the crash points that count hits stop it in their middle.
const sealCrashFiles = 12

// TestSealCrashChild writes files through handles, syncs each (the
// acknowledgement), and snapshots; it only runs as the child of
// TestSealCrash, which sets the step it dies at.
func TestSealCrashChild(t *testing.T) {
	dir := os.Getenv(sealCrashChildEnv)
	if dir == "" {
		t.Skip("runs only as the child process of TestSealCrash")
	}
	ctx := context.Background()
	r, done := openRepo(t, dir)
	defer done()
	s, err := r.Session("seal")
	if err != nil {
		s, err = r.NewSession(ctx, snapshot.SessionOptions{ID: "seal"})
		require.NoError(t, err)
	}
	round := os.Getenv("VFSD_SEAL_ROUND")
	out := bufio.NewWriter(os.Stdout)
	for i := range sealCrashFiles {
		path := fmt.Sprintf("d%d/f%d", i%3, i)
		h, err := s.OpenFile(ctx, vfs.MustPath(path), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if vfs.CodeOf(err) == vfs.CodeNotFound {
			_, err = s.Mkdir(ctx, vfs.MustPath(path).Parent(), vfs.MkdirOptions{Parents: true})
			require.NoError(t, err)
			h, err = s.OpenFile(ctx, vfs.MustPath(path), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		}
		require.NoError(t, err)
		_, err = h.WriteAt([]byte(sealPayload(round, path)), 0)
		require.NoError(t, err)
		require.NoError(t, h.Sync())
		require.NoError(t, h.Close())
		fmt.Fprintf(out, "ack %s\n", path)
		out.Flush()
	}
	_, err = r.Snapshot(ctx, s, "sealed")
	require.NoError(t, err)
	fmt.Fprintln(out, "snapshot")
	out.Flush()
}

// sealPayload is what round writes to path: distinct per round and path,
// and long enough to span a few pages.
func sealPayload(round, path string) string {
	return strings.Repeat(round+":"+path+"\n", 700)
}

func TestSealCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns and kills snapshotting processes")
	}
	for _, tc := range []struct {
		step string
		// returned: the step comes after the snapshot returned (the
		// upper files' names are unlinked in the background, until the
		// repository is closed).
		returned bool
	}{
		{step: "putfile-hashed:1"},                 // an upper file hashed and read-only, nothing published
		{step: "putfile-hashed:7"},                 // half the files published, one hashed and read-only, not yet linked into place
		{step: "putfile-published:1"},              // one blob published (a blob and an upper file share an inode)
		{step: "putfile-published:7"},              // half the blobs published
		{step: "seal-stored"},                      // every blob published and synced, the seal not journaled
		{step: "seal-journaled"},                   // the seal journaled, the upper files still there
		{step: "upper-unlinked:5", returned: true}, // some upper files' names unlinked
	} {
		step := tc.step
		t.Run(step, func(t *testing.T) {
			dir := t.TempDir()
			for round, crash := range []string{step, ""} {
				acked, snapshotted := runSealChild(t, dir, fmt.Sprint(round), crash)
				if crash != "" {
					if !tc.returned {
						require.False(t, snapshotted, "the child should have died at %s", crash)
					}
				} else {
					require.True(t, snapshotted)
				}
				checkSealRecovered(t, dir, fmt.Sprint(round), acked)
			}
		})
	}
}

// runSealChild runs TestSealCrashChild, killed at step crash (none when
// ""), and returns the paths it acknowledged and whether its snapshot
// returned.
func runSealChild(t *testing.T, dir, round, crash string) ([]string, bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSealCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), sealCrashChildEnv+"="+dir, "VFSD_SEAL_ROUND="+round, crashpoint.Env+"="+crash)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	var acked []string
	snapshotted := false
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		if path, ok := strings.CutPrefix(line, "ack "); ok {
			acked = append(acked, path)
		}
		if line == "snapshot" {
			snapshotted = true
		}
	}
	err = cmd.Wait()
	if crash != "" {
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "the child should have been killed at %s", crash)
		ws, _ := ee.Sys().(syscall.WaitStatus)
		require.Equal(t, syscall.SIGKILL, ws.Signal(), "the child died otherwise than killed at %s: %v", crash, err)
	} else {
		require.NoError(t, err)
	}
	require.Len(t, acked, sealCrashFiles, "the child did not write every file")
	return acked, snapshotted
}

// checkSealRecovered opens the repository after the child: every
// acknowledged file holds round's content, every blob matches its name,
// and a snapshot, its content and garbage collection work.
func checkSealRecovered(t *testing.T, dir, round string, acked []string) {
	t.Helper()
	ctx := context.Background()
	store, err := snapshot.OpenLocal(filepath.Join(dir, "store"))
	require.NoError(t, err)
	defer store.Close()
	verifyBlobs := func() {
		n := 0
		require.NoError(t, store.List(ctx, snapshot.Blobs, func(h vfs.Hash, _ int64) error {
			n++
			return store.Verify(ctx, snapshot.Blobs, h)
		}))
		require.NoError(t, store.List(ctx, snapshot.Records, func(h vfs.Hash, _ int64) error {
			return store.Verify(ctx, snapshot.Records, h)
		}))
	}
	verifyBlobs()
	r, err := snapshot.OpenRepo(ctx, store, filepath.Join(dir, "sessions"), snapshot.RepoOptions{})
	require.NoError(t, err)
	defer r.Close()
	s, err := r.Session("seal")
	require.NoError(t, err, "the session survives the crash")
	for _, path := range acked {
		b, _, err := s.ReadFile(ctx, vfs.MustPath(path))
		require.NoError(t, err, "acknowledged file %s is lost", path)
		require.Equal(t, sealPayload(round, path), string(b), "%s", path)
	}
	snap, err := r.Snapshot(ctx, s, "after recovery")
	require.NoError(t, err)
	fork, err := r.Fork(ctx, snapshot.Source{Snapshot: snap.ID}, snapshot.SessionOptions{})
	require.NoError(t, err)
	for _, path := range acked {
		b, _, err := fork.ReadFile(ctx, vfs.MustPath(path))
		require.NoError(t, err)
		require.Equal(t, sealPayload(round, path), string(b), "%s in the snapshot", path)
	}
	_, err = r.GC(ctx)
	require.NoError(t, err)
	verifyBlobs()
	// Writing through a handle again works: nothing the seal shared with
	// the store is written in place.
	h, err := s.OpenFile(ctx, vfs.MustPath(acked[0]), os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = h.WriteAt([]byte("overwritten"), 0)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	verifyBlobs()
}
