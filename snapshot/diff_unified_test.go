package snapshot_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// TestWriteUnified renders every kind of change as git does, with the
// modes and symlink targets a review must see.
func TestWriteUnified(t *testing.T) {
	r, _, _ := newRepo(t)
	s, err := r.NewSession(ctx, snapshot.SessionOptions{ID: "u"})
	require.NoError(t, err)
	write(t, s, "script.sh", "echo\n")
	write(t, s, "gone.txt", "bye\n")
	write(t, s, "becomes-link", "file\n")
	write(t, s, "dir/x", "x\n")
	write(t, s, "bin", "\x00")
	_, err = s.Symlink(ctx, "old-target", p("link"))
	require.NoError(t, err)
	a, err := r.Snapshot(ctx, s, "a")
	require.NoError(t, err)

	_, err = s.Chmod(ctx, p("script.sh"), 0o755)
	require.NoError(t, err)
	_, err = s.Chmod(ctx, p("dir"), 0o777)
	require.NoError(t, err)
	require.NoError(t, s.Remove(ctx, p("gone.txt"), vfs.RemoveOptions{}))
	require.NoError(t, s.Remove(ctx, p("becomes-link"), vfs.RemoveOptions{}))
	_, err = s.Symlink(ctx, "/etc", p("becomes-link"))
	require.NoError(t, err)
	require.NoError(t, s.Remove(ctx, p("link"), vfs.RemoveOptions{}))
	_, err = s.Symlink(ctx, "/", p("link"))
	require.NoError(t, err)
	write(t, s, "bin", "\x01\x00")
	write(t, s, "tab\tname", "t\n")

	d, err := r.Diff(ctx, snapshot.Source{Snapshot: a.ID}, snapshot.Source{Session: s}, snapshot.DiffOptions{Text: true})
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, d.WriteUnified(&out))
	require.Equal(t, `diff --git a/becomes-link b/becomes-link
deleted file mode 100644
--- a/becomes-link
+++ /dev/null
@@ -1 +0,0 @@
-file
diff --git a/becomes-link b/becomes-link
new file mode 120000
--- /dev/null
+++ b/becomes-link
@@ -0,0 +1 @@
+/etc
\ No newline at end of file
diff --git a/bin b/bin
Binary files a/bin and b/bin differ
diff --git a/dir b/dir
old mode 040755
new mode 040777
diff --git a/gone.txt b/gone.txt
deleted file mode 100644
--- a/gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
diff --git a/link b/link
--- a/link
+++ b/link
@@ -1 +1 @@
-old-target
\ No newline at end of file
+/
\ No newline at end of file
diff --git a/script.sh b/script.sh
old mode 100644
new mode 100755
diff --git "a/tab\tname" "b/tab\tname"
new file mode 100644
--- /dev/null
+++ "b/tab\tname"
@@ -0,0 +1 @@
+t
`, out.String())
	for _, e := range d.Entries {
		if e.Path == "link" {
			require.Equal(t, "old-target", e.OldTarget)
			require.Equal(t, "/", e.NewTarget)
		}
	}
}
