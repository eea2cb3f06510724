package httpapi_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
)

func TestEvents(t *testing.T) {
	s := start(t, newConfig(t))
	ctx := context.Background()
	_, err := s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "e"})
	require.NoError(t, err)
	stream, err := s.c.Events(ctx, "e")
	require.NoError(t, err)
	defer stream.Close()

	call(t, s.c, "e", "write_file", `{"path":"d/a.txt","inline_text":"a"}`, "ok")
	call(t, s.c, "e", "rename", `{"from":"d/a.txt","to":"d/b.txt"}`, "ok")
	ev, err := stream.Next()
	require.NoError(t, err)
	require.Equal(t, api.EventChange, ev.Name)
	require.Equal(t, "write", ev.Change.Op)
	require.Equal(t, []string{"d/a.txt"}, ev.Change.Paths)
	ev, err = stream.Next()
	require.NoError(t, err)
	require.Equal(t, "rename", ev.Change.Op)
	require.Equal(t, []string{"d/a.txt", "d/b.txt"}, ev.Change.Paths)
	require.Greater(t, ev.Change.Seq, uint64(1))

	snap, err := s.c.CreateSnapshot(ctx, "e", "")
	require.NoError(t, err)
	ev, err = stream.Next()
	require.NoError(t, err)
	require.Equal(t, "snapshotted", ev.Change.Op)
	require.Equal(t, snap.ID, ev.Change.Snapshot)

	require.NoError(t, s.c.CloseSession(ctx, "e"))
	ev, err = stream.Next()
	require.NoError(t, err)
	require.Equal(t, api.EventClosed, ev.Name)
	require.Contains(t, string(ev.Data), "closed by request")
	_, err = stream.Next()
	require.ErrorIs(t, err, io.EOF)
}

func TestEventsEndAtShutdown(t *testing.T) {
	s := start(t, newConfig(t))
	ctx := context.Background()
	_, err := s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "e"})
	require.NoError(t, err)
	stream, err := s.c.Events(ctx, "e")
	require.NoError(t, err)
	defer stream.Close()
	done := make(chan struct{})
	go func() { s.stop(); close(done) }()
	ev, err := stream.Next()
	require.NoError(t, err)
	require.Equal(t, api.EventClosed, ev.Name)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("an open event stream held up the shutdown")
	}
}

func TestMetrics(t *testing.T) {
	s := start(t, newConfig(t))
	ctx := context.Background()
	_, err := s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "m"})
	require.NoError(t, err)
	call(t, s.c, "m", "write_file", `{"path":"a","inline_text":"a"}`, "ok")
	call(t, s.c, "m", "read_file", `{"path":"zz"}`, "not_found")
	call(t, s.c, "m", "made_up", `{}`, "invalid_input")
	text, err := s.c.Metrics(ctx)
	require.NoError(t, err)
	for _, want := range []string{
		`vfsd_tool_calls_total{tool="write_file",status="ok"} 1`,
		`vfsd_tool_calls_total{tool="read_file",status="not_found"} 1`,
		`vfsd_tool_calls_total{tool="unknown",status="invalid_input"} 1`,
		`vfsd_tool_call_duration_seconds_bucket{tool="write_file",le="+Inf"} 1`,
		`vfsd_tool_call_duration_seconds_count{tool="read_file"} 1`,
		`vfsd_http_requests_total{route="POST /v1/sessions",code="201"} 1`,
		"vfsd_sessions_open 1\n",
		"# TYPE vfsd_store_bytes gauge\nvfsd_store_bytes ",
	} {
		require.Contains(t, text, want)
	}
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if !strings.HasPrefix(line, "#") {
			i := strings.LastIndexByte(line, ' ')
			require.Positive(t, i, "a sample is a name and a value: %q", line)
			_, err := strconv.ParseFloat(line[i+1:], 64)
			require.NoError(t, err, line)
		}
	}
}

// fuseAvailable reports whether this machine can mount FUSE file systems.
func fuseAvailable() bool {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return false
	}
	return os.Geteuid() == 0
}

func TestFuseMount(t *testing.T) {
	if !fuseAvailable() {
		t.Skip("needs /dev/fuse and root")
	}
	cfg := newConfig(t)
	s := start(t, cfg)
	ctx := context.Background()
	_, err := s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "f"})
	require.NoError(t, err)
	dir := t.TempDir()
	fm, err := s.c.Mount(ctx, "f", api.MountRequest{Dir: dir})
	require.NoError(t, err)
	require.Equal(t, dir, fm.Dir)
	_, err = s.c.Mount(ctx, "f", api.MountRequest{Dir: dir})
	requireCode(t, err, api.CodeConflict)
	_, err = s.c.Mount(ctx, "f", api.MountRequest{Dir: "relative"})
	requireCode(t, err, api.CodeInvalidInput)
	_, err = s.c.Mount(ctx, "f", api.MountRequest{Dir: filepath.Join(dir, "missing")})
	requireCode(t, err, api.CodeInvalidInput)

	call(t, s.c, "f", "write_file", `{"path":"tool.txt","inline_text":"from a tool\n"}`, "ok")
	b, err := os.ReadFile(filepath.Join(dir, "tool.txt"))
	require.NoError(t, err)
	require.Equal(t, "from a tool\n", string(b))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "fuse.txt"), []byte("through the mount\n"), 0o644))
	r := call(t, s.c, "f", "read_file", `{"path":"fuse.txt"}`, "ok")
	require.Equal(t, "through the mount\n", r["inline_text"])
	view, err := s.c.Session(ctx, "f")
	require.NoError(t, err)
	require.Equal(t, []api.FuseMount{{Dir: dir, DefaultPermissions: true, BackendWhy: "the default"}}, view.FuseMounts)

	// A restart mounts it again.
	s.stop()
	require.NoFileExists(t, filepath.Join(dir, "tool.txt"), "unmounted at shutdown")
	s2 := start(t, cfg)
	b, err = os.ReadFile(filepath.Join(dir, "fuse.txt"))
	require.NoError(t, err)
	require.Equal(t, "through the mount\n", string(b))

	requireCode(t, s2.c.Unmount(ctx, "f", "/not/mounted"), api.CodeNotFound)
	require.NoError(t, s2.c.Unmount(ctx, "f", dir))
	require.NoFileExists(t, filepath.Join(dir, "fuse.txt"))
	view, err = s2.c.Session(ctx, "f")
	require.NoError(t, err)
	require.Empty(t, view.FuseMounts)

	// Closing a session unmounts it.
	_, err = s2.c.Mount(ctx, "f", api.MountRequest{Dir: dir})
	require.NoError(t, err)
	require.NoError(t, s2.c.CloseSession(ctx, "f"))
	require.NoFileExists(t, filepath.Join(dir, "fuse.txt"))
}
