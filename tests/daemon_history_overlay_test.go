//go:build linux

package tests

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/mount/overlay"
)

// TestDaemonRewindWithOverlayMount: the kernel overlay backend mounts the
// rewound state again; what programs wrote before is a log entry of its
// own, ingested at the next call.
func TestDaemonRewindWithOverlayMount(t *testing.T) {
	if err := overlay.Available(); err != nil {
		t.Skipf("overlay backend unavailable: %v", err)
	}
	dataDir, socket := newDaemonDirs(t)
	p := startDaemon(t, dataDir, socket)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := p.client()
	_, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "ov"})
	require.NoError(t, err)
	histWrite(t, c, "ov", "tool.txt", "by a tool\n") // call 1
	mnt := t.TempDir()
	t.Cleanup(func() { _ = syscall.Unmount(mnt, syscall.MNT_DETACH) })
	_, err = c.Mount(ctx, "ov", api.MountRequest{Dir: mnt, Backend: api.BackendOverlay})
	require.NoError(t, err)
	writeSynced(t, filepath.Join(mnt, "prog.txt"), "by a program\n")
	histWrite(t, c, "ov", "tool2.txt", "again\n") // call 2: ingests prog.txt first

	l, err := c.LogAll(ctx, "ov", false)
	require.NoError(t, err)
	var mountEntry *api.LogEntry
	for i, e := range l.Entries {
		if e.Kind == api.LogMount {
			mountEntry = &l.Entries[i]
		}
	}
	require.NotNil(t, mountEntry, "%+v", l.Entries)
	require.Equal(t, "overlay:"+mnt, mountEntry.Source)
	require.Contains(t, mountEntry.Paths, "prog.txt")

	_, err = c.Rewind(ctx, "ov", api.RewindRequest{Call: 2})
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(mnt, "prog.txt"))
	require.NoError(t, err, "just before call 2 the program's file is there")
	require.Equal(t, "by a program\n", string(b))
	_, err = os.Stat(filepath.Join(mnt, "tool2.txt"))
	require.True(t, errors.Is(err, fs.ErrNotExist))
	_, err = c.Rewind(ctx, "ov", api.RewindRequest{Seq: &mountEntry.SeqBefore})
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(mnt, "prog.txt"))
	require.True(t, errors.Is(err, fs.ErrNotExist), "before the program wrote it")
}
