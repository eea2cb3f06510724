package snapshot_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// reflinkDir returns a directory on a fresh XFS file system with reflinks
// (a loop-mounted image), unmounted when the test ends. Without root or
// mkfs.xfs the test skips, unless VFSD_REQUIRE_REFLINK=1 (CI) makes that
// a failure.
func reflinkDir(t *testing.T) string {
	t.Helper()
	skip := func(why string) {
		if os.Getenv("VFSD_REQUIRE_REFLINK") == "1" {
			t.Fatalf("VFSD_REQUIRE_REFLINK=1 but %s", why)
		}
		t.Skip(why)
	}
	if os.Geteuid() != 0 {
		skip("mounting an XFS image needs root")
	}
	mkfs, err := exec.LookPath("mkfs.xfs")
	if err != nil {
		skip("no mkfs.xfs (Debian: apt-get install xfsprogs)")
	}
	root := t.TempDir()
	img, mnt := filepath.Join(root, "xfs.img"), filepath.Join(root, "mnt")
	require.NoError(t, os.Mkdir(mnt, 0o755))
	f, err := os.Create(img)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(512<<20)) // sparse: XFS's smallest size is 300 MiB
	require.NoError(t, f.Close())
	out, err := exec.Command(mkfs, "-q", "-m", "reflink=1", img).CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput()
	if err != nil {
		skip("cannot loop-mount an XFS image here: " + strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
		}
	})
	return mnt
}

// TestPutFileClonesOnXFS: on a file system that shares extents, a file
// that may still change (an overlay mount's upper file, say) is stored by
// a clone, not a copy: no data written, and the object keeps its content
// when the file is written again afterwards.
func TestPutFileClonesOnXFS(t *testing.T) {
	dir := reflinkDir(t)
	ctx := context.Background()
	store, err := snapshot.OpenLocal(filepath.Join(dir, "store"))
	require.NoError(t, err)
	defer store.Close()
	content := bytes.Repeat([]byte("written through an overlay mount\n"), 4096)
	path := filepath.Join(dir, "upper")
	require.NoError(t, os.WriteFile(path, content, 0o600))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()

	var before unix.Statfs_t
	require.NoError(t, unix.Statfs(dir, &before))
	res, err := store.PutFile(ctx, snapshot.Blobs, f, snapshot.PutFileOptions{})
	require.NoError(t, err)
	require.Equal(t, "clone", res.How)
	require.Equal(t, vfs.HashOf(content), res.Hash)
	var after unix.Statfs_t
	require.NoError(t, unix.Statfs(dir, &after))
	used := int64(before.Bfree-after.Bfree) * before.Bsize
	require.Less(t, used, int64(len(content))/2, "a clone shares the file's blocks: %d bytes used for %d", used, len(content))

	obj := store.ObjectPath(snapshot.Blobs, res.Hash)
	require.NotEqual(t, inode(t, obj), inode(t, path), "the object is another inode")
	// The file written again, in place: the object does not change.
	_, err = f.WriteAt([]byte("CHANGED"), 0)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, store.Verify(ctx, snapshot.Blobs, res.Hash))
	got, err := os.ReadFile(obj)
	require.NoError(t, err)
	require.Equal(t, content, got)
	requireTmpEmpty(t, filepath.Join(dir, "store"))
}
