package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
)

// acked records what the daemon acknowledged before it was killed.
type acked struct {
	mu        sync.Mutex
	files     map[string]string // path → content, in session "crash"
	counters  map[string]int    // path → last acknowledged counter value
	sessions  []string
	snapshots []string
}

func (a *acked) add(fn func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	fn()
}

// TestDaemonCrashRecovery kills `vfsd serve` with SIGKILL in the middle of
// a workload of tool calls, session creations and snapshots, three times,
// and checks after each restart that everything it acknowledged is there:
// every file written, every edit, every session (with its policy and
// token), every snapshot, and the session's FUSE mount.
func TestDaemonCrashRecovery(t *testing.T) {
	dataDir, socket := newDaemonDirs(t)
	args := []string{"--listen", "127.0.0.1:0"}
	p := startDaemon(t, dataDir, socket, args...)
	ctx := context.Background()
	c := p.client()
	created, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "crash", Policy: "x07", TTL: "1h"})
	require.NoError(t, err)
	mnt := ""
	if fuseAvailable() {
		mnt = t.TempDir()
		_, err := c.Mount(ctx, "crash", api.MountRequest{Dir: mnt})
		require.NoError(t, err)
	}
	a := &acked{files: map[string]string{}, counters: map[string]int{}}
	const writers = 8
	for round := range 3 {
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for w := range writers {
			wg.Go(func() { crashWriter(c, a, round, w, stop) })
		}
		wg.Go(func() { crashAdmin(c, a, round, stop) })
		time.Sleep(time.Duration(400+200*round) * time.Millisecond)
		p.kill9()
		close(stop)
		wg.Wait()

		p = startDaemon(t, dataDir, socket, args...)
		c = p.client()
		n := verifyAcked(t, c, a)
		t.Logf("round %d: after SIGKILL and restart, all %d acknowledged writes, %d counters, %d sessions and %d snapshots are there",
			round, n, len(a.counters), len(a.sessions), len(a.snapshots))

		// The session keeps its policy (x07 numbers its error codes), its
		// expiry and its token.
		r, err := c.CallTool(ctx, "crash", "read_file", json.RawMessage(`{"path":"missing"}`))
		require.NoError(t, err)
		require.Contains(t, string(r.JSON), `"error_number":60010`) // X07's FS_ERR_NOT_FOUND
		view, err := c.Session(ctx, "crash")
		require.NoError(t, err)
		require.NotNil(t, view.ExpiresAt)
		tc, err := client.New(client.Options{Addr: p.tcpAddr(), Token: created.Token})
		require.NoError(t, err)
		_, err = tc.Session(ctx, "crash")
		require.NoError(t, err, "the session token survives the crash")
		tc.Close()
		if mnt != "" {
			// Any counter acknowledged so far reads back through the
			// mount (on a loaded machine a round may acknowledge none).
			for counter := range a.counters {
				b, err := os.ReadFile(filepath.Join(mnt, filepath.FromSlash(counter)))
				require.NoError(t, err, "the FUSE mount is back after the crash")
				require.True(t, strings.HasPrefix(string(b), "v="))
				break
			}
			_, err := os.ReadDir(mnt)
			require.NoError(t, err, "the FUSE mount is back after the crash")
		}
	}
	p.stop()
}

// crashWriter writes new files and bumps a counter until stop or until the
// daemon is gone, recording what was acknowledged.
func crashWriter(c *client.Client, a *acked, round, w int, stop <-chan struct{}) {
	ctx := context.Background()
	dir := fmt.Sprintf("r%d/w%d", round, w)
	counter := dir + "/counter"
	r, err := c.CallTool(ctx, "crash", "write_file", json.RawMessage(`{"path":"`+counter+`","inline_text":"v=0\n"}`))
	if err != nil || !r.OK() {
		return
	}
	a.add(func() { a.counters[counter] = 0 })
	v := 0
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		if i%3 == 2 {
			params, _ := json.Marshal(map[string]string{"path": counter, "old_string": fmt.Sprintf("v=%d\n", v), "new_string": fmt.Sprintf("v=%d\n", v+1)})
			r, err := c.CallTool(ctx, "crash", "edit_file", params)
			if err != nil {
				return
			}
			if r.OK() {
				v++
				a.add(func() { a.counters[counter] = v })
			}
			continue
		}
		path := fmt.Sprintf("%s/%d.txt", dir, i)
		content := fmt.Sprintf("%s written in round %d, write %d\n", path, round, i)
		params, _ := json.Marshal(map[string]string{"path": path, "inline_text": content})
		r, err := c.CallTool(ctx, "crash", "write_file", params)
		if err != nil {
			return
		}
		if r.OK() {
			a.add(func() { a.files[path] = content })
		}
	}
}

// crashAdmin creates sessions and snapshots until stop or until the daemon
// is gone, recording the acknowledged ones.
func crashAdmin(c *client.Client, a *acked, round int, stop <-chan struct{}) {
	ctx := context.Background()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		id := fmt.Sprintf("extra-%d-%d", round, i)
		if _, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: id, Policy: "aos"}); err != nil {
			return
		}
		a.add(func() { a.sessions = append(a.sessions, id) })
		snap, err := c.CreateSnapshot(ctx, "crash", id)
		if err != nil {
			return
		}
		a.add(func() { a.snapshots = append(a.snapshots, snap.ID) })
		time.Sleep(20 * time.Millisecond)
	}
}

// verifyAcked checks everything in a against the restarted daemon, and
// returns how many files it checked.
func verifyAcked(t *testing.T, c *client.Client, a *acked) int {
	t.Helper()
	ctx := context.Background()
	a.mu.Lock()
	defer a.mu.Unlock()
	paths := make(chan string)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	for range 8 {
		wg.Go(func() {
			for path := range paths {
				params, _ := json.Marshal(map[string]any{"path": path})
				r, err := c.CallTool(ctx, "crash", "read_file", params)
				var got struct {
					Text string `json:"inline_text"`
				}
				if err == nil {
					err = json.Unmarshal(r.JSON, &got)
				}
				if err != nil || !r.OK() || !matches(path, got.Text, a) {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("%s: %v %s", path, err, r.JSON))
					mu.Unlock()
				}
			}
		})
	}
	for path := range a.files {
		paths <- path
	}
	for path := range a.counters {
		paths <- path
	}
	close(paths)
	wg.Wait()
	require.Empty(t, failures, "acknowledged writes lost or wrong after the crash")
	for _, id := range a.sessions {
		s, err := c.Session(ctx, id)
		require.NoError(t, err, "acknowledged session %s", id)
		require.Equal(t, "aos", s.Policy)
	}
	for _, id := range a.snapshots {
		_, err := c.Snapshot(ctx, id)
		require.NoError(t, err, "acknowledged snapshot %s", id)
	}
	return len(a.files)
}

// matches checks a file's content against what was acknowledged: a file
// holds exactly its one write; a counter at least its last acknowledged
// value (an edit in flight at the crash may have landed, unacknowledged).
func matches(path, content string, a *acked) bool {
	if want, ok := a.files[path]; ok {
		return content == want
	}
	v, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(content, "v="), "\n"))
	return err == nil && v >= a.counters[path] && v <= a.counters[path]+1
}
