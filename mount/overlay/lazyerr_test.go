//go:build linux

package overlay_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/mount/overlay"
	"github.com/vfsd/vfsd/tools/toolstest"
	"github.com/vfsd/vfsd/vfs"
)

// TestUnreadableLazyDirectory: mounting a session one of whose lazily
// loaded directories cannot be read fails with a clear io_error (the
// metadata layer cannot be built), never a mount with that directory
// missing or empty; nothing stays mounted.
func TestUnreadableLazyDirectory(t *testing.T) {
	requireOverlay(t)
	b := toolstest.NewBroken(t, nil)
	root := t.TempDir()
	dir := filepath.Join(root, "mnt")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	m, err := overlay.New(context.Background(), b.Repo, b.S, dir,
		overlay.Options{StateDir: filepath.Join(root, "state"), MetaCache: filepath.Join(root, "meta")})
	if m != nil {
		m.Unmount()
	}
	require.Error(t, err, "a mount without bad/ would show it missing")
	require.ErrorIs(t, err, vfs.ErrIO)
	require.ErrorContains(t, err, "reading a directory of the snapshot failed")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing is mounted")
}
