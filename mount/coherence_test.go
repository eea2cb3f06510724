//go:build linux

package mount_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/mount"
	"github.com/vfsd/vfsd/vfs"
)

var coherenceFiles = map[string]string{
	"README.md":           "# project\n",
	"src/main.go":         "package main\n\nfunc main() {\n\tprintln(\"hello\")\n}\n",
	"src/util/util.go":    "package util\n",
	"docs/a.txt":          "one\ntwo\nthree\n",
	"docs/b.txt":          "bee\n",
	"old.txt":             "old\n",
	"tree/x/y/z.txt":      "deep\n",
	"tree/x/sibling.txt":  "sib\n",
	"empty/":              "",
	"bin/data.bin":        strings.Repeat("\x00\x01\x02\xff", 5000),
	"move/me/please.txt":  "moving\n",
	"move/me/also/too.md": "too\n",
}

// TestCoherenceToolToMount: every change a tool makes shows in the mount at
// once — content, sizes, listings — although the kernel was told to cache
// entries and attributes for an hour and has them all cached.
// It runs with each way of serving directory listings.
func TestCoherenceToolToMount(t *testing.T) {
	for _, c := range dirOptions {
		t.Run(c.name, func(t *testing.T) { coherenceToolToMount(t, c.opts) })
	}
}

// dirOptions are the ways the mount can serve directory listings.
var dirOptions = []struct {
	name string
	opts mount.Options
}{
	{"defaults", mount.Options{}},
	{"no cache dir", mount.Options{NoCacheDir: true}},
	{"full readdirplus", mount.Options{FullReaddirPlus: true}},
	{"no readdirplus", mount.Options{NoReaddirPlus: true}},
}

func coherenceToolToMount(t *testing.T, opts mount.Options) {
	e, m := mounted(t, coherenceFiles, opts)
	dir := m.Dir()
	requireSameTree(t, e.S, dir, "initial")

	steps := []struct {
		name   string
		tool   string
		params any
		check  func(t *testing.T)
	}{
		{name: "write longer", tool: "write_file",
			params: map[string]any{"path": "README.md", "inline_text": "# project\n\nA much longer readme than before.\n"}},
		{name: "write shorter", tool: "write_file",
			params: map[string]any{"path": "src/main.go", "inline_text": "package main\n"}},
		{name: "write new file in a listed dir", tool: "write_file",
			params: map[string]any{"path": "src/new.go", "inline_text": "package main // new\n"}},
		{name: "write with new parents", tool: "write_file",
			params: map[string]any{"path": "tree/x/y/w/v.txt", "inline_text": "created with parents\n"}},
		{name: "append", tool: "write_file",
			params: map[string]any{"path": "docs/b.txt", "inline_text": "appended\n", "mode": "append"}},
		{name: "edit", tool: "edit_file",
			params: map[string]any{"path": "docs/a.txt", "old_string": "two", "new_string": "TWO, edited"}},
		{name: "patch", tool: "apply_patch", params: map[string]any{"patch": "*** Begin Patch\n" +
			"*** Update File: docs/a.txt\n@@\n one\n-TWO, edited\n+two again\n three\n" +
			"*** Add File: patched/new.txt\n+added by a patch\n" +
			"*** Delete File: docs/b.txt\n" +
			"*** Update File: src/util/util.go\n*** Move to: lib/util.go\n@@\n-package util\n+package lib\n" +
			"*** End Patch\n"},
			check: func(t *testing.T) {
				_, err := os.Stat(filepath.Join(dir, "docs/b.txt"))
				require.ErrorIs(t, err, os.ErrNotExist)
				_, err = os.Stat(filepath.Join(dir, "src/util/util.go"))
				require.ErrorIs(t, err, os.ErrNotExist)
			}},
		{name: "delete file", tool: "delete_file", params: map[string]any{"path": "old.txt"},
			check: func(t *testing.T) {
				_, err := os.Lstat(filepath.Join(dir, "old.txt"))
				require.ErrorIs(t, err, os.ErrNotExist)
			}},
		{name: "delete dir recursively", tool: "delete_file", params: map[string]any{"path": "tree/x/y", "recursive": true},
			check: func(t *testing.T) {
				_, err := os.Stat(filepath.Join(dir, "tree/x/y/z.txt"))
				require.ErrorIs(t, err, os.ErrNotExist)
			}},
		{name: "delete empty dir", tool: "delete_file", params: map[string]any{"path": "empty"}},
		{name: "rename file", tool: "rename", params: map[string]any{"from": "docs/a.txt", "to": "docs/renamed.txt"}},
		{name: "rename over", tool: "rename", params: map[string]any{"from": "src/new.go", "to": "src/main.go", "overwrite": true},
			check: func(t *testing.T) {
				data, err := os.ReadFile(filepath.Join(dir, "src/main.go"))
				require.NoError(t, err)
				require.Equal(t, "package main // new\n", string(data))
			}},
		{name: "rename dir", tool: "rename", params: map[string]any{"from": "move/me", "to": "moved/here"},
			check: func(t *testing.T) {
				data, err := os.ReadFile(filepath.Join(dir, "moved/here/also/too.md"))
				require.NoError(t, err)
				require.Equal(t, "too\n", string(data))
			}},
		{name: "mkdir", tool: "mkdir", params: map[string]any{"path": "made/by/tool"}},
		{name: "rewrite binary", tool: "write_file",
			params: map[string]any{"path": "bin/data.bin", "inline_bytes": bytes.Repeat([]byte{7}, 70000)}},
		{name: "recreate deleted", tool: "write_file", params: map[string]any{"path": "old.txt", "inline_text": "new again\n"}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			callOK(t, e, st.tool, st.params)
			if st.check != nil {
				st.check(t)
			}
			requireSameTree(t, e.S, dir, "after %s", st.name)
		})
	}
}

