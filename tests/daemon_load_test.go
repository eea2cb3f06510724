package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
)

// loadClients is how many clients the load test runs at once.
const loadClients = 64

// loadCalls is the number of tool calls per load scenario: VFSD_LOAD_CALLS,
// else 640 with -short and 3200 otherwise.
func loadCalls(t *testing.T) int {
	if v := os.Getenv("VFSD_LOAD_CALLS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "VFSD_LOAD_CALLS")
		return max(n, loadClients)
	}
	if testing.Short() {
		return 640
	}
	return 3200
}

// TestDaemonLoad runs 64 concurrent clients of one `vfsd serve` (built with
// the race detector when the tests run with it), all on one shared
// session and then each on its own session, with a mix of reads, durable
// writes, edits, greps and listings, and reports throughput and latency.
// Every call must succeed and every edit must land exactly once.
func TestDaemonLoad(t *testing.T) {
	dataDir, socket := newDaemonDirs(t)
	p := startDaemon(t, dataDir, socket)
	c := p.client()
	total := loadCalls(t)
	var done int
	for _, shared := range []bool{true, false} {
		name := map[bool]string{true: "shared", false: "separate"}[shared]
		t.Run(name, func(t *testing.T) {
			done += runLoad(t, c, name, shared, total/loadClients)
		})
	}
	// The metrics count every call.
	text, err := c.Metrics(context.Background())
	require.NoError(t, err)
	var counted int
	for _, m := range regexp.MustCompile(`(?m)^vfsd_tool_calls_total\{tool="[a-z_]+",status="ok"\} (\d+)$`).FindAllStringSubmatch(text, -1) {
		n, _ := strconv.Atoi(m[1])
		counted += n
	}
	require.Equal(t, done, counted)
	p.stop()
}

// runLoad runs one scenario and returns how many calls it made.
func runLoad(t *testing.T, c *client.Client, name string, shared bool, perClient int) int {
	ctx := context.Background()
	sessions := make([]string, loadClients)
	for i := range sessions {
		if shared && i > 0 {
			sessions[i] = sessions[0]
			continue
		}
		s, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: fmt.Sprintf("%s-%d", name, i)})
		require.NoError(t, err)
		sessions[i] = s.Session.ID
	}
	lat := make([][]time.Duration, loadClients)
	edits := make([]int, loadClients)
	errs := make(chan error, loadClients)
	seeds := 0
	for i := range loadClients {
		r, err := c.CallTool(ctx, sessions[i], "write_file", json.RawMessage(fmt.Sprintf(`{"path":"c%d/f.txt","inline_text":"n=0\n"}`, i)))
		require.NoError(t, err)
		require.True(t, r.OK(), "%s", r.JSON)
		seeds++
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i := range loadClients {
		wg.Go(func() {
			dir := fmt.Sprintf("c%d", i)
			for k := range perClient {
				var tool string
				var params any
				switch k % 10 {
				case 0, 1, 2, 3:
					tool, params = "read_file", map[string]any{"path": dir + "/f.txt"}
				case 4, 5:
					tool, params = "write_file", map[string]any{"path": fmt.Sprintf("%s/w%d.txt", dir, k), "inline_text": fmt.Sprintf("write %d of client %d\n", k, i)}
				case 6, 7:
					tool, params = "edit_file", map[string]any{"path": dir + "/f.txt", "old_string": fmt.Sprintf("n=%d", edits[i]), "new_string": fmt.Sprintf("n=%d", edits[i]+1)}
				case 8:
					tool, params = "grep", map[string]any{"pattern": "client", "path": dir}
				default:
					tool, params = "list_directory", map[string]any{"path": dir}
				}
				b, _ := json.Marshal(params)
				t0 := time.Now()
				r, err := c.CallTool(ctx, sessions[i], tool, b)
				lat[i] = append(lat[i], time.Since(t0))
				if err == nil && !r.OK() {
					err = fmt.Errorf("%s: %s", tool, r.JSON)
				}
				if err != nil {
					errs <- fmt.Errorf("client %d call %d: %w", i, k, err)
					return
				}
				if tool == "edit_file" {
					edits[i]++
				}
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	require.False(t, t.Failed())

	var all []time.Duration
	for i := range loadClients {
		all = append(all, lat[i]...)
		r, err := c.CallTool(ctx, sessions[i], "read_file", json.RawMessage(fmt.Sprintf(`{"path":"c%d/f.txt"}`, i)))
		require.NoError(t, err)
		require.Contains(t, string(r.JSON), fmt.Sprintf(`"inline_text":"n=%d\n"`, edits[i]), "every edit landed once")
	}
	slices.Sort(all)
	pct := func(q float64) time.Duration { return all[min(len(all)-1, int(q*float64(len(all))))] }
	race := ""
	if raceEnabled {
		race = ", daemon built with -race"
	}
	t.Logf("%s session%s: %d clients × %d calls = %d calls in %v: %.0f calls/s, p50 %v, p99 %v, max %v%s",
		name, map[bool]string{true: "", false: "s"}[shared], loadClients, perClient, len(all), wall.Round(time.Millisecond),
		float64(len(all))/wall.Seconds(), pct(0.50).Round(10*time.Microsecond), pct(0.99).Round(10*time.Microsecond),
		all[len(all)-1].Round(time.Millisecond), race)
	return len(all) + seeds + loadClients // the calls, the seeds and the final reads
}
