package httpapi_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
)

func TestRestartKeepsSessions(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "host.txt"), []byte("host\n"), 0o644))
	cfg := newConfig(t)
	cfg.Listen = "127.0.0.1:0"
	cfg.AllowRoots = []string{root}
	s := start(t, cfg)
	ctx := context.Background()
	created, err := s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "keep", Policy: "weakincentives", Profile: "gemini", TTL: "3h",
		Mounts: []api.Mount{{HostPath: root, MountPath: "/src"}}})
	require.NoError(t, err)
	call(t, s.c, "keep", "write_file", `{"path":"src/new.txt","inline_text":"kept\n"}`, "ok")
	snap, err := s.c.CreateSnapshot(ctx, "keep", "before restart")
	require.NoError(t, err)
	before, err := s.c.Session(ctx, "keep")
	require.NoError(t, err)
	s.stop()

	// The data dir holds the metadata; the store and the journals the rest.
	require.FileExists(t, filepath.Join(cfg.DataDir, "meta", "keep.json"))
	require.NoFileExists(t, cfg.Socket, "a graceful stop removes the socket")

	s2 := start(t, cfg)
	after, err := s2.c.Session(ctx, "keep")
	require.NoError(t, err)
	require.Equal(t, before.Policy, after.Policy)
	require.Equal(t, before.Profile, after.Profile)
	require.Equal(t, before.ExpiresAt.Unix(), after.ExpiresAt.Unix())
	require.Equal(t, before.ImportSnapshot, after.ImportSnapshot)
	require.Equal(t, before.Mounts, after.Mounts)
	require.Equal(t, snap.ID, after.LastSnapshot)
	r := call(t, s2.c, "keep", "read_file", `{"path":"src/new.txt"}`, "ok")
	require.Equal(t, "kept\n", r["inline_text"])
	// The weakincentives policy still applies (ASCII-only paths).
	call(t, s2.c, "keep", "write_file", `{"path":"src/ü.txt","inline_text":"x"}`, "forbidden")
	// The session token still works.
	tc := s2.tcpClient(created.Token)
	_, err = tc.Session(ctx, "keep")
	require.NoError(t, err)
	// Apply still knows the import.
	rep, err := s2.c.Apply(ctx, "keep", false)
	require.NoError(t, err)
	require.Len(t, rep.Applied, 1)
	require.FileExists(t, filepath.Join(root, "new.txt"))
}

func TestOrphanMetadataIsDropped(t *testing.T) {
	cfg := newConfig(t)
	s := start(t, cfg)
	_, err := s.c.CreateSession(context.Background(), api.CreateSessionRequest{ID: "real"})
	require.NoError(t, err)
	s.stop()
	// A creation that crashed after its metadata was saved.
	ghost := []byte(`{"format":1,"id":"ghost","created":"2026-01-01T00:00:00Z","policy":"default","profile":"anthropic","token_hash":"00"}`)
	require.NoError(t, os.WriteFile(filepath.Join(cfg.DataDir, "meta", "ghost.json"), ghost, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(cfg.DataDir, "meta", ".real.json123"), []byte("torn"), 0o600))

	s2 := start(t, cfg)
	list, err := s2.c.Sessions(context.Background())
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, "real", list[0].ID)
	require.NoFileExists(t, filepath.Join(cfg.DataDir, "meta", "ghost.json"))
	require.NoFileExists(t, filepath.Join(cfg.DataDir, "meta", ".real.json123"))
}