// TestCoherenceMountToTools: what is written through the mount is what the
// tools read at once, even before the writer closes the file.
func TestCoherenceMountToTools(t *testing.T) {
	e, m := mounted(t, map[string]string{"a.txt": "alpha\n", "d/b.txt": "bravo\n"}, mount.Options{})
	dir := m.Dir()
	readTool := func(p string) string {
		t.Helper()
		return callOK(t, e, "read_file", map[string]any{"path": p})["inline_text"].(string)
	}

	// Writes through an open descriptor are visible before close.
	f, err := os.OpenFile(filepath.Join(dir, "a.txt"), os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("ALPHA"), 0)
	require.NoError(t, err)
	require.Equal(t, "ALPHA\n", readTool("a.txt"))
	_, err = f.WriteAt([]byte("more\n"), 6)
	require.NoError(t, err)
	require.Equal(t, "ALPHA\nmore\n", readTool("a.txt"))
	require.NoError(t, f.Truncate(3))
	require.Equal(t, "ALP", readTool("a.txt"))
	require.NoError(t, f.Close())
	require.Equal(t, "ALP", e.Read("a.txt"))

	// Creates, renames, removes and mkdirs.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "d/new.txt"), []byte("created\n"), 0o600))
	require.Equal(t, "created\n", readTool("d/new.txt"))
	n, err := e.S.Stat(ctx, vfs.MustPath("d/new.txt"))
	require.NoError(t, err)
	require.Equal(t, "-rw-------", n.FileMode().String())
	require.NoError(t, os.Rename(filepath.Join(dir, "d/new.txt"), filepath.Join(dir, "renamed.txt")))
	require.Equal(t, "created\n", readTool("renamed.txt"))
	require.False(t, callOK(t, e, "exists", map[string]any{"path": "d/new.txt"})["exists"].(bool))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "x/y"), 0o755))
	require.Equal(t, "dir", callOK(t, e, "stat", map[string]any{"path": "x/y"})["kind"])
	require.NoError(t, os.Remove(filepath.Join(dir, "d/b.txt")))
	require.False(t, callOK(t, e, "exists", map[string]any{"path": "d/b.txt"})["exists"].(bool))
	require.NoError(t, os.Symlink("../a.txt", filepath.Join(dir, "x/link")))
	require.Equal(t, "../a.txt", callOK(t, e, "stat", map[string]any{"path": "x/link"})["target"])
	require.NoError(t, os.Chmod(filepath.Join(dir, "a.txt"), 0o600))
	n, err = e.S.Stat(ctx, vfs.MustPath("a.txt"))
	require.NoError(t, err)
	require.Equal(t, "-rw-------", n.FileMode().String())

	// Appends through O_APPEND descriptors land at the end, also when a
	// tool wrote in between.
	f, err = os.OpenFile(filepath.Join(dir, "renamed.txt"), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString("one\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	callOK(t, e, "write_file", map[string]any{"path": "renamed.txt", "inline_text": "tool\n", "mode": "append"})
	require.Equal(t, "created\none\ntool\n", readTool("renamed.txt"))

	requireSameTree(t, e.S, dir)
}

// requireContent compares file contents without printing megabytes.
func requireContent(t *testing.T, want, got string, msgAndArgs ...any) {
	t.Helper()
	if want == got {
		return
	}
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	t.Fatalf("%v: got %d bytes, want %d; first difference at byte %d: got %q, want %q", fmt.Sprint(msgAndArgs...),
		len(got), len(want), i, got[i:min(len(got), i+16)], want[i:min(len(want), i+16)])
}

// TestCoherenceReaderWhileToolRewrites: a file open for reading in the mount
// while a tool rewrites it keeps working and reads the new content, as on a
// local filesystem when a file is rewritten in place: the file keeps its
// inode, and the kernel caches pages per inode. No open — that one or a new
// one, before or after the other — ever reads a mix of the two versions.
func TestCoherenceReaderWhileToolRewrites(t *testing.T) {
	oldContent := strings.Repeat("o", 3*4096+100)
	cases := []struct {
		name       string
		newContent string
		oldFirst   bool // the old descriptor reads before a new open does
	}{
		{"longer/old descriptor first", strings.Repeat("N", 5*4096+17), true},
		{"shorter/old descriptor first", strings.Repeat("N", 4096+3), true},
		{"longer/new open first", strings.Repeat("N", 5*4096+17), false},
		{"shorter/new open first", strings.Repeat("N", 4096+3), false},
		{"empty", "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, m := mounted(t, map[string]string{"f.txt": oldContent}, mount.Options{})
			path := filepath.Join(m.Dir(), "f.txt")
			f, err := os.Open(path)
			require.NoError(t, err)
			defer f.Close()
			all, err := io.ReadAll(f) // the kernel caches the old pages
			require.NoError(t, err)
			requireContent(t, oldContent, string(all), "before")

			callOK(t, e, "write_file", map[string]any{"path": "f.txt", "inline_text": tc.newContent})

			viaOld := func() {
				got := make([]byte, 8*4096)
				n, err := f.ReadAt(got, 0)
				require.ErrorIs(t, err, io.EOF)
				requireContent(t, tc.newContent, string(got[:n]), "the descriptor opened before the rewrite")
				var st syscall.Stat_t
				require.NoError(t, syscall.Fstat(int(f.Fd()), &st))
				require.Equal(t, int64(len(tc.newContent)), st.Size)
				require.Equal(t, uint64(1), st.Nlink)
			}
			viaNew := func() {
				fi, err := os.Stat(path)
				require.NoError(t, err)
				require.Equal(t, int64(len(tc.newContent)), fi.Size(), "stat shows the new size")
				data, err := os.ReadFile(path)
				require.NoError(t, err)
				requireContent(t, tc.newContent, string(data), "a new open")
			}
			if tc.oldFirst {
				viaOld()
				viaNew()
			} else {
				viaNew()
				viaOld()
			}
		})
	}
}

