package snapshot_test

import (
	"bytes"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// TestDiffPOSIXMetadata: owner, mode (special bits included), extended
// attribute, device and hard-link changes are diff entries, and the
// unified text shows them as mode lines and extended header lines.
func TestDiffPOSIXMetadata(t *testing.T) {
	r, _, _ := newRepo(t)
	s, err := r.NewSession(ctx, snapshot.SessionOptions{ID: "pd"})
	require.NoError(t, err)
	write(t, s, "owned", "o\n")
	_, err = s.Chown(ctx, p("owned"), 7, 7)
	require.NoError(t, err)
	write(t, s, "suid", "s\n")
	write(t, s, "tagged", "x\n")
	write(t, s, "linked", "l\n")
	_, err = s.SetXattr(ctx, p("tagged"), "user.gone", []byte("1"), 0)
	require.NoError(t, err)
	_, err = s.SetXattr(ctx, p("tagged"), "user.k", []byte("v1"), 0)
	require.NoError(t, err)
	_, err = s.Mkdir(ctx, p("tmp"), vfs.MkdirOptions{})
	require.NoError(t, err)
	_, err = s.Mknod(ctx, p("tty"), vfs.KindCharDev, vfs.CreateOptions{Perm: 0o620}, 0x0401)
	require.NoError(t, err)
	a, err := r.Snapshot(ctx, s, "a")
	require.NoError(t, err)

	_, err = s.Chown(ctx, p("owned"), 1000, 1000)
	require.NoError(t, err)
	_, err = s.Chmod(ctx, p("suid"), 0o755|fs.ModeSetuid)
	require.NoError(t, err)
	_, err = s.Chmod(ctx, p("tmp"), 0o777|fs.ModeSticky)
	require.NoError(t, err)
	_, err = s.SetXattr(ctx, p("tagged"), "user.k", []byte("v2"), 0)
	require.NoError(t, err)
	_, err = s.SetXattr(ctx, p("tagged"), "user.new", []byte("n"), 0)
	require.NoError(t, err)
	_, err = s.RemoveXattr(ctx, p("tagged"), "user.gone")
	require.NoError(t, err)
	_, err = s.Link(ctx, p("linked"), p("second"))
	require.NoError(t, err)
	_, err = s.Mknod(ctx, p("pipe"), vfs.KindFifo, vfs.CreateOptions{Perm: 0o600}, 0)
	require.NoError(t, err)
	require.NoError(t, s.Remove(ctx, p("tty"), vfs.RemoveOptions{}))
	_, err = s.Mknod(ctx, p("tty"), vfs.KindCharDev, vfs.CreateOptions{Perm: 0o620}, 0x0402)
	require.NoError(t, err)

	d, err := r.Diff(ctx, snapshot.Source{Snapshot: a.ID}, snapshot.Source{Session: s}, snapshot.DiffOptions{Text: true})
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, d.WriteUnified(&out))
	require.Equal(t, `diff --git a/owned b/owned
owner 7:7 -> 1000:1000
diff --git a/pipe b/pipe
new file mode 010600
diff --git a/second b/second
new file mode 100644
hard link to linked
--- /dev/null
+++ b/second
@@ -0,0 +1 @@
+l
diff --git a/suid b/suid
old mode 100644
new mode 104755
diff --git a/tagged b/tagged
xattr user.gone removed
xattr user.k changed
xattr user.new added
diff --git a/tmp b/tmp
old mode 040755
new mode 041777
diff --git a/tty b/tty
old device 4:1
new device 4:2
`, out.String())

	byPath := map[vfs.Path]snapshot.DiffEntry{}
	for _, e := range d.Entries {
		byPath[e.Path] = e
	}
	require.Equal(t, &vfs.Owner{Uid: 1000, Gid: 1000}, byPath["owned"].NewOwner)
	require.Equal(t, &vfs.Owner{Uid: 7, Gid: 7}, byPath["owned"].OldOwner)
	require.Equal(t, uint32(0o4755), byPath["suid"].NewMode)
	require.Equal(t, vfs.Path("linked"), byPath["second"].LinkTo)
	require.Equal(t, []snapshot.XattrChange{{Name: "user.gone", Change: snapshot.Deleted},
		{Name: "user.k", Change: snapshot.Modified}, {Name: "user.new", Change: snapshot.Added}}, byPath["tagged"].Xattrs)
	require.Equal(t, snapshot.Modified, byPath["tty"].Change)
	require.Equal(t, uint64(0x0402), byPath["tty"].NewRdev)
	_, listed := byPath["linked"]
	require.False(t, listed, "the existing name of a new hard link did not change")
}
