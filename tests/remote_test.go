package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
	"github.com/vfsd/vfsd/internal/s3server"
	"github.com/vfsd/vfsd/mount/overlay"
)

// startS3 runs a versitygw on loopback for the test, or skips it.
func startS3(t *testing.T) *s3server.Server {
	t.Helper()
	bin, err := s3server.Find()
	if err != nil {
		t.Skip(err.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := s3server.Start(ctx, bin, t.TempDir())
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v) // the daemons inherit them
	}
	return srv
}

func tool(t *testing.T, c *client.Client, session, name string, params any) *client.Receipt {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := json.Marshal(params)
	require.NoError(t, err)
	r, err := c.CallTool(ctx, session, name, b)
	require.NoError(t, err)
	require.Equal(t, "ok", r.Status, "%s %s: %s", name, b, r.JSON)
	return r
}

func readText(t *testing.T, c *client.Client, session, path string) string {
	t.Helper()
	r := tool(t, c, session, "read_file", map[string]any{"path": path, "output_mode": "require_inline"})
	var out struct {
		Text *string `json:"inline_text"`
	}
	require.NoError(t, json.Unmarshal(r.JSON, &out), "%s", r.JSON)
	require.NotNil(t, out.Text, "%s", r.JSON)
	return *out.Text
}

// TestRemoteTwoDaemons: two daemons with separate data directories share
// one bucket. Snapshot on A, fork on B, read and edit on B, snapshot on B,
// restore on A; then the server is killed in the middle of a push, local
// work goes on, a remote fork fails clearly, and once the server is back
// the push resumes by itself and B forks the snapshot whole.
func TestRemoteTwoDaemons(t *testing.T) {
	srv := startS3(t)
	url := srv.URL("vfsd-e2e", "fleet")
	dirA, sockA := newDaemonDirs(t)
	dirB, sockB := newDaemonDirs(t)
	a := startDaemon(t, dirA, sockA, "--remote", url)
	b := startDaemon(t, dirB, sockB, "--remote", url)
	ca, cb := a.client(), b.client()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	_, err := ca.CreateSession(ctx, api.CreateSessionRequest{ID: "a"})
	require.NoError(t, err)
	for i := range 20 {
		tool(t, ca, "a", "write_file", map[string]any{"path": fmt.Sprintf("src/f%02d.txt", i), "content": fmt.Sprintf("file %d on A\n", i)})
	}
	snapA, err := ca.CreateSnapshot(ctx, "a", "on A")
	require.NoError(t, err)
	pushed, err := ca.PushSnapshot(ctx, snapA.ID)
	require.NoError(t, err)
	require.Equal(t, 20, pushed.Blobs)
	// The 20 small files went in one pack (here or in the background
	// push the snapshot queued); remote GC, run from the CLI, sees it.
	out, errOut, code := a.cli(ctx, nil, "snapshot", "remote", "--gc")
	require.Zero(t, code, errOut)
	require.Contains(t, out, "packs: 1, 0 deleted, 0 repacked")

	// Fork on B: no workspace copy, blobs come on first read.
	_, err = cb.ForkSnapshot(ctx, snapA.ID, api.CreateSessionRequest{ID: "b"})
	require.NoError(t, err)
	require.Equal(t, "file 7 on A\n", readText(t, cb, "b", "src/f07.txt"))
	tool(t, cb, "b", "write_file", map[string]any{"path": "src/f07.txt", "content": "edited on B\n"})
	tool(t, cb, "b", "write_file", map[string]any{"path": "NEW", "content": "new on B\n"})
	snapB, err := cb.CreateSnapshot(ctx, "b", "on B")
	require.NoError(t, err)
	require.Equal(t, snapA.ID, snapB.Parent)
	rep, err := cb.PushSnapshot(ctx, snapB.ID)
	require.NoError(t, err)
	require.LessOrEqual(t, rep.UploadedBlobs, 2, "B's snapshot uploads its two new blobs at most (the background push may have sent them)")

	// Restore on A: B's two new blobs come in the background, before
	// anything reads them.
	before, err := ca.RemoteStatus(ctx)
	require.NoError(t, err)
	_, err = ca.Restore(ctx, "a", snapB.ID)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		st, err := ca.RemoteStatus(ctx)
		return err == nil && st.Fetched >= before.Fetched+2
	}, 30*time.Second, 20*time.Millisecond, "a restore prefetches the snapshot's blobs")
	require.Equal(t, "edited on B\n", readText(t, ca, "a", "src/f07.txt"))
	require.Equal(t, "new on B\n", readText(t, ca, "a", "NEW"))
	require.Equal(t, "file 3 on A\n", readText(t, ca, "a", "src/f03.txt"))

	// Kill the server in the middle of an upload.
	big := strings.Repeat("0123456789abcdef", 1024) // 16 KiB
	for i := range 150 {
		tool(t, ca, "a", "write_file", map[string]any{"path": fmt.Sprintf("big/%03d", i), "content": fmt.Sprintf("%d%s", i, big)})
	}
	snapBig, err := ca.CreateSnapshot(ctx, "a", "big") // queues a background push
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Go(func() {
		_, _ = ca.PushSnapshot(ctx, snapBig.ID)
	})
	time.Sleep(30 * time.Millisecond)
	srv.Stop()
	wg.Wait()

	// With the remote down, local content answers as before.
	require.Equal(t, "7"+big, readText(t, ca, "a", "big/007"))
	tool(t, ca, "a", "write_file", map[string]any{"path": "while-down", "content": "ok\n"})
	_, err = ca.CreateSnapshot(ctx, "a", "while down")
	require.NoError(t, err)
	// A remote fork fails, saying why.
	_, err = cb.ForkSnapshot(ctx, snapBig.ID, api.CreateSessionRequest{ID: "b2"})
	require.Error(t, err)
	var ae *api.Error
	require.ErrorAs(t, err, &ae)
	require.Contains(t, []string{api.CodeUnavailable, api.CodeNotFound}, ae.Code, "%v", err)

	// The server comes back; the queued push resumes without being asked.
	require.NoError(t, srv.Restart(ctx))
	require.Eventually(t, func() bool {
		st, err := ca.RemoteStatus(ctx)
		return err == nil && len(st.Pending) == 0
	}, 3*time.Minute, 100*time.Millisecond, "the pushes resume")
	_, err = cb.ForkSnapshot(ctx, snapBig.ID, api.CreateSessionRequest{ID: "b2"})
	require.NoError(t, err)
	for _, i := range []int{0, 77, 149} {
		require.Equal(t, fmt.Sprintf("%d%s", i, big), readText(t, cb, "b2", fmt.Sprintf("big/%03d", i)))
	}
	st, err := cb.RemoteStatus(ctx)
	require.NoError(t, err)
	require.Positive(t, st.Fetched)
}

