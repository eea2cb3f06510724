package httpapi_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/vfs"
)

// TestRestartOpensNoSession: a daemon with 200 sessions restarts without
// opening any; each opens on its first use, and the listing opens them.
func TestRestartOpensNoSession(t *testing.T) {
	cfg := newConfig(t)
	cfg.Listen = "127.0.0.1:0"
	s := start(t, cfg)
	ctx := context.Background()
	const n = 200
	tokens := map[string]string{}
	for i := range n {
		id := fmt.Sprintf("s%03d", i)
		created, err := s.c.CreateSession(ctx, api.CreateSessionRequest{ID: id})
		require.NoError(t, err)
		tokens[id] = created.Token
		if i%50 == 0 {
			call(t, s.c, id, "write_file", fmt.Sprintf(`{"path":"f.txt","inline_text":"%s"}`, id), "ok")
		}
	}
	s.stop()

	s2 := start(t, cfg)
	require.Zero(t, s2.d.OpenedSessions(), "a restart opens no session")
	h, err := s2.c.Health(ctx)
	require.NoError(t, err)
	require.Equal(t, n, h.Sessions)

	r := call(t, s2.c, "s050", "read_file", `{"path":"f.txt"}`, "ok")
	require.Equal(t, "s050", r["inline_text"])
	require.EqualValues(t, 1, s2.d.OpenedSessions())
	// A session token of a session not opened yet authenticates, and its
	// first use opens it.
	got, err := s2.tcpClient(tokens["s100"]).Session(ctx, "s100")
	require.NoError(t, err)
	require.Equal(t, "s100", got.ID)
	require.EqualValues(t, 2, s2.d.OpenedSessions())
	// Closing a session never opened does not open it.
	require.NoError(t, s2.c.CloseSession(ctx, "s199"))
	require.EqualValues(t, 2, s2.d.OpenedSessions())

	// The listing reports every session's state: it opens them.
	list, err := s2.c.Sessions(ctx)
	require.NoError(t, err)
	require.Len(t, list, n-1)
	require.EqualValues(t, n-1, s2.d.OpenedSessions())
	for _, v := range list {
		require.Empty(t, v.OpenError)
	}
}

// TestCorruptSessionDoesNotStopTheDaemon: a session whose journal is
// corrupt fails its own uses with a message saying what to do; the daemon
// starts, the other sessions work, and the corrupt one can be closed.
func TestCorruptSessionDoesNotStopTheDaemon(t *testing.T) {
	cfg := newConfig(t)
	s := start(t, cfg)
	ctx := context.Background()
	for _, id := range []string{"good", "bad"} {
		_, err := s.c.CreateSession(ctx, api.CreateSessionRequest{ID: id})
		require.NoError(t, err)
		call(t, s.c, id, "write_file", `{"path":"f.txt","inline_text":"x"}`, "ok")
	}
	s.stop()
	corruptSessionJournal(t, cfg.DataDir, "bad")

	s2 := start(t, cfg)
	call(t, s2.c, "good", "read_file", `{"path":"f.txt"}`, "ok")
	_, err := s2.c.Session(ctx, "bad")
	require.Error(t, err)
	require.Contains(t, err.Error(), "session bad cannot be opened")
	require.Contains(t, err.Error(), "close it")
	list, err := s2.c.Sessions(ctx)
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, "bad", list[0].ID)
	require.Contains(t, list[0].OpenError, "cannot be opened")
	require.Empty(t, list[1].OpenError)

	require.NoError(t, s2.c.CloseSession(ctx, "bad"))
	_, err = s2.c.GC(ctx)
	require.NoError(t, err)
	call(t, s2.c, "good", "write_file", `{"path":"g.txt","inline_text":"y"}`, "ok")
}

// corruptSessionJournal appends to session id's journal a record whose
// checksum matches but whose payload is not an event.
func corruptSessionJournal(t *testing.T, dataDir, id string) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dataDir, "sessions"))
	require.NoError(t, err)
	for _, e := range entries {
		dir := filepath.Join(dataDir, "sessions", e.Name())
		if h, err := vfs.ReadHeader(dir); err != nil || h.Session != id {
			continue
		}
		payload := []byte("{not an event")
		rec := make([]byte, 8+len(payload))
		binary.LittleEndian.PutUint32(rec[0:4], uint32(len(payload)))
		binary.LittleEndian.PutUint32(rec[4:8], crc32.Checksum(payload, crc32.MakeTable(crc32.Castagnoli)))
		copy(rec[8:], payload)
		f, err := os.OpenFile(filepath.Join(dir, "journal"), os.O_WRONLY|os.O_APPEND, 0)
		require.NoError(t, err)
		_, err = f.Write(rec)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		return
	}
	t.Fatalf("no directory holds session %s", id)
}

// TestRestartOpensOnlyMountedSessions: at start the daemon opens exactly
// the sessions it mounts again.
func TestRestartOpensOnlyMountedSessions(t *testing.T) {
	if !fuseAvailable() {
		t.Skip("needs /dev/fuse and root")
	}
	cfg := newConfig(t)
	s := start(t, cfg)
	ctx := context.Background()
	for _, id := range []string{"a", "mounted", "z"} {
		_, err := s.c.CreateSession(ctx, api.CreateSessionRequest{ID: id})
		require.NoError(t, err)
	}
	dir := t.TempDir()
	_, err := s.c.Mount(ctx, "mounted", api.MountRequest{Dir: dir})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "m.txt"), []byte("through the mount\n"), 0o644))
	s.stop()

	s2 := start(t, cfg)
	require.EqualValues(t, 1, s2.d.OpenedSessions(), "only the mounted session is opened at start")
	b, err := os.ReadFile(filepath.Join(dir, "m.txt"))
	require.NoError(t, err)
	require.Equal(t, "through the mount\n", string(b))
	require.NoError(t, s2.c.Unmount(ctx, "mounted", dir))
}