// TestCoherenceMixedOpens: a file can be open for reading and for writing
// at once, in either order, and every open sees the writes. (With FUSE
// passthrough, which pins one backing file per inode, the second open
// failed with EIO.)
func TestCoherenceMixedOpens(t *testing.T) {
	_, m := mounted(t, map[string]string{"f.txt": "0123456789\n"}, mount.Options{})
	path := filepath.Join(m.Dir(), "f.txt")

	r, err := os.Open(path)
	require.NoError(t, err)
	defer r.Close()
	w, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err, "open for writing while open for reading")
	defer w.Close()
	r2, err := os.Open(path)
	require.NoError(t, err, "open for reading while open for writing")
	defer r2.Close()

	_, err = w.WriteAt([]byte("abc"), 0)
	require.NoError(t, err)
	for _, f := range []*os.File{r, r2, w} {
		buf := make([]byte, 64)
		n, err := f.ReadAt(buf, 0)
		require.ErrorIs(t, err, io.EOF)
		require.Equal(t, "abc3456789\n", string(buf[:n]), f.Name())
	}
}

// TestPassthroughOptIn: with Options.Passthrough, read-only opens still
// read the right content, before and after a tool rewrite (opens that do
// not overlap it).
func TestPassthroughOptIn(t *testing.T) {
	e, m := mounted(t, map[string]string{"f.txt": "before\n"}, mount.Options{Passthrough: true})
	path := filepath.Join(m.Dir(), "f.txt")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "before\n", string(data))
	callOK(t, e, "write_file", map[string]any{"path": "f.txt", "inline_text": "after, longer\n"})
	data, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "after, longer\n", string(data))
}

