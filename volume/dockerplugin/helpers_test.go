package dockerplugin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/daemon"
	"github.com/vfsd/vfsd/volume/dockerplugin"
)

// fuseAvailable reports whether the daemon can mount sessions here.
func fuseAvailable() bool {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return false
	}
	return os.Geteuid() == 0
}

// shortDir returns a temporary directory with a short path, for sockets.
func shortDir(t testing.TB) string {
	dir, err := os.MkdirTemp("", "vp")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// env is a daemon with the plugin serving over it, in the test's process.
type env struct {
	t       testing.TB
	cfg     daemon.Config
	socket  string
	d       *daemon.Daemon
	p       *dockerplugin.Plugin
	cancel  context.CancelFunc
	done    chan error
	http    *http.Client
	src     string // an allowed root holding a small tree
	logs    *bytes.Buffer
	stopped bool
}

// newEnv starts a daemon whose allow-root is a fresh tree, and the plugin
// on socket ("" for one in a temporary directory).
func newEnv(t testing.TB, socket string) *env {
	t.Helper()
	src := t.TempDir()
	for p, body := range map[string]string{"main.go": "package main\n", "lib/lib.go": "package lib\n",
		"README.md": "# app\n", "vendor/x/x.go": "package x\n"} {
		require.NoError(t, os.MkdirAll(filepath.Join(src, filepath.Dir(p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(src, p), []byte(body), 0o644))
	}
	if socket == "" {
		socket = filepath.Join(shortDir(t), "vfsd.sock")
	}
	e := &env{t: t, socket: socket, src: src, logs: &bytes.Buffer{}, cfg: daemon.Config{
		DataDir: t.TempDir(), Socket: filepath.Join(shortDir(t), "api.sock"), AllowRoots: []string{src},
	}}
	e.cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	e.http = &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", e.socket)
		}}}
	e.start()
	t.Cleanup(e.stop)
	return e
}

// start opens the daemon on e's data directory and serves the plugin.
func (e *env) start() {
	t := e.t
	t.Helper()
	d, err := daemon.New(context.Background(), e.cfg)
	require.NoError(t, err)
	p, err := dockerplugin.New(d, dockerplugin.Config{Socket: e.socket, StateDir: filepath.Join(e.cfg.DataDir, "docker-plugin"), Logger: e.cfg.Logger})
	if err != nil {
		d.Close()
		require.NoError(t, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.d, e.p, e.cancel, e.done, e.stopped = d, p, cancel, make(chan error, 1), false
	go func() { e.done <- p.Serve(ctx) }()
	select {
	case <-p.Ready():
	case err := <-e.done:
		t.Fatalf("serve: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the plugin did not listen within 10s")
	}
}

// stop stops the plugin and closes the daemon (its mounts come down, to
// be mounted again by the next start).
func (e *env) stop() {
	if e.stopped {
		return
	}
	e.stopped = true
	e.cancel()
	select {
	case err := <-e.done:
		require.NoError(e.t, err)
	case <-time.After(20 * time.Second):
		e.t.Fatal("the plugin did not stop within 20s")
	}
	require.NoError(e.t, e.d.Close())
}

// call posts body to the protocol's method and returns the answer, and
// requires its status to be 200 for a success, 500 for a failure (Podman
// tells them apart by the status alone).
func (e *env) call(method string, body any) map[string]any {
	e.t.Helper()
	b, err := json.Marshal(body)
	require.NoError(e.t, err)
	resp, err := e.http.Post("http://plugin/"+method, "application/vnd.docker.plugins.v1.2+json", bytes.NewReader(b))
	require.NoError(e.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	require.Equal(e.t, "application/vnd.docker.plugins.v1+json", resp.Header.Get("Content-Type"))
	var out map[string]any
	require.NoError(e.t, json.Unmarshal(raw, &out), "%s", raw)
	if out["Err"] == "" || out["Err"] == nil {
		require.Equal(e.t, http.StatusOK, resp.StatusCode, "%s: %s", method, raw)
	} else {
		require.Equal(e.t, http.StatusInternalServerError, resp.StatusCode, "%s: %s", method, raw)
	}
	return out
}

// ok calls method and requires no error.
func (e *env) ok(method string, body any) map[string]any {
	e.t.Helper()
	out := e.call(method, body)
	require.Empty(e.t, out["Err"], "%s %v", method, body)
	return out
}

// fails calls method and requires an error containing each of says.
func (e *env) fails(method string, body any, says ...string) string {
	e.t.Helper()
	out := e.call(method, body)
	msg, _ := out["Err"].(string)
	require.NotEmpty(e.t, msg, "%s %v should fail", method, body)
	for _, s := range says {
		require.Contains(e.t, msg, s)
	}
	return msg
}

// vol is a volume request body.
type vol struct {
	Name string            `json:"Name"`
	Opts map[string]string `json:"Opts,omitempty"`
	ID   string            `json:"ID,omitempty"`
}

// sessions lists the daemon's session IDs.
func (e *env) sessions() []string {
	e.t.Helper()
	l, err := e.d.ListSessions(context.Background())
	require.NoError(e.t, err)
	var ids []string
	for _, s := range l.Sessions {
		ids = append(ids, s.ID)
	}
	return ids
}

// stateFiles lists what the plugin keeps on disk, relative to its state
// directory.
func (e *env) stateFiles() []string {
	e.t.Helper()
	root := filepath.Join(e.cfg.DataDir, "docker-plugin")
	var out []string
	require.NoError(e.t, filepath.WalkDir(root, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel != "." && rel != "volumes" && rel != "mnt" {
			out = append(out, rel)
		}
		return nil
	}))
	return out
}

// mountFlags returns the mount options the kernel shows for dir ("" when
// nothing is mounted there).
func mountFlags(t testing.TB, dir string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 5 && f[4] == dir {
			return f[5]
		}
	}
	return ""
}

// changed returns the paths the session's diff (base to live) shows.
func (e *env) changed(id string) []string {
	e.t.Helper()
	df, err := e.d.SessionDiff(context.Background(), id, "", "", false)
	require.NoError(e.t, err)
	var out []string
	for _, en := range df.Entries {
		out = append(out, string(en.Change)+" "+en.Path.String())
	}
	return out
}
