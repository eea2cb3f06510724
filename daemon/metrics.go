package daemon

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vfsd/vfsd/tools"
)

// latencyBuckets are the upper bounds, in seconds, of the tool-call latency
// histogram.
var latencyBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// storeBytesEvery bounds how often a scrape walks the store to size it.
const storeBytesEvery = 30 * time.Second

// metrics are the daemon's counters, written out in the Prometheus text
// format by hand.
type metrics struct {
	start time.Time

	mu       sync.Mutex
	calls    map[[2]string]uint64 // (tool, status) → calls
	latency  map[string]*histogram
	requests map[[2]string]uint64 // (route, code) → requests

	streams atomic.Int64 // event streams open

	storeMu    sync.Mutex
	storeBytes int64
	storeAt    time.Time
}

type histogram struct {
	counts []uint64 // per bucket, not cumulative; the last is +Inf
	sum    float64
	n      uint64
}

func newMetrics() *metrics {
	return &metrics{start: time.Now(), calls: make(map[[2]string]uint64),
		latency: make(map[string]*histogram), requests: make(map[[2]string]uint64)}
}

// toolCall records one tool call. Names that are no tool are counted as
// "unknown", so that callers cannot grow the label set.
func (m *metrics) toolCall(name, status string, took time.Duration) {
	if _, ok := tools.Lookup(name); !ok && name != tools.ConsolidatedTool {
		name = "unknown"
	}
	m.observeCall(name, status, took)
}

// observeCall counts one call under a tool label the caller has checked
// (a tool of vfsd's, or "contract.tool" of a session's contract).
func (m *metrics) observeCall(name, status string, took time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls[[2]string{name, status}]++
	h := m.latency[name]
	if h == nil {
		h = &histogram{counts: make([]uint64, len(latencyBuckets)+1)}
		m.latency[name] = h
	}
	s := took.Seconds()
	i, _ := slices.BinarySearch(latencyBuckets, s)
	h.counts[i]++
	h.sum += s
	h.n++
}

// CountRequest records one API request by its route pattern and status
// code (the vfsd_http_requests_total counter).
func (d *Daemon) CountRequest(route string, code int) { d.metrics.request(route, code) }

// request records one API request by its route pattern and status code.
func (m *metrics) request(route string, code int) {
	m.mu.Lock()
	m.requests[[2]string{route, strconv.Itoa(code)}]++
	m.mu.Unlock()
}

// gauges are the values read at scrape time.
type gauges struct {
	sessions, fuseMounts int
	storeBytes           int64
}

// write renders every metric.
func (m *metrics) write(w io.Writer, g gauges) {
	m.mu.Lock()
	defer m.mu.Unlock()
	fmt.Fprintln(w, "# HELP vfsd_tool_calls_total Tool calls, by tool and receipt status.")
	fmt.Fprintln(w, "# TYPE vfsd_tool_calls_total counter")
	for _, k := range sortedKeys(m.calls) {
		fmt.Fprintf(w, "vfsd_tool_calls_total{tool=%q,status=%q} %d\n", k[0], k[1], m.calls[k])
	}
	fmt.Fprintln(w, "# HELP vfsd_tool_call_duration_seconds Tool call latency, by tool.")
	fmt.Fprintln(w, "# TYPE vfsd_tool_call_duration_seconds histogram")
	names := make([]string, 0, len(m.latency))
	for n := range m.latency {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		h := m.latency[n]
		var cum uint64
		for i, le := range latencyBuckets {
			cum += h.counts[i]
			fmt.Fprintf(w, "vfsd_tool_call_duration_seconds_bucket{tool=%q,le=%q} %d\n", n, strconv.FormatFloat(le, 'g', -1, 64), cum)
		}
		fmt.Fprintf(w, "vfsd_tool_call_duration_seconds_bucket{tool=%q,le=\"+Inf\"} %d\n", n, h.n)
		fmt.Fprintf(w, "vfsd_tool_call_duration_seconds_sum{tool=%q} %s\n", n, strconv.FormatFloat(h.sum, 'g', -1, 64))
		fmt.Fprintf(w, "vfsd_tool_call_duration_seconds_count{tool=%q} %d\n", n, h.n)
	}
	fmt.Fprintln(w, "# HELP vfsd_http_requests_total API requests, by route and status code.")
	fmt.Fprintln(w, "# TYPE vfsd_http_requests_total counter")
	for _, k := range sortedKeys(m.requests) {
		fmt.Fprintf(w, "vfsd_http_requests_total{route=%q,code=%q} %d\n", k[0], k[1], m.requests[k])
	}
	gauge := func(name, help string, v any) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n%s %v\n", name, help, name, name, v)
	}
	gauge("vfsd_sessions_open", "Sessions open.", g.sessions)
	gauge("vfsd_fuse_mounts", "FUSE mounts of sessions.", g.fuseMounts)
	gauge("vfsd_event_streams", "Event streams open.", m.streams.Load())
	gauge("vfsd_store_bytes", "Bytes of the objects in the store (sized at most every 30s).", g.storeBytes)
	gauge("vfsd_uptime_seconds", "Seconds since the daemon started.", int64(time.Since(m.start).Seconds()))
}

func sortedKeys(m map[[2]string]uint64) [][2]string {
	keys := make([][2]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
	})
	return keys
}

// storeSize returns the store's size, walking it at most every
// storeBytesEvery.
func (d *Daemon) storeSize(ctx context.Context) int64 {
	m := d.metrics
	m.storeMu.Lock()
	defer m.storeMu.Unlock()
	if time.Since(m.storeAt) >= storeBytesEvery {
		n, err := d.store.Bytes(ctx)
		if err != nil {
			d.log.Warn("size the store", "err", err)
		} else {
			m.storeBytes, m.storeAt = n, time.Now()
		}
	}
	return m.storeBytes
}

// WriteMetrics writes the daemon's metrics in the Prometheus text format
// (version 0.0.4).
func (d *Daemon) WriteMetrics(ctx context.Context, w io.Writer) {
	g := gauges{storeBytes: d.storeSize(ctx)}
	for _, e := range d.entries() {
		g.sessions++
		e.mu.Lock()
		g.fuseMounts += len(e.fuse)
		e.mu.Unlock()
	}
	d.metrics.write(w, g)
}