// TestCoherenceRemovedWhileOpen: a file a tool deletes, or a restore drops,
// stays readable (and writable) through descriptors opened before, with no
// links; nobody else sees their writes.
func TestCoherenceRemovedWhileOpen(t *testing.T) {
	e, m := mounted(t, map[string]string{"r.txt": "read me\n", "w.txt": "write me\n"}, mount.Options{})
	dir := m.Dir()
	r, err := os.Open(filepath.Join(dir, "r.txt"))
	require.NoError(t, err)
	defer r.Close()
	w, err := os.OpenFile(filepath.Join(dir, "w.txt"), os.O_RDWR, 0)
	require.NoError(t, err)
	defer w.Close()
	_, err = w.WriteAt([]byte("W"), 0) // copied up
	require.NoError(t, err)

	callOK(t, e, "delete_file", map[string]any{"path": "r.txt"})
	callOK(t, e, "delete_file", map[string]any{"path": "w.txt"})
	for _, p := range []string{"r.txt", "w.txt"} {
		_, err := os.Stat(filepath.Join(dir, p))
		require.ErrorIs(t, err, os.ErrNotExist, p)
	}

	data, err := io.ReadAll(io.NewSectionReader(r, 0, 1<<20))
	require.NoError(t, err)
	require.Equal(t, "read me\n", string(data))
	_, err = w.WriteAt([]byte("!"), 8)
	require.NoError(t, err)
	data, err = io.ReadAll(io.NewSectionReader(w, 0, 1<<20))
	require.NoError(t, err)
	require.Equal(t, "Write me!", string(data))
	for _, f := range []*os.File{r, w} {
		var st syscall.Stat_t
		require.NoError(t, syscall.Fstat(int(f.Fd()), &st))
		require.Zero(t, st.Nlink, "%s has been removed", f.Name())
	}
	require.NoError(t, w.Close())
	require.Empty(t, sessionState(t, e.S))
	requireSameTree(t, e.S, dir)
}