// TestRemoteForkMountsAuto: a fork of a remote snapshot mounted with the
// auto backend gets the kernel overlay when its blobs fit the local cache
// (they are fetched first: the kernel cannot fetch on first read), and
// FUSE, which fetches on first read, when they do not. Either way the
// files read back whole through the mount.
func TestRemoteForkMountsAuto(t *testing.T) {
	if err := overlay.Available(); err != nil {
		t.Skipf("overlay backend unavailable: %v", err)
	}
	srv := startS3(t)
	url := srv.URL("vfsd-mount", "fleet")
	dirA, sockA := newDaemonDirs(t)
	a := startDaemon(t, dirA, sockA, "--remote", url)
	ca := a.client()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, err := ca.CreateSession(ctx, api.CreateSessionRequest{ID: "a"})
	require.NoError(t, err)
	for i := range 10 {
		tool(t, ca, "a", "write_file", map[string]any{"path": fmt.Sprintf("src/f%d.txt", i), "content": fmt.Sprintf("file %d on A\n", i)})
	}
	snap, err := ca.CreateSnapshot(ctx, "a", "to mount elsewhere")
	require.NoError(t, err)
	_, err = ca.PushSnapshot(ctx, snap.ID)
	require.NoError(t, err)

	for _, tc := range []struct {
		name        string
		cache       string
		wantBackend string
	}{
		{"fits the cache: overlay", "1GiB", api.BackendOverlay},
		{"larger than the cache: FUSE", "8", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// One session ID is one session in the fleet: each daemon forks
			// its own.
			sid := "b-" + strings.Fields(tc.name)[0]
			dir, sock := newDaemonDirs(t)
			b := startDaemon(t, dir, sock, "--remote", url, "--remote-cache-bytes", tc.cache)
			cb := b.client()
			_, err := cb.ForkSnapshot(ctx, snap.ID, api.CreateSessionRequest{ID: sid})
			require.NoError(t, err)
			mnt := t.TempDir()
			t.Cleanup(func() { _ = syscall.Unmount(mnt, syscall.MNT_DETACH) })
			fm, err := cb.Mount(ctx, sid, api.MountRequest{Dir: mnt, Backend: api.BackendAuto})
			require.NoError(t, err)
			require.Equal(t, tc.wantBackend, fm.Backend)
			// The daemon is another process: reading its FUSE mount from
			// here cannot deadlock it.
			for _, i := range []int{0, 9} {
				got, err := os.ReadFile(filepath.Join(mnt, fmt.Sprintf("src/f%d.txt", i)))
				require.NoError(t, err)
				require.Equal(t, fmt.Sprintf("file %d on A\n", i), string(got))
			}
			require.NoError(t, cb.Unmount(ctx, sid, mnt))
		})
	}
}
