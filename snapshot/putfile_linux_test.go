package snapshot_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// inode returns path's inode number.
func inode(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(path, &st))
	return st.Ino
}

// TestPutFile stores files by PutFile: a frozen file on the store's
// filesystem becomes the object itself (same inode, now read-only), one
// that may still change is cloned or copied (another inode), one on
// another filesystem is copied, and content stored already is a dedup.
// Every object hashes to its name and the temporary directory is left
// empty.
func TestPutFile(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		frozen   bool
		otherFS  bool // the file is on /dev/shm (tmpfs), the store is not
		stored   bool // the content is stored already
		wantHow  []string
		sameNode bool
	}{
		{name: "frozen links", frozen: true, wantHow: []string{"link"}, sameNode: true},
		{name: "not frozen clones or copies", wantHow: []string{"clone", "copy"}},
		{name: "frozen on another filesystem copies", frozen: true, otherFS: true, wantHow: []string{"copy"}},
		{name: "frozen, stored already", frozen: true, stored: true, wantHow: []string{"dedup"}},
		{name: "not frozen, stored already", stored: true, wantHow: []string{"dedup", "copy"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			store, err := snapshot.OpenLocal(filepath.Join(root, "store"))
			require.NoError(t, err)
			defer store.Close()
			dir := root
			if tc.otherFS {
				if _, err := os.Stat("/dev/shm"); err != nil {
					t.Skip("no /dev/shm here for a file on another filesystem")
				}
				dir = t.TempDir()
				shm, err := os.MkdirTemp("/dev/shm", "vfsd-putfile-")
				require.NoError(t, err)
				t.Cleanup(func() { os.RemoveAll(shm) })
				dir = shm
			}
			content := []byte(strings.Repeat("content of a file written through a handle\n", 500))
			path := filepath.Join(dir, "upper")
			require.NoError(t, os.WriteFile(path, content, 0o600))
			if tc.stored {
				_, _, err := store.Put(ctx, snapshot.Blobs, bytes.NewReader(content), snapshot.PutOptions{})
				require.NoError(t, err)
			}
			f, err := os.Open(path)
			require.NoError(t, err)
			defer f.Close()
			var seen bytes.Buffer
			res, err := store.PutFile(ctx, snapshot.Blobs, f, snapshot.PutFileOptions{Frozen: tc.frozen, Observe: &seen})
			require.NoError(t, err)
			require.Contains(t, tc.wantHow, res.How)
			require.Equal(t, vfs.HashOf(content), res.Hash)
			require.Equal(t, int64(len(content)), res.Size)
			require.Equal(t, content, seen.Bytes(), "the observer sees the content once, in order")
			obj := store.ObjectPath(snapshot.Blobs, res.Hash)
			require.Equal(t, tc.sameNode, inode(t, obj) == inode(t, path), "the object is the file itself")
			fi, err := os.Stat(obj)
			require.NoError(t, err)
			require.Equal(t, os.FileMode(0o444), fi.Mode().Perm())
			require.NoError(t, store.Verify(ctx, snapshot.Blobs, res.Hash))
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, content, got, "the file keeps its content")
			requireTmpEmpty(t, filepath.Join(root, "store"))
		})
	}
}