// TestCoherenceRestore: restoring a snapshot shows in the mount at once,
// with every cache warm and files open; descriptors opened before keep
// working: on a file the snapshot has unchanged they stay attached, on one
// it lacks they are detached, like descriptors of an unlinked file.
func TestCoherenceRestore(t *testing.T) {
	e, m := mounted(t, map[string]string{
		"a.txt":        "a at snapshot\n",
		"keep.txt":     "unchanged\n",
		"dir/b.txt":    "b at snapshot\n",
		"dir/sub/c.md": "c\n",
	}, mount.Options{})
	dir := m.Dir()
	snap, err := e.Repo.Snapshot(ctx, e.S, "before")
	require.NoError(t, err)
	want := sessionState(t, e.S)
	inos := map[string]uint64{}
	for _, p := range []string{"a.txt", "keep.txt", "dir", "dir/b.txt", "dir/sub", "dir/sub/c.md"} {
		inos[p] = inoOf(t, filepath.Join(dir, p))
	}

	// Change everything, from both sides.
	callOK(t, e, "write_file", map[string]any{"path": "a.txt", "inline_text": "a changed by a tool, longer\n"})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "new.txt"), []byte("new through the mount\n"), 0o644))
	require.NoError(t, os.Remove(filepath.Join(dir, "dir/b.txt")))
	require.NoError(t, os.Rename(filepath.Join(dir, "dir/sub"), filepath.Join(dir, "sub2")))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "newdir"), 0o755))
	require.NoError(t, os.Chmod(filepath.Join(dir, "keep.txt"), 0o600))
	mountState(t, dir) // warm every cache

	aReader, err := os.Open(filepath.Join(dir, "a.txt"))
	require.NoError(t, err)
	defer aReader.Close()
	newWriter, err := os.OpenFile(filepath.Join(dir, "new.txt"), os.O_RDWR, 0)
	require.NoError(t, err)
	defer newWriter.Close()
	keepWriter, err := os.OpenFile(filepath.Join(dir, "keep.txt"), os.O_RDWR, 0)
	require.NoError(t, err)
	defer keepWriter.Close()
	movedDir, err := os.Open(filepath.Join(dir, "sub2"))
	require.NoError(t, err)
	defer movedDir.Close()
	keptDir, err := os.Open(filepath.Join(dir, "dir"))
	require.NoError(t, err)
	defer keptDir.Close()

	require.NoError(t, e.Repo.Restore(ctx, e.S, snap.ID))

	require.Equal(t, want.String(), mountState(t, dir).String(), "the mount shows the snapshot")
	for p, ino := range inos {
		require.Equal(t, ino, inoOf(t, filepath.Join(dir, p)), "%s keeps its inode across snapshot and restore", p)
	}

	// Descriptors opened before the restore keep working. a.txt is the
	// same file (inode) in the snapshot: its reader reads what the file
	// holds now, as a new open does.
	data, err := io.ReadAll(io.NewSectionReader(aReader, 0, 1<<20))
	require.NoError(t, err)
	require.Equal(t, "a at snapshot\n", string(data))
	_, err = newWriter.WriteAt([]byte("NEW"), 0)
	require.NoError(t, err, "new.txt is gone but its descriptor writes")
	data, err = io.ReadAll(io.NewSectionReader(newWriter, 0, 1<<20))
	require.NoError(t, err)
	require.Equal(t, "NEW through the mount\n", string(data))
	names, err := keptDir.Readdirnames(-1)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"b.txt", "sub"}, names, "a directory the restore kept lists its restored entries")
	names, err = movedDir.Readdirnames(-1)
	require.NoError(t, err)
	require.Equal(t, []string{"c.md"}, names, "a directory the restore moved back is the same directory")
	_, err = keepWriter.WriteAt([]byte("U"), 0)
	require.NoError(t, err, "keep.txt is the same file in the snapshot: its descriptor stays attached")
	require.NoError(t, keepWriter.Close())
	require.NoError(t, newWriter.Close())
	require.Equal(t, "Unchanged\n", e.Read("keep.txt"))
	_, err = os.Stat(filepath.Join(dir, "new.txt"))
	require.ErrorIs(t, err, os.ErrNotExist)
	requireSameTree(t, e.S, dir)
}

