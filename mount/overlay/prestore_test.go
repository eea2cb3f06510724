//go:build linux

package overlay_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// TestIngestStoresManyFilesAhead writes many new files through the mount
// (text, binary, empty, sparse, one rewritten after a first ingest) and
// syncs: the ingest stores their content ahead, several at a time, and
// the session holds every file with its content, encoding, mode and owner;
// every blob matches its name, and the mount's upper files stay the
// kernel's (never linked into the store).
func TestIngestStoresManyFilesAhead(t *testing.T) {
	requireOverlay(t)
	e := newEnv(t)
	m := e.mount(t)
	ctx := context.Background()
	want := map[string]string{}
	for i := range 60 {
		p := fmt.Sprintf("pkg%d/f%02d", i%4, i)
		var content string
		switch i % 4 {
		case 0:
			content = strings.Repeat(fmt.Sprintf("text %d\n", i), 100)
		case 1:
			content = fmt.Sprintf("bin\x00%d", i)
		case 2:
			content = ""
		case 3:
			content = strings.Repeat("\x00", 64<<10) + fmt.Sprint(i)
		}
		want[p] = content
		require.NoError(t, os.MkdirAll(filepath.Join(m.Dir(), filepath.Dir(p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(m.Dir(), p), []byte(content), 0o640))
	}
	check := func() {
		require.NoError(t, m.Sync(ctx))
		for p, content := range want {
			b, n, err := e.s.ReadFile(ctx, vfs.MustPath(p))
			require.NoError(t, err, p)
			require.Equal(t, content, string(b), p)
			require.Equal(t, os.FileMode(0o640), n.Mode, p)
			wantEnc := vfs.EncodingUTF8
			if strings.ContainsRune(content, 0) {
				wantEnc = vfs.EncodingBinary
			}
			require.Equal(t, wantEnc, n.Encoding, p)
			require.Equal(t, uint32(os.Getuid()), n.Uid, p)
		}
		store := e.repo.Store().(*snapshot.LocalStore)
		require.NoError(t, store.List(ctx, snapshot.Blobs, func(h vfs.Hash, _ int64) error {
			return store.Verify(ctx, snapshot.Blobs, h)
		}))
		upper := filepath.Join(e.opts().StateDir, "upper")
		require.NoError(t, filepath.WalkDir(upper, func(p string, d os.DirEntry, err error) error {
			require.NoError(t, err)
			if d.Type().IsRegular() {
				fi, err := os.Stat(p)
				require.NoError(t, err)
				require.NotEqual(t, os.FileMode(0o444), fi.Mode().Perm(), "%s was taken into the store", p)
			}
			return nil
		}))
	}
	check()
	want["pkg0/f00"] = "rewritten\n"
	require.NoError(t, os.WriteFile(filepath.Join(m.Dir(), "pkg0/f00"), []byte(want["pkg0/f00"]), 0o640))
	check()
}
