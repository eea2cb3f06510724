// Package toolstest builds sessions with tools for tests: a real snapshot
// repository on a local store in a temporary directory, so content has
// local files (ripgrep reads them) exactly as in the daemon.
package toolstest

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/policy"
)

// Env is a session with its tools.
type Env struct {
	T     testing.TB
	Repo  *snapshot.Repo
	S     *vfs.Session
	Tools *tools.Toolset
}

// New creates a session holding files (path → content; a path ending in
// "/" is an empty directory) under policy pol (nil: the default), with a
// clock that ticks one millisecond per reading so receipts are
// deterministic.
func New(t testing.TB, pol *policy.Policy, files map[string]string, opts ...func(*tools.Options)) *Env {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	store, err := snapshot.OpenLocal(filepath.Join(dir, "store"))
	require.NoError(t, err)
	// Closed after the repository (cleanups run last first), before the
	// temporary directory's removal: Windows cannot remove a directory
	// the store holds open.
	t.Cleanup(func() { store.Close() })
	var tick atomic.Int64
	clock := func() time.Time {
		return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(tick.Add(1)) * time.Millisecond)
	}
	if pol == nil {
		pol = policy.Default()
	}
	repo, err := snapshot.OpenRepo(ctx, store, filepath.Join(dir, "sessions"), snapshot.RepoOptions{Clock: clock})
	require.NoError(t, err)
	t.Cleanup(func() { repo.Close() })
	s, err := repo.NewSession(ctx, snapshot.SessionOptions{ID: "test-session"})
	require.NoError(t, err)
	wctx := vfs.Relaxed(ctx) // one sync below instead of one per file
	for p, content := range files {
		if strings.HasSuffix(p, "/") {
			_, err := s.Mkdir(wctx, vfs.MustPath(strings.TrimSuffix(p, "/")), vfs.MkdirOptions{Parents: true})
			require.NoError(t, err)
			continue
		}
		_, err := s.WriteFile(wctx, vfs.MustPath(p), strings.NewReader(content), vfs.WriteOptions{CreateParents: true})
		require.NoError(t, err)
	}
	require.NoError(t, s.Sync())
	o := tools.Options{Policy: pol, Blobs: repo.Blobs()}
	for _, fn := range opts {
		fn(&o)
	}
	ts, err := tools.New(s, o)
	require.NoError(t, err)
	return &Env{T: t, Repo: repo, S: s, Tools: ts}
}

// WithPolicy returns an Env with its own toolset under pol over the same
// session, for tests that compare policies on one (costly) set of files.
func (e *Env) WithPolicy(pol *policy.Policy, opts ...func(*tools.Options)) *Env {
	e.T.Helper()
	o := tools.Options{Policy: pol, Blobs: e.Repo.Blobs()}
	for _, fn := range opts {
		fn(&o)
	}
	ts, err := tools.New(e.S, o)
	require.NoError(e.T, err)
	return &Env{T: e.T, Repo: e.Repo, S: e.S, Tools: ts}
}

// Call runs a tool with params (marshalled to JSON unless already a
// string or json.RawMessage) on the env's session.
func (e *Env) Call(name string, params any) *tools.Response {
	e.T.Helper()
	var raw json.RawMessage
	switch p := params.(type) {
	case string:
		raw = json.RawMessage(p)
	case json.RawMessage:
		raw = p
	default:
		b, err := json.Marshal(p)
		require.NoError(e.T, err)
		raw = b
	}
	return e.Tools.Call(context.Background(), e.S.ID(), name, raw)
}

// Receipt decodes a response's JSON into a map, for assertions.
func Receipt(t testing.TB, r *tools.Response) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.JSON(), &m))
	return m
}

// State is the session's tree encoding with every file's content: equal
// states mean byte-for-byte equal sessions.
func (e *Env) State() string {
	e.T.Helper()
	ctx := context.Background()
	var b strings.Builder
	b.Write(e.S.Tree().Encode())
	require.NoError(e.T, e.S.Tree().Walk(vfs.Root, func(p vfs.Path, n vfs.Node) error {
		if n.IsFile() {
			data, _, err := e.S.ReadFile(ctx, p)
			require.NoError(e.T, err)
			b.WriteString("\x00" + string(p) + "\x00" + string(data))
		}
		return nil
	}))
	return b.String()
}

// Read returns a file's content.
func (e *Env) Read(p string) string {
	e.T.Helper()
	data, _, err := e.S.ReadFile(context.Background(), vfs.MustPath(p))
	require.NoError(e.T, err)
	return string(data)
}

// With returns the env reporting to t: a fuzz target's or subtest's own T.
func (e *Env) With(t testing.TB) *Env {
	c := *e
	c.T = t
	return &c
}