// TestInodesStable: inode numbers are the engine's: stable across copy-up,
// tool rewrites, renames, and snapshot and restore of unchanged files.
func TestInodesStable(t *testing.T) {
	e, m := mounted(t, map[string]string{"a.txt": "a\n", "d/b.txt": "b\n", "c.txt": "c\n"}, mount.Options{})
	dir := m.Dir()
	ino := func(p string) uint64 { return inoOf(t, filepath.Join(dir, p)) }
	a, b, c, d := ino("a.txt"), ino("d/b.txt"), ino("c.txt"), ino("d")
	require.Len(t, map[uint64]bool{a: true, b: true, c: true, d: true}, 4, "distinct inodes")
	n, err := e.S.Stat(ctx, vfs.MustPath("a.txt"))
	require.NoError(t, err)
	require.Equal(t, n.Ino, a, "the engine's inode")

	// Copy-up through the mount.
	f, err := os.OpenFile(filepath.Join(dir, "a.txt"), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString("more\n")
	require.NoError(t, err)
	require.Equal(t, a, ino("a.txt"), "while copied up and open")
	require.NoError(t, f.Close())
	require.Equal(t, a, ino("a.txt"), "after copy-up")

	// A tool rewrite and a rename.
	callOK(t, e, "write_file", map[string]any{"path": "c.txt", "inline_text": "rewritten\n"})
	require.Equal(t, c, ino("c.txt"))
	require.NoError(t, os.Rename(filepath.Join(dir, "d/b.txt"), filepath.Join(dir, "b.txt")))
	require.Equal(t, b, ino("b.txt"))
	callOK(t, e, "rename", map[string]any{"from": "b.txt", "to": "d/b.txt"})
	require.Equal(t, b, ino("d/b.txt"))

	// Snapshot (which seals a.txt's copied-up content), change, restore.
	snap, err := e.Repo.Snapshot(ctx, e.S, "s")
	require.NoError(t, err)
	require.Equal(t, a, ino("a.txt"), "after the snapshot sealed it")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("changed\n"), 0o644))
	callOK(t, e, "delete_file", map[string]any{"path": "d", "recursive": true})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "z.txt"), []byte("z\n"), 0o644))
	require.NoError(t, e.Repo.Restore(ctx, e.S, snap.ID))
	for p, want := range map[string]uint64{"a.txt": a, "d/b.txt": b, "c.txt": c, "d": d} {
		require.Equal(t, want, ino(p), "%s after restore", p)
	}
	requireSameTree(t, e.S, dir)
}

// TestInodeNotReusedAfterRestore: a file created after a snapshot and still
// open when the snapshot is restored must not share its inode number with a
// file created after the restore: the kernel (and go-fuse) identify files by
// it, so the old descriptor would become a descriptor of the new file.
func TestInodeNotReusedAfterRestore(t *testing.T) {
	e, m := mounted(t, map[string]string{"a.txt": "a\n"}, mount.Options{})
	dir := m.Dir()
	snap, err := e.Repo.Snapshot(ctx, e.S, "s")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "after.txt"), []byte("created after the snapshot\n"), 0o644))
	f, err := os.Open(filepath.Join(dir, "after.txt"))
	require.NoError(t, err)
	defer f.Close()
	var before syscall.Stat_t
	require.NoError(t, syscall.Fstat(int(f.Fd()), &before))
	require.NoError(t, e.Repo.Restore(ctx, e.S, snap.ID))

	callOK(t, e, "write_file", map[string]any{"path": "other.txt", "inline_text": "created after the restore\n"})
	other := inoOf(t, filepath.Join(dir, "other.txt"))
	data, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<20))
	require.NoError(t, err)
	var after syscall.Stat_t
	require.NoError(t, syscall.Fstat(int(f.Fd()), &after))
	require.NotEqual(t, before.Ino, other, "a file created after a restore gets a new inode number")
	require.Equal(t, "created after the snapshot\n", string(data))
	require.Zero(t, after.Nlink)
	requireSameTree(t, e.S, dir)
}

