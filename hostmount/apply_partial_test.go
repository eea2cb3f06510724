package hostmount

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// TestApplyPartialFailure is the attack of issue 11 (finding 2): a
// directory the session removes gained a file on the host, so removing it
// fails (ENOTEMPTY) after other changes were written. The apply must still
// return its whole report — that path a conflict with its reason,
// everything else applied — and advance the import base by exactly what
// was applied, so the next apply neither redoes nor undoes it.
func TestApplyPartialFailure(t *testing.T) {
	e := newEnv(t)
	e.write("proj/edit.txt", "old\n")
	e.write("proj/olddir/x.txt", "x\n")
	e.write("proj/keep.txt", "keep\n")
	host := filepath.Join(e.root, "proj")
	mounts := []Mount{{HostPath: host, MountPath: "/"}}
	s, rep, err := e.im.Stage(ctx, e.repo, snapshot.SessionOptions{}, mounts, nil)
	require.NoError(t, err)
	base := rep.Snapshot

	_, err = s.WriteFile(ctx, vfs.MustPath("edit.txt"), strings.NewReader("new\n"), vfs.WriteOptions{})
	require.NoError(t, err)
	_, err = s.WriteFile(ctx, vfs.MustPath("zz-added.txt"), strings.NewReader("added\n"), vfs.WriteOptions{})
	require.NoError(t, err)
	require.NoError(t, s.Remove(ctx, vfs.MustPath("olddir"), vfs.RemoveOptions{Recursive: true}))
	e.write("proj/olddir/host-added.txt", "the host's\n")

	got, err := e.im.Apply(ctx, e.repo, base, s, mounts, ApplyOptions{})
	require.NoError(t, err, "a change the host refuses is a conflict, not an error")
	applied := map[string]string{}
	for _, c := range got.Applied {
		applied[c.Path] = c.Action
	}
	require.Equal(t, map[string]string{"/edit.txt": "write", "/zz-added.txt": "write", "/olddir/x.txt": "delete"}, applied)
	require.Len(t, got.Conflicts, 1, "%+v", got.Conflicts)
	require.Equal(t, "/olddir", got.Conflicts[0].Path)
	require.Equal(t, "rmdir", got.Conflicts[0].Action)
	require.Contains(t, got.Conflicts[0].Conflict, "not empty")
	hostFile := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(host, rel))
		if os.IsNotExist(err) {
			return "<absent>"
		}
		require.NoError(t, err)
		return string(b)
	}
	require.Equal(t, "new\n", hostFile("edit.txt"))
	require.Equal(t, "added\n", hostFile("zz-added.txt"))
	require.Equal(t, "<absent>", hostFile("olddir/x.txt"))
	require.Equal(t, "the host's\n", hostFile("olddir/host-added.txt"))

	// The import base advanced by exactly what was applied: applying again
	// does nothing but report the same conflict.
	require.NotEmpty(t, got.Import)
	require.NotEqual(t, base, got.Import)
	again, err := e.im.Apply(ctx, e.repo, got.Import, s, mounts, ApplyOptions{})
	require.NoError(t, err)
	require.Empty(t, again.Applied)
	require.Len(t, again.Conflicts, 1)
	require.Equal(t, "/olddir", again.Conflicts[0].Path)
	require.Equal(t, got.Import, again.Import, "nothing applied, the base stays")

	// Once the host is fixed, the next apply does the rest.
	require.NoError(t, os.Remove(filepath.Join(host, "olddir/host-added.txt")))
	last, err := e.im.Apply(ctx, e.repo, again.Import, s, mounts, ApplyOptions{})
	require.NoError(t, err)
	require.Empty(t, last.Conflicts)
	require.Len(t, last.Applied, 1)
	require.Equal(t, "/olddir", last.Applied[0].Path)
	_, err = os.Stat(filepath.Join(host, "olddir"))
	require.ErrorIs(t, err, os.ErrNotExist)
	d, err := e.repo.Diff(ctx, snapshot.Source{Snapshot: last.Import}, snapshot.Source{Session: s}, snapshot.DiffOptions{})
	require.NoError(t, err)
	require.Empty(t, d.Entries, "everything applied: the base is the session")
}

// TestApplyDirectoryMode applies a directory's mode change, which the
// diff now shows, through a descriptor that does not follow a symlink.
func TestApplyDirectoryMode(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows keeps no directory modes")
	}
	e := newEnv(t)
	e.write("proj/d/f.txt", "f\n")
	host := filepath.Join(e.root, "proj")
	require.NoError(t, os.Chmod(filepath.Join(host, "d"), 0o755))
	mounts := []Mount{{HostPath: host, MountPath: "/"}}
	s, rep, err := e.im.Stage(ctx, e.repo, snapshot.SessionOptions{}, mounts, nil)
	require.NoError(t, err)
	_, err = s.Chmod(ctx, vfs.MustPath("d"), 0o700)
	require.NoError(t, err)
	got, err := e.im.Apply(ctx, e.repo, rep.Snapshot, s, mounts, ApplyOptions{})
	require.NoError(t, err)
	require.Empty(t, got.Conflicts)
	require.Equal(t, []ApplyChange{{Path: "/d", HostPath: filepath.Join(host, "d"), Action: "chmod"}}, got.Applied)
	fi, err := os.Stat(filepath.Join(host, "d"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
}

// TestApplyOverReadOnlyFile replaces a read-only host file (the mode the
// session keeps) and deletes another: a read-only file is no obstacle on
// any system, as with cp or an editor's save-by-rename.
func TestApplyOverReadOnlyFile(t *testing.T) {
	e := newEnv(t)
	e.write("proj/ro.txt", "old\n")
	e.write("proj/gone.txt", "bye\n")
	host := filepath.Join(e.root, "proj")
	for _, f := range []string{"ro.txt", "gone.txt"} {
		require.NoError(t, os.Chmod(filepath.Join(host, f), 0o444))
	}
	mounts := []Mount{{HostPath: host, MountPath: "/"}}
	s, rep, err := e.im.Stage(ctx, e.repo, snapshot.SessionOptions{}, mounts, nil)
	require.NoError(t, err)
	_, err = s.WriteFile(ctx, vfs.MustPath("ro.txt"), strings.NewReader("new\n"), vfs.WriteOptions{})
	require.NoError(t, err)
	require.NoError(t, s.Remove(ctx, vfs.MustPath("gone.txt"), vfs.RemoveOptions{}))
	got, err := e.im.Apply(ctx, e.repo, rep.Snapshot, s, mounts, ApplyOptions{})
	require.NoError(t, err)
	require.Empty(t, got.Conflicts)
	require.Len(t, got.Applied, 2)
	for _, c := range got.Applied {
		require.Empty(t, c.Note)
	}
	requireContent(t, filepath.Join(host, "ro.txt"), "new\n")
	require.NoFileExists(t, filepath.Join(host, "gone.txt"))
	fi, err := os.Stat(filepath.Join(host, "ro.txt"))
	require.NoError(t, err)
	require.Zero(t, fi.Mode().Perm()&0o222, "still read-only")
	leftovers, _ := filepath.Glob(filepath.Join(host, ".*.vfsd-*"))
	require.Empty(t, leftovers)
}
