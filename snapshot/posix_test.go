package snapshot_test

import (
	"io/fs"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// TestSnapshotKeepsPOSIXMetadata: owners, special bits, xattrs, special
// files, nanosecond times and hard links survive a snapshot, a fresh load
// and a fork; a write through one name after the fork reaches every name,
// and the next snapshot records it under both.
func TestSnapshotKeepsPOSIXMetadata(t *testing.T) {
	r, store, dir := newRepo(t)
	s, err := r.NewSession(ctx, snapshot.SessionOptions{ID: "posix"})
	require.NoError(t, err)
	write(t, s, "a/f", "one")
	_, err = s.Chown(ctx, p("a/f"), 1234, 5678)
	require.NoError(t, err)
	_, err = s.Chmod(ctx, p("a/f"), 0o750|fs.ModeSetgid)
	require.NoError(t, err)
	_, err = s.SetXattr(ctx, p("a/f"), "user.k", []byte("v"), 0)
	require.NoError(t, err)
	_, err = s.Mkdir(ctx, p("b"), vfs.MkdirOptions{})
	require.NoError(t, err)
	_, err = s.Link(ctx, p("a/f"), p("b/g"))
	require.NoError(t, err)
	_, err = s.Mknod(ctx, p("b/tty"), vfs.KindCharDev, vfs.CreateOptions{Perm: 0o620}, 0x0401)
	require.NoError(t, err)
	want, err := s.Stat(ctx, p("a/f"))
	require.NoError(t, err)

	snap, err := r.Snapshot(ctx, s, "posix")
	require.NoError(t, err)

	// A fresh repository over the same store loads it from its manifests.
	r2, err := snapshot.OpenRepo(ctx, store, dir+"/sessions2", snapshot.RepoOptions{})
	require.NoError(t, err)
	defer r2.Close()
	loaded, err := r2.Get(ctx, snap.ID)
	require.NoError(t, err)
	got, ok, _ := loaded.Tree.Lookup(p("b/g"))
	require.True(t, ok)
	require.Equal(t, want, got)
	require.Equal(t, []vfs.Path{"a/f", "b/g"}, loaded.Tree.LinkNames(want.Ino))
	dev, _, _ := loaded.Tree.Lookup(p("b/tty"))
	require.Equal(t, vfs.KindCharDev, dev.Kind)
	require.Equal(t, uint64(0x0401), dev.Rdev)
	root, _, _ := loaded.Tree.Lookup(vfs.Root)
	require.Equal(t, uint32(4), root.Nlink)

	f, err := r.Fork(ctx, snapshot.Source{Snapshot: snap.ID}, snapshot.SessionOptions{ID: "fork"})
	require.NoError(t, err)
	write(t, f, "b/g", "two")
	require.Equal(t, "two", read(t, f, "a/f"))
	snap2, err := r.Snapshot(ctx, f, "after")
	require.NoError(t, err)
	for _, name := range []string{"a/f", "b/g"} {
		n, ok, _ := snap2.Tree.Lookup(p(name))
		require.True(t, ok)
		require.Equal(t, vfs.HashOf([]byte("two")), n.Blob, name)
	}
	r3, err := snapshot.OpenRepo(ctx, store, dir+"/sessions3", snapshot.RepoOptions{})
	require.NoError(t, err)
	defer r3.Close()
	loaded2, err := r3.Get(ctx, snap2.ID)
	require.NoError(t, err)
	require.Equal(t, snap2.Tree.Encode(), loaded2.Tree.Encode(), "every name's manifest was rewritten")
}
