//go:build !linux

package hostmount

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// TestNoHostAccessOutsideLinux checks that, where scanning and applying
// through os.Root are not written yet, Import and Apply fail with an error
// that says so and leave the host alone, while the roots still open and an
// outside path is still refused.
func TestNoHostAccessOutsideLinux(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	rootDir := filepath.Join(dir, "root")
	require.NoError(t, os.MkdirAll(filepath.Join(rootDir, "proj"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(rootDir, "proj", "a.txt"), []byte("a"), 0o644))
	repo, err := snapshot.OpenRepo(ctx, snapshot.NewMemory(), filepath.Join(dir, "sessions"), snapshot.RepoOptions{})
	require.NoError(t, err)
	defer repo.Close()
	im, err := New(Options{Roots: []string{rootDir}, CacheFile: filepath.Join(dir, "import.cache")})
	require.NoError(t, err)
	defer im.Close()

	real, err := filepath.EvalSymlinks(filepath.Join(rootDir, "proj"))
	require.NoError(t, err)
	_, _, err = im.Import(ctx, repo, []Mount{{HostPath: real, MountPath: "/proj"}}, nil)
	var ve *vfs.Error
	require.ErrorAs(t, err, &ve)
	require.Contains(t, ve.Msg, "only on Linux")

	_, err = im.Apply(ctx, repo, "", nil, nil, ApplyOptions{})
	require.ErrorAs(t, err, &ve)
	require.Contains(t, ve.Msg, "only on Linux")
	data, err := os.ReadFile(filepath.Join(rootDir, "proj", "a.txt"))
	require.NoError(t, err)
	require.Equal(t, "a", string(data))
}