// TestPutFileRefusesAFileChangedWhileHashed changes the file while PutFile
// hashes it (from its observer): nothing is published, the error says so.
func TestPutFileRefusesAFileChangedWhileHashed(t *testing.T) {
	ctx := context.Background()
	for _, frozen := range []bool{true, false} {
		root := t.TempDir()
		store, err := snapshot.OpenLocal(filepath.Join(root, "store"))
		require.NoError(t, err)
		path := filepath.Join(root, "upper")
		require.NoError(t, os.WriteFile(path, bytes.Repeat([]byte("a"), 1<<20), 0o600))
		f, err := os.Open(path)
		require.NoError(t, err)
		w, err := os.OpenFile(path, os.O_WRONLY, 0)
		require.NoError(t, err)
		writer := writerFunc(func(p []byte) (int, error) {
			_, err := w.WriteAt([]byte("changed"), 0)
			return len(p), err
		})
		res, err := store.PutFile(ctx, snapshot.Blobs, f, snapshot.PutFileOptions{Frozen: frozen, Observe: writer})
		if res.How == "copy" {
			// A copy reads the content once, into the object it hashes: what
			// it stored matches its name whatever the file holds now.
			require.NoError(t, err)
			require.NoError(t, store.Verify(ctx, snapshot.Blobs, res.Hash))
		} else {
			require.ErrorContains(t, err, "changed")
			n := 0
			require.NoError(t, store.List(ctx, snapshot.Blobs, func(vfs.Hash, int64) error { n++; return nil }))
			require.Zero(t, n, "nothing is published")
		}
		requireTmpEmpty(t, filepath.Join(root, "store"))
		f.Close()
		w.Close()
		store.Close()
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// requireTmpEmpty checks that the store's tmp/ holds no file.
func requireTmpEmpty(t *testing.T, store string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(filepath.Join(store, "tmp"), func(p string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		require.True(t, d.IsDir(), "left in tmp/: %s", p)
		return nil
	}))
}

// TestSnapshotSealsByLink snapshots files written through handles: each
// upper file becomes its blob (same inode) rather than being copied, its
// encoding is sniffed in the same pass, the upper files' names go, and a
// handle open across the snapshot writes a new copy, never the blob.
func TestSnapshotSealsByLink(t *testing.T) {
	ctx := context.Background()
	r, err := snapshot.OpenLocalRepo(ctx, t.TempDir(), snapshot.RepoOptions{})
	require.NoError(t, err)
	defer r.Close()
	s, err := r.NewSession(ctx, snapshot.SessionOptions{})
	require.NoError(t, err)
	files := map[string]string{"text": "hello, handles\n", "binary": "a\x00b", "big": strings.Repeat("x", 3<<20)}
	uppers := map[string]uint64{}
	var open *vfs.Handle
	for name, content := range files {
		h, err := s.OpenFile(ctx, vfs.MustPath(name), os.O_RDWR|os.O_CREATE, 0o644)
		require.NoError(t, err)
		_, err = h.WriteAt([]byte(content), 0)
		require.NoError(t, err)
		require.NoError(t, h.Flush())
		n, err := s.Stat(ctx, vfs.MustPath(name))
		require.NoError(t, err)
		upper, ok := s.LocalPath(n)
		require.True(t, ok)
		uppers[name] = inode(t, upper)
		if name == "text" {
			open = h
		} else {
			require.NoError(t, h.Close())
		}
	}
	snap, err := r.Snapshot(ctx, s, "sealed")
	require.NoError(t, err)
	for name, content := range files {
		n, _, err := snap.Tree.Lookup(vfs.MustPath(name))
		require.NoError(t, err)
		require.Equal(t, vfs.HashOf([]byte(content)), n.Blob)
		require.Equal(t, map[bool]vfs.Encoding{true: vfs.EncodingBinary, false: vfs.EncodingUTF8}[name == "binary"], n.Encoding, name)
		path, ok := r.Blobs().(vfs.LocalBlobStore).BlobPath(n.Blob)
		require.True(t, ok)
		require.Equal(t, uppers[name], inode(t, path), "%s: the upper file became the blob", name)
	}
	// The handle open across the snapshot writes a new upper file.
	_, err = open.WriteAt([]byte("HELLO"), 0)
	require.NoError(t, err)
	require.NoError(t, open.Close())
	b, _, err := s.ReadFile(ctx, vfs.MustPath("text"))
	require.NoError(t, err)
	require.Equal(t, "HELLO, handles\n", string(b))
	require.NoError(t, r.Store().(*snapshot.LocalStore).Verify(ctx, snapshot.Blobs, vfs.HashOf([]byte(files["text"]))))
}