// TestCoherenceCacheFill: a read-only open hands the kernel a small file's
// whole content (no READ follows); whatever changes the file next — a
// write, an append or a truncate through the mount, a tool's rewrite, a
// writer open at the same time — the next read sees the session's content,
// through a fresh open and through one made before.
func TestCoherenceCacheFill(t *testing.T) {
	e, m := mounted(t, map[string]string{"seed.txt": "seed\n"}, mount.Options{})
	path := filepath.Join(m.Dir(), "f.txt")
	session := func(t *testing.T) string {
		data, _, err := e.S.ReadFile(t.Context(), vfs.MustPath("f.txt"))
		require.NoError(t, err)
		return string(data)
	}
	early, err := os.Open(filepath.Join(m.Dir(), "seed.txt")) // keeps nothing of f.txt open
	require.NoError(t, err)
	require.NoError(t, early.Close())
	var held *os.File
	t.Cleanup(func() {
		if held != nil {
			held.Close()
		}
	})
	steps := []struct {
		name   string
		change func(t *testing.T)
		want   string
	}{
		{"create through the mount", func(t *testing.T) {
			require.NoError(t, os.WriteFile(path, []byte("written through the mount\n"), 0o644))
		}, "written through the mount\n"},
		{"tool rewrites shorter", func(t *testing.T) {
			callOK(t, e, "write_file", map[string]any{"path": "f.txt", "inline_text": "tool\n"})
		}, "tool\n"},
		{"tool rewrites longer", func(t *testing.T) {
			callOK(t, e, "write_file", map[string]any{"path": "f.txt", "inline_text": strings.Repeat("long line\n", 1000)})
		}, strings.Repeat("long line\n", 1000)},
		{"truncate by path through the mount", func(t *testing.T) {
			require.NoError(t, os.Truncate(path, 9))
		}, "long line"},
		{"append through the mount", func(t *testing.T) {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			require.NoError(t, err)
			_, err = f.WriteString(", appended\n")
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}, "long line, appended\n"},
		{"open for reading, then written through another open", func(t *testing.T) {
			held, err = os.Open(path)
			require.NoError(t, err)
			w, err := os.OpenFile(path, os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = w.WriteAt([]byte("LONG"), 0)
			require.NoError(t, err)
			require.NoError(t, w.Close())
		}, "LONG line, appended\n"},
		{"open for reading before a tool rewrite", func(t *testing.T) {
			callOK(t, e, "write_file", map[string]any{"path": "f.txt", "inline_text": "again\n"})
		}, "again\n"},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			st.change(t)
			require.Equal(t, st.want, session(t))
			for i := range 2 { // the first open fills the cache, the second reads it
				data, err := os.ReadFile(path)
				require.NoError(t, err)
				require.Equal(t, st.want, string(data), "read %d", i)
			}
			if held != nil {
				buf := make([]byte, 64<<10)
				n, err := held.ReadAt(buf, 0)
				require.ErrorIs(t, err, io.EOF)
				require.Equal(t, st.want, string(buf[:n]), "through an open made before")
			}
		})
	}
}

