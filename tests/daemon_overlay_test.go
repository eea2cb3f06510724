//go:build linux

package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
	"github.com/vfsd/vfsd/mount/overlay"
)

// readTool reads a session file through the read_file tool.
func readTool(t *testing.T, c *client.Client, session, path string) string {
	t.Helper()
	r, err := c.CallTool(context.Background(), session, "read_file", json.RawMessage(fmt.Sprintf(`{"path":%q}`, path)))
	require.NoError(t, err)
	var rec map[string]any
	require.NoError(t, json.Unmarshal(r.JSON, &rec))
	require.Equal(t, "ok", rec["status"], "%s", r.JSON)
	return fmt.Sprint(rec["inline_text"])
}

// writeSynced writes a file and fsyncs it: the kernel acknowledged it.
func writeSynced(t *testing.T, path, content string) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	_, err = f.WriteString(content)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
}

// TestDaemonOverlayBackend mounts a session with the kernel overlay
// backend through the real daemon: the kernel's changes reach the tools,
// the tools' reach the mount, and after kill -9 of the daemon (the kernel
// keeps the overlay mounted and programs keep writing) a restarted daemon
// takes the mount over and ingests everything acknowledged.
func TestDaemonOverlayBackend(t *testing.T) {
	if err := overlay.Available(); err != nil {
		t.Skipf("overlay backend unavailable: %v", err)
	}
	dataDir, socket := newDaemonDirs(t)
	p := startDaemon(t, dataDir, socket)
	ctx := context.Background()
	c := p.client()
	_, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "ov", TTL: "1h"})
	require.NoError(t, err)
	_, err = c.CallTool(ctx, "ov", "write_file", json.RawMessage(`{"path":"src/main.go","content":"package main\n"}`))
	require.NoError(t, err)

	mnt := t.TempDir()
	t.Cleanup(func() { _ = syscall.Unmount(mnt, syscall.MNT_DETACH) })
	fm, err := c.Mount(ctx, "ov", api.MountRequest{Dir: mnt, Backend: api.BackendOverlay})
	require.NoError(t, err)
	require.Equal(t, api.BackendOverlay, fm.Backend)
	var st syscall.Statfs_t
	require.NoError(t, syscall.Statfs(mnt, &st))
	require.EqualValues(t, 0x794c7630, st.Type, "the kernel's overlayfs serves the mount")

	b, err := os.ReadFile(filepath.Join(mnt, "src/main.go"))
	require.NoError(t, err)
	require.Equal(t, "package main\n", string(b))

	// The kernel's change reaches the tools; the tools' reaches the mount.
	writeSynced(t, filepath.Join(mnt, "src/kernel.txt"), "from the kernel")
	require.Equal(t, "from the kernel", readTool(t, c, "ov", "src/kernel.txt"))
	_, err = c.CallTool(ctx, "ov", "write_file", json.RawMessage(`{"path":"src/tool.txt","content":"from a tool"}`))
	require.NoError(t, err)
	b, err = os.ReadFile(filepath.Join(mnt, "src/tool.txt"))
	require.NoError(t, err)
	require.Equal(t, "from a tool", string(b))

	// Crash: what the kernel acknowledged before and after the kill is
	// ingested by the restarted daemon.
	writeSynced(t, filepath.Join(mnt, "before-crash.txt"), "acknowledged before")
	require.NoError(t, os.Remove(filepath.Join(mnt, "src/kernel.txt")))
	p.kill9()
	writeSynced(t, filepath.Join(mnt, "during-crash.txt"), "written while no daemon ran")
	p = startDaemon(t, dataDir, socket)
	c = p.client()
	require.Equal(t, "acknowledged before", readTool(t, c, "ov", "before-crash.txt"))
	require.Equal(t, "written while no daemon ran", readTool(t, c, "ov", "during-crash.txt"))
	r, err := c.CallTool(ctx, "ov", "read_file", json.RawMessage(`{"path":"src/kernel.txt"}`))
	require.NoError(t, err)
	require.Contains(t, string(r.JSON), "not_found", "a deletion through the mount is a deletion in the session")
	view, err := c.Session(ctx, "ov")
	require.NoError(t, err)
	require.Len(t, view.FuseMounts, 1)
	require.Equal(t, api.BackendOverlay, view.FuseMounts[0].Backend)

	// A snapshot holds what the kernel wrote last.
	writeSynced(t, filepath.Join(mnt, "last.txt"), "last")
	snap, err := c.CreateSnapshot(ctx, "ov", "after")
	require.NoError(t, err)
	require.Greater(t, snap.Files, int64(3))

	// Unmount takes in the last changes and leaves nothing mounted.
	writeSynced(t, filepath.Join(mnt, "at-unmount.txt"), "at unmount")
	require.NoError(t, c.Unmount(ctx, "ov", mnt))
	require.NoError(t, syscall.Statfs(mnt, &st))
	require.NotEqualValues(t, 0x794c7630, st.Type)
	require.Equal(t, "at unmount", readTool(t, c, "ov", "at-unmount.txt"))
	left, _ := os.ReadDir(filepath.Join(dataDir, "overlay", "mounts"))
	require.Empty(t, left, "the upper and work directories are gone")
	require.False(t, strings.Contains(p.logText(), "level=ERROR"), p.logText())
	p.stop()
}
