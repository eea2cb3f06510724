package httpapi_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/snapshot"
)

// TestUnreadableLazyDirectoryOverTheAPI: after a restart, a session
// forked from a snapshot one of whose directories' manifests is corrupt
// in the store answers tool calls that need that directory, over the
// API, with the io answer (status "error"), never "does not exist", and
// under x07 with FS_ERR_IO; the rest of the session works.
func TestUnreadableLazyDirectoryOverTheAPI(t *testing.T) {
	cfg := newConfig(t)
	s := start(t, cfg)
	ctx := context.Background()
	write := func(session, p, content string) {
		call(t, s.c, session, "write_file", `{"path":"`+p+`","inline_text":"`+content+`"}`, "ok")
	}
	_, err := s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "origin"})
	require.NoError(t, err)
	for _, p := range []string{"top.txt", "good/a.txt", "bad/g.txt", "bad/sub/f.txt"} {
		write("origin", p, p+" v1")
	}
	base, err := s.c.CreateSnapshot(ctx, "origin", "base")
	require.NoError(t, err)
	// A second snapshot rewrites the root's and good's manifests: bad's
	// stay in the first snapshot's record.
	_, err = s.c.ForkSnapshot(ctx, base.ID, api.CreateSessionRequest{ID: "second"})
	require.NoError(t, err)
	write("second", "top.txt", "top v2")
	write("second", "good/a.txt", "good v2")
	second, err := s.c.CreateSnapshot(ctx, "second", "second")
	require.NoError(t, err)
	for _, c := range []string{"", "x07"} {
		_, err = s.c.ForkSnapshot(ctx, second.ID, api.CreateSessionRequest{ID: "lazy" + c, Contract: c})
		require.NoError(t, err)
	}
	s.stop()

	rec := filepath.Join(cfg.DataDir, "store", string(snapshot.Records), base.ID[:2], base.ID)
	b, err := os.ReadFile(rec)
	require.NoError(t, err)
	i := strings.LastIndex(string(b), "g.txt") // inside bad's manifest
	require.Positive(t, i)
	b[i] ^= 0x20
	require.NoError(t, os.Chmod(rec, 0o644))
	require.NoError(t, os.WriteFile(rec, b, 0o644))

	s = start(t, cfg)
	for _, c := range []struct{ tool, params string }{
		{"exists", `{"path":"bad/g.txt"}`},
		{"read_file", `{"path":"bad/sub/f.txt"}`},
		{"list_directory", `{"path":"bad"}`},
		{"glob", `{"pattern":"**/*.txt"}`},
		{"delete_file", `{"path":"bad/g.txt","allow_missing":true}`},
		{"write_file", `{"path":"bad/new.txt","mode":"create","inline_text":"x"}`},
	} {
		r := call(t, s.c, "lazy", c.tool, c.params, "error")
		require.Contains(t, r["summary_text"], "reading a directory of the snapshot failed", "%s %s", c.tool, c.params)
	}
	for _, c := range []struct{ tool, params string }{
		{"stat_v1", `{"path":"bad/g.txt"}`},
		{"list_dir_sorted_text_v1", `{"path":"bad"}`},
		{"remove_file_v1", `{"path":"bad/g.txt"}`},
	} {
		r, err := s.c.CallTool(ctx, "lazyx07", c.tool, json.RawMessage(c.params))
		require.NoError(t, err)
		require.True(t, r.IsError, "%s", r.JSON)
		require.Equal(t, "FS_ERR_IO", r.Status, "%s %s: %s", c.tool, c.params, r.JSON)
	}
	r := call(t, s.c, "lazy", "read_file", `{"path":"good/a.txt"}`, "ok")
	require.Equal(t, "good v2", r["inline_text"])
}