// TestCoherenceNegativeEntries: the kernel caches that a name is missing
// (for the cache timeout), and every way someone else creates that name
// drops that entry: a tool's write, one that creates its parents too, a
// move, a restore.
func TestCoherenceNegativeEntries(t *testing.T) {
	e, m := mounted(t, map[string]string{"src.txt": "moved\n", "gone.txt": "back again\n", "d/keep": "k\n"}, mount.Options{})
	dir := m.Dir()
	snap, err := e.Repo.Snapshot(ctx, e.S, "with gone.txt")
	require.NoError(t, err)
	callOK(t, e, "delete_file", map[string]any{"path": "gone.txt"})
	missing := []string{"later.txt", "a", "a/b/c.txt", "d/new.txt", "dst.txt", "gone.txt"}
	for range 2 { // the second stat is answered from the kernel's cache
		for _, p := range missing {
			_, err := os.Stat(filepath.Join(dir, p))
			require.ErrorIs(t, err, os.ErrNotExist, p)
		}
	}
	callOK(t, e, "write_file", map[string]any{"path": "later.txt", "inline_text": "later\n"})
	callOK(t, e, "write_file", map[string]any{"path": "a/b/c.txt", "inline_text": "with parents\n"})
	callOK(t, e, "write_file", map[string]any{"path": "d/new.txt", "inline_text": "in a known dir\n"})
	callOK(t, e, "apply_patch", map[string]any{"patch": "*** Begin Patch\n*** Update File: src.txt\n*** Move to: dst.txt\n@@\n-moved\n+moved here\n*** End Patch\n"})
	for p, want := range map[string]string{"later.txt": "later\n", "a/b/c.txt": "with parents\n",
		"d/new.txt": "in a known dir\n", "dst.txt": "moved here\n"} {
		data, err := os.ReadFile(filepath.Join(dir, p))
		require.NoError(t, err, p)
		require.Equal(t, want, string(data), p)
	}
	require.NoError(t, e.Repo.Restore(ctx, e.S, snap.ID))
	data, err := os.ReadFile(filepath.Join(dir, "gone.txt"))
	require.NoError(t, err, "a name the restore brought back")
	require.Equal(t, "back again\n", string(data))
}

// TestCoherenceListings: a directory listed again shows every change since
// — made through the mount, by a tool, by a restore — however listings are
// served (by default the kernel keeps them), and entries listed carry
// the attributes stat reports.
func TestCoherenceListings(t *testing.T) {
	for _, c := range dirOptions {
		t.Run(c.name, func(t *testing.T) {
			e, m := mounted(t, map[string]string{"d/a.txt": "a\n", "d/b.txt": "b\n", "d/sub/c.txt": "c\n"}, c.opts)
			d := filepath.Join(m.Dir(), "d")
			snap, err := e.Repo.Snapshot(ctx, e.S, "before")
			require.NoError(t, err)
			list := func() []string {
				t.Helper()
				ents, err := os.ReadDir(d)
				require.NoError(t, err)
				var names []string
				for _, de := range ents {
					info, err := de.Info()
					require.NoError(t, err)
					st, err := os.Lstat(filepath.Join(d, de.Name()))
					require.NoError(t, err)
					require.Equal(t, st.Mode(), info.Mode(), de.Name())
					require.Equal(t, st.Size(), info.Size(), de.Name())
					names = append(names, de.Name())
				}
				return names
			}
			require.Equal(t, []string{"a.txt", "b.txt", "sub"}, list())
			require.Equal(t, []string{"a.txt", "b.txt", "sub"}, list(), "listed again")

			require.NoError(t, os.WriteFile(filepath.Join(d, "m.txt"), []byte("through the mount\n"), 0o644))
			require.NoError(t, os.Remove(filepath.Join(d, "a.txt")))
			require.Equal(t, []string{"b.txt", "m.txt", "sub"}, list(), "after changes through the mount")

			callOK(t, e, "write_file", map[string]any{"path": "d/t.txt", "inline_text": "by a tool\n"})
			callOK(t, e, "delete_file", map[string]any{"path": "d/b.txt"})
			callOK(t, e, "rename", map[string]any{"from": "d/sub", "to": "d/sub2"})
			require.Equal(t, []string{"m.txt", "sub2", "t.txt"}, list(), "after a tool's changes")
			callOK(t, e, "write_file", map[string]any{"path": "d/m.txt", "inline_text": "rewritten by a tool, longer\n"})
			require.Equal(t, []string{"m.txt", "sub2", "t.txt"}, list(), "after a tool rewrote a file")

			require.NoError(t, e.Repo.Restore(ctx, e.S, snap.ID))
			require.Equal(t, []string{"a.txt", "b.txt", "sub"}, list(), "after a restore")
			requireSameTree(t, e.S, m.Dir(), "after a restore")
		})
	}
}
