package snapshot

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/vfs"
)

// formatFixture is the tree of the stores kept in testdata/store-format*:
// owners, modes with special bits, nanosecond times, a symlink, a device,
// extended attributes, nested directories and a directory of files written
// moments apart. Its blobs are stored in store.
func formatFixture(t *testing.T, store Store) vfs.Tree {
	put := func(s string) vfs.Hash {
		h, _, err := store.Put(tctx(t), Blobs, strings.NewReader(s), PutOptions{})
		require.NoError(t, err)
		return h
	}
	xa, err := vfs.XattrsOf(map[string][]byte{"user.origin": []byte("fixture"), "user.empty": nil})
	require.NoError(t, err)
	at := int64(1_780_000_000_000_000_000)
	tb := vfs.NewTreeBuilder(vfs.Node{Kind: vfs.KindDir, Ino: 1, Mode: 0o755 | fs.ModeSetgid, Version: 1, Uid: 1000, Gid: 1000,
		Btime: at, Mtime: at + 9, Ctime: at + 9, Atime: at + 9})
	ino := uint64(1)
	node := func(k vfs.Kind, mode fs.FileMode) vfs.Node {
		ino++
		t := at + int64(ino)*41_337
		return vfs.Node{Kind: k, Ino: ino, Mode: mode, Version: 1, Uid: 1000, Gid: 1000, Btime: t, Mtime: t, Ctime: t, Atime: t}
	}
	for _, d := range []string{"src", "src/lib", "node_modules", "node_modules/pkg"} {
		tb.Set(vfs.Path(d), node(vfs.KindDir, 0o755))
	}
	file := func(p, content string, mode fs.FileMode) {
		n := node(vfs.KindFile, mode)
		n.Nlink, n.Size, n.Blob = 1, int64(len(content)), put(content)
		n.Encoding = vfs.EncodingUTF8
		tb.Set(vfs.Path(p), n)
	}
	file("README.md", "# fixture\n", 0o644)
	file("src/main.go", "package main\n", 0o644)
	file("src/lib/run.sh", "#!/bin/sh\necho run\n", 0o755|fs.ModeSetuid)
	for i := range 12 {
		file(fmt.Sprintf("node_modules/pkg/file%02d.js", i), fmt.Sprintf("module.exports = %d;\n", i), 0o644)
	}
	ln := node(vfs.KindSymlink, 0o777)
	ln.Nlink, ln.Target, ln.Uid, ln.Gid = 1, "src/main.go", 0, 0
	tb.Set("main", ln)
	dev := node(vfs.KindCharDev, 0o666)
	dev.Nlink, dev.Rdev, dev.Uid, dev.Gid = 1, 0x103, 0, 0
	tb.Set("null", dev)
	x := node(vfs.KindFile, 0o600)
	x.Nlink, x.Size, x.Blob, x.Xattrs, x.Uid, x.Gid = 1, 3, put("xa\n"), xa, vfs.NoOwner, vfs.NoOwner
	x.Atime = at - 5
	tb.Set("with-xattrs", x)
	return tb.Tree()
}

// TestWriteFormatFixture writes a store holding formatFixture's snapshot
// to $VFSD_WRITE_FORMAT_FIXTURE, to be kept in testdata when the manifest
// format changes (run by hand, with the code of the format to keep).
func TestWriteFormatFixture(t *testing.T) {
	dir := os.Getenv("VFSD_WRITE_FORMAT_FIXTURE")
	if dir == "" {
		t.Skip("set VFSD_WRITE_FORMAT_FIXTURE=DIR to write a store of this format into DIR")
	}
	store, r := openFixtureRepo(t, dir)
	defer store.Close()
	defer r.Close()
	snap, err := r.CommitTree(tctx(t), formatFixture(t, store), "format fixture")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "SNAPSHOT"), []byte(snap.ID+"\n"), 0o644))
}

// nodesOf lists a tree's nodes by path, directories without their
// manifests' hashes.
func nodesOf(t *testing.T, tr vfs.Tree) map[vfs.Path]vfs.Node {
	out := map[vfs.Path]vfs.Node{}
	require.NoError(t, tr.Walk(vfs.Root, func(p vfs.Path, n vfs.Node) error {
		if n.IsDir() {
			n.Blob = vfs.Hash{}
		}
		out[p] = n
		return nil
	}))
	return out
}

// TestReadOlderFormats: stores written with earlier manifest formats are
// read node for node as written; a snapshot after a change writes the
// current format for the directories it changes, keeps the other
// manifests, and both read back.
func TestReadOlderFormats(t *testing.T) {
	for _, format := range []string{"format2"} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "store-"+format))))
			id, err := os.ReadFile(filepath.Join(dir, "SNAPSHOT"))
			require.NoError(t, err)
			r, err := OpenLocalRepo(tctx(t), dir, RepoOptions{})
			require.NoError(t, err)
			snap, err := r.Get(tctx(t), strings.TrimSpace(string(id)))
			require.NoError(t, err)
			want := nodesOf(t, formatFixture(t, NewMemory()))
			require.Equal(t, want, nodesOf(t, snap.Tree), "the old store reads node for node")

			s, err := r.Fork(tctx(t), Source{Snapshot: snap.ID}, SessionOptions{ID: "upgrade"})
			require.NoError(t, err)
			_, err = s.WriteFile(tctx(t), "node_modules/pkg/file03.js", strings.NewReader("changed\n"), vfs.WriteOptions{})
			require.NoError(t, err)
			next, err := r.Snapshot(tctx(t), s, "after a change")
			require.NoError(t, err)
			got := nodesOf(t, next.Tree)
			require.Len(t, got, len(want))
			require.Equal(t, want["src/lib/run.sh"], got["src/lib/run.sh"])
			// (A session gives nodes without a recorded owner its own: compare the rest.)
			wx, gx := want["with-xattrs"], got["with-xattrs"]
			require.Equal(t, wx.Xattrs, gx.Xattrs)
			require.Equal(t, []int64{wx.Btime, wx.Mtime, wx.Ctime, wx.Atime}, []int64{gx.Btime, gx.Mtime, gx.Ctime, gx.Atime})
			require.Equal(t, want["null"], got["null"])
			require.Equal(t, want["main"], got["main"])
			changed := got["node_modules/pkg/file03.js"]
			require.Equal(t, int64(len("changed\n")), changed.Size)
			d, err := r.Diff(tctx(t), Source{Snapshot: snap.ID}, Source{Snapshot: next.ID}, DiffOptions{})
			require.NoError(t, err)
			require.Len(t, d.Entries, 1, "old and new manifests diff to the one change: %+v", d.Entries)
			require.Equal(t, 1, d.Modified)

			// Opened again, the new snapshot reads from its manifests: the
			// changed directories in the current format, the others as
			// they were.
			require.NoError(t, r.Close())
			r2, err := OpenLocalRepo(tctx(t), dir, RepoOptions{})
			require.NoError(t, err)
			defer r2.Close()
			again, err := r2.Get(tctx(t), next.ID)
			require.NoError(t, err)
			expect := maps.Clone(want)
			expect["node_modules/pkg/file03.js"] = changed
			require.Equal(t, expect, nodesOf(t, again.Tree), "read back node for node (owners as recorded)")
			rec, err := os.ReadFile(filepath.Join(dir, "store", string(Records), next.ID[:2], next.ID))
			require.NoError(t, err)
			require.Contains(t, string(rec), manifestFormat, "the changed directories are written in the current format")
		})
	}
}
