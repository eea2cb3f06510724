package snapshot_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/vfstest"
)

var ctx = context.Background()

func p(s string) vfs.Path { return vfs.MustPath(s) }

// newRepo opens a repository over a local store in a temporary directory.
func newRepo(t testing.TB) (*snapshot.Repo, *snapshot.LocalStore, string) {
	t.Helper()
	dir := t.TempDir()
	store, err := snapshot.OpenLocal(filepath.Join(dir, "store"))
	require.NoError(t, err)
	r, err := snapshot.OpenRepo(ctx, store, filepath.Join(dir, "sessions"), snapshot.RepoOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { r.Close(); store.Close() })
	return r, store, dir
}

func write(t testing.TB, s *vfs.Session, path, content string) {
	t.Helper()
	_, err := s.WriteFile(ctx, p(path), strings.NewReader(content), vfs.WriteOptions{CreateParents: true})
	require.NoError(t, err)
}

func read(t testing.TB, s *vfs.Session, path string) string {
	t.Helper()
	b, _, err := s.ReadFile(ctx, p(path))
	require.NoError(t, err)
	return string(b)
}

func handleWrite(t testing.TB, s *vfs.Session, path string, off int64, data string) {
	t.Helper()
	h, err := s.OpenFile(ctx, p(path), os.O_RDWR|os.O_CREATE, 0)
	require.NoError(t, err)
	_, err = h.WriteAt([]byte(data), off)
	require.NoError(t, err)
	require.NoError(t, h.Close())
}

func TestSnapshotRestoreForkIsolation(t *testing.T) {
	r, _, _ := newRepo(t)
	s, err := r.NewSession(ctx, snapshot.SessionOptions{ID: "origin"})
	require.NoError(t, err)
	write(t, s, "src/main.go", "package main\n")
	write(t, s, "README", "v1")
	handleWrite(t, s, "data.bin", 0, "through a handle")

	snap, err := r.Snapshot(ctx, s, "first")
	require.NoError(t, err)
	require.Equal(t, int64(3), snap.Record.Files)
	require.Equal(t, "first", snap.Record.Label)
	require.Equal(t, "origin", snap.Record.Session)
	require.Equal(t, snap.ID, s.Info().Ref)
	sealed, err := s.Stat(ctx, p("data.bin"))
	require.NoError(t, err)
	require.Zero(t, sealed.Upper, "the snapshot sealed the handle-written file into a blob")
	require.False(t, sealed.Blob.IsZero())
	require.Eventually(t, func() bool {
		upper, err := os.ReadDir(filepath.Join(s.Dir(), "upper"))
		return err == nil && len(upper) == 0
	}, 10*time.Second, 10*time.Millisecond, "and removed its upper file (in the background)")
	require.Equal(t, "through a handle", read(t, s, "data.bin"))

	write(t, s, "README", "v2")
	fork, err := r.Fork(ctx, snapshot.Source{Snapshot: snap.ID}, snapshot.SessionOptions{ID: "fork"})
	require.NoError(t, err)
	require.Equal(t, "v1", read(t, fork, "README"))
	write(t, fork, "README", "fork")
	handleWrite(t, fork, "src/main.go", 0, "PACKAGE")
	require.Equal(t, "v2", read(t, s, "README"), "a write in the fork never shows in the origin")
	require.Equal(t, "package main\n", read(t, s, "src/main.go"))
	again, err := r.Get(ctx, snap.ID)
	require.NoError(t, err)
	n, _, _ := again.Tree.Lookup(p("README"))
	require.Equal(t, vfs.HashOf([]byte("v1")), n.Blob, "nor in the snapshot")

	require.NoError(t, r.Restore(ctx, s, snap.ID))
	require.Equal(t, "v1", read(t, s, "README"))
	write(t, s, "README", "after restore")
	require.Equal(t, "fork", read(t, fork, "README"), "nor does the reverse")

	live, err := r.Fork(ctx, snapshot.Source{Session: s}, snapshot.SessionOptions{})
	require.NoError(t, err)
	require.Equal(t, "after restore", read(t, live, "README"), "a fork of a live session sees its current state")
}

func TestSnapshotIsIncremental(t *testing.T) {
	r, store, _ := newRepo(t)
	s, err := r.NewSession(ctx, snapshot.SessionOptions{})
	require.NoError(t, err)
	for d := range 20 {
		for f := range 20 {
			write(t, s, fmt.Sprintf("d%02d/sub/f%02d.txt", d, f), fmt.Sprintf("%d-%d", d, f))
		}
	}
	_, err = r.Snapshot(ctx, s, "full")
	require.NoError(t, err)
	count := func() int {
		n := 0
		require.NoError(t, store.List(ctx, snapshot.Blobs, func(vfs.Hash, int64) error { n++; return nil }))
		return n
	}
	before := count()
	write(t, s, "d07/sub/f03.txt", "changed")
	snap, err := r.Snapshot(ctx, s, "one change")
	require.NoError(t, err)
	// One new content blob, and in the record one new manifest per
	// directory on the path: d07/sub, d07 and the root.
	require.Equal(t, before+1, count())
	require.Equal(t, 3, snap.ManifestCount())
	require.Zero(t, s.Info().Dirty)

	// An unchanged session snapshots to the same root, storing no manifest.
	snap2, err := r.Snapshot(ctx, s, "no change")
	require.NoError(t, err)
	require.Equal(t, snap.Record.Root, snap2.Record.Root)
	require.Zero(t, snap2.ManifestCount())
	require.Equal(t, before+1, count())
}

func TestSnapshotReloadsByteForByte(t *testing.T) {
	dir := t.TempDir()
	store, err := snapshot.OpenLocal(filepath.Join(dir, "store"))
	require.NoError(t, err)
	r, err := snapshot.OpenRepo(ctx, store, filepath.Join(dir, "sessions"), snapshot.RepoOptions{})
	require.NoError(t, err)
	s, err := r.NewSession(ctx, snapshot.SessionOptions{ID: "s1"})
	require.NoError(t, err)
	write(t, s, "a/b/c", "c")
	_, err = s.Symlink(ctx, "../x", p("a/ln"))
	require.NoError(t, err)
	_, err = s.Chmod(ctx, p("a/b"), 0o700)
	require.NoError(t, err)
	handleWrite(t, s, "a/big", 1<<20, "tail")
	snap, err := r.Snapshot(ctx, s, "")
	require.NoError(t, err)
	write(t, s, "after", "snapshot")
	live := s.Tree().Encode()
	require.NoError(t, r.Close())
	require.NoError(t, store.Close())

	store, err = snapshot.OpenLocal(filepath.Join(dir, "store"))
	require.NoError(t, err)
	defer store.Close()
	r, err = snapshot.OpenRepo(ctx, store, filepath.Join(dir, "sessions"), snapshot.RepoOptions{})
	require.NoError(t, err)
	defer r.Close()
	loaded, err := r.Get(ctx, snap.ID)
	require.NoError(t, err)
	require.Equal(t, snap.Tree.Encode(), loaded.Tree.Encode(), "a snapshot loads back byte for byte")
	s, err = r.Session("s1")
	require.NoError(t, err, "sessions are recovered when the repo opens")
	require.Equal(t, live, s.Tree().Encode(), "and their journals replay over their snapshots")
	require.Equal(t, "tail", read(t, s, "a/big")[1<<20:])
}

func TestDiffByContent(t *testing.T) {
	r, _, _ := newRepo(t)
	s, err := r.NewSession(ctx, snapshot.SessionOptions{})
	require.NoError(t, err)
	write(t, s, "keep.txt", "same\n")
	write(t, s, "edit.txt", "one\ntwo\n")
	write(t, s, "gone/x.txt", "x\n")
	write(t, s, "bin", "\x00\x01")
	a, err := r.Snapshot(ctx, s, "a")
	require.NoError(t, err)

	write(t, s, "keep.txt", "same\n") // rewritten with the same bytes: no change
	write(t, s, "edit.txt", "one\n2\n")
	require.NoError(t, s.Remove(ctx, p("gone"), vfs.RemoveOptions{Recursive: true}))
	write(t, s, "new/y.txt", "y\n")
	write(t, s, "bin", "\x00\x02")

	d, err := r.Diff(ctx, snapshot.Source{Snapshot: a.ID}, snapshot.Source{Session: s}, snapshot.DiffOptions{Text: true})
	require.NoError(t, err)
	var got []string
	for _, e := range d.Entries {
		got = append(got, fmt.Sprintf("%s %s %s", e.Change, e.Kind, string(e.Path)))
	}
	require.Equal(t, []string{
		"modified file bin",
		"modified file edit.txt",
		"deleted dir gone",
		"deleted file gone/x.txt",
		"added dir new",
		"added file new/y.txt",
	}, got)
	require.Equal(t, 2, d.Added)
	require.Equal(t, 2, d.Modified)
	require.Equal(t, 2, d.Deleted)
	require.True(t, d.Entries[0].Binary)
	require.Equal(t, "--- a/edit.txt\n+++ b/edit.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n", d.Entries[1].Text)
	require.Contains(t, d.Entries[3].Text, "+++ /dev/null")

	same, err := r.Diff(ctx, snapshot.Source{Snapshot: a.ID}, snapshot.Source{Snapshot: a.ID}, snapshot.DiffOptions{})
	require.NoError(t, err)
	require.Empty(t, same.Entries)
}

// hostPerm is the permission Stat reports for a file given perm: perm
// itself, but on Windows, whose files have only a read-only attribute,
// 0o666 or 0o444.
func hostPerm(perm os.FileMode) os.FileMode {
	if runtime.GOOS != "windows" {
		return perm
	}
	if perm&0o200 != 0 {
		return 0o666
	}
	return 0o444
}

func TestMaterialize(t *testing.T) {
	r, _, dir := newRepo(t)
	s, err := r.NewSession(ctx, snapshot.SessionOptions{})
	require.NoError(t, err)
	write(t, s, "a/b.txt", "bee")
	_, err = s.Chmod(ctx, p("a/b.txt"), 0o600)
	require.NoError(t, err)
	_, err = s.Symlink(ctx, "b.txt", p("a/link"))
	require.NoError(t, err)
	noLinks := vfstest.HostSymlinks(t) // the link is then skipped, with a reason
	mt := time.Date(2021, 3, 4, 5, 6, 7, 0, time.UTC)
	_, err = s.SetTimes(ctx, p("a/b.txt"), mt)
	require.NoError(t, err)
	handleWrite(t, s, "upper.txt", 0, "from a handle")
	_, err = s.Mkdir(ctx, p("ro"), vfs.MkdirOptions{Perm: 0o555})
	require.NoError(t, err)

	out := filepath.Join(dir, "out")
	rep, err := r.Materialize(ctx, snapshot.Source{Session: s}, out)
	require.NoError(t, err)
	if noLinks != "" {
		t.Logf("the symlink is not materialized: %s", noLinks)
		require.Len(t, rep.Skipped, 1)
		require.Equal(t, "a/link", rep.Skipped[0].Path)
		require.Contains(t, rep.Skipped[0].Reason, "a symlink: ")
		rep.Skipped = nil
		require.Equal(t, snapshot.MaterializeReport{Files: 2, Dirs: 3, Bytes: 16}, rep)
	} else {
		require.Equal(t, snapshot.MaterializeReport{Files: 2, Dirs: 3, Symlinks: 1, Bytes: 16}, rep)
		b, err := os.ReadFile(filepath.Join(out, "a/link"))
		require.NoError(t, err)
		require.Equal(t, "bee", string(b))
	}
	fi, err := os.Stat(filepath.Join(out, "a/b.txt"))
	require.NoError(t, err)
	require.Equal(t, hostPerm(0o600), fi.Mode().Perm())
	require.True(t, fi.ModTime().Equal(mt))
	fi, err = os.Stat(filepath.Join(out, "ro"))
	require.NoError(t, err)
	if runtime.GOOS != "windows" { // a directory's read-only attribute means nothing there (Wine drops it)
		require.Equal(t, os.FileMode(0o555), fi.Mode().Perm())
	}
	b, err := os.ReadFile(filepath.Join(out, "upper.txt"))
	require.NoError(t, err)
	require.Equal(t, "from a handle", string(b))

	_, err = r.Materialize(ctx, snapshot.Source{Session: s}, out)
	require.ErrorIs(t, err, vfs.ErrExists, "never writes into a non-empty directory")
}

func TestGCKeepsReferencedBlobs(t *testing.T) {
	r, store, _ := newRepo(t)
	s, err := r.NewSession(ctx, snapshot.SessionOptions{})
	require.NoError(t, err)
	write(t, s, "snap.txt", "in the snapshot")
	snap, err := r.Snapshot(ctx, s, "")
	require.NoError(t, err)
	require.NoError(t, s.Remove(ctx, p("snap.txt"), vfs.RemoveOptions{}))
	write(t, s, "live.txt", "live")
	write(t, s, "garbage.txt", "overwritten soon")
	write(t, s, "garbage.txt", "final")

	rep, err := r.GC(ctx)
	require.NoError(t, err)
	require.Equal(t, 0, rep.Deleted, "the overwritten content is in the session's history (a rewind brings it back)")
	_, err = store.Stat(ctx, snapshot.Blobs, vfs.HashOf([]byte("overwritten soon")))
	require.NoError(t, err)
	require.NoError(t, r.Restore(ctx, s, snap.ID))
	require.Equal(t, "in the snapshot", read(t, s, "snap.txt"))

	// Once the session is gone, so is its history.
	require.NoError(t, r.DeleteSession(s.ID()))
	rep, err = r.GC(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, rep.Deleted, "overwritten soon, final and live: only the snapshot's content stays")
	_, err = store.Stat(ctx, snapshot.Blobs, vfs.HashOf([]byte("overwritten soon")))
	require.ErrorIs(t, err, vfs.ErrNotFound)
	_, err = store.Stat(ctx, snapshot.Blobs, vfs.HashOf([]byte("in the snapshot")))
	require.NoError(t, err)
}

// TestGCWithConcurrentWriters runs collections while writers store new
// content, and checks that every file every writer wrote stays readable.
func TestGCWithConcurrentWriters(t *testing.T) {
	r, _, _ := newRepo(t)
	const writers, files = 4, 40
	var wg sync.WaitGroup
	stop := make(chan struct{})
	sessions := make([]*vfs.Session, writers)
	for i := range sessions {
		var err error
		sessions[i], err = r.NewSession(ctx, snapshot.SessionOptions{})
		require.NoError(t, err)
	}
	gcErr := make(chan error, 1)
	go func() {
		defer close(gcErr)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := r.GC(ctx); err != nil {
				gcErr <- err
				return
			}
		}
	}()
	for w, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range files {
				path := fmt.Sprintf("f%d", f%7)
				content := fmt.Sprintf("writer %d file %d", w, f)
				if _, err := s.WriteFile(ctx, p(path), strings.NewReader(content), vfs.WriteOptions{}); err != nil {
					t.Error(err)
					return
				}
				if f%10 == 0 {
					if _, err := r.Snapshot(ctx, s, ""); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	require.NoError(t, <-gcErr)
	_, err := r.GC(ctx)
	require.NoError(t, err)
	for w, s := range sessions {
		for f := files - 7; f < files; f++ {
			require.Equal(t, fmt.Sprintf("writer %d file %d", w, f), read(t, s, fmt.Sprintf("f%d", f%7)))
		}
	}
	snaps, err := r.List(ctx)
	require.NoError(t, err)
	for _, snap := range snaps {
		out := filepath.Join(t.TempDir(), "m")
		_, err := r.Materialize(ctx, snapshot.Source{Snapshot: snap.ID}, out)
		require.NoError(t, err, "every snapshot's blobs survived")
	}
}

func TestSessionsAndErrors(t *testing.T) {
	r, _, _ := newRepo(t)
	_, err := r.NewSession(ctx, snapshot.SessionOptions{ID: "../evil"})
	require.ErrorIs(t, err, vfs.ErrInvalid)
	_, err = r.NewSession(ctx, snapshot.SessionOptions{ID: "dup"})
	require.NoError(t, err)
	_, err = r.NewSession(ctx, snapshot.SessionOptions{ID: "dup"})
	require.ErrorIs(t, err, vfs.ErrExists)
	_, err = r.NewSession(ctx, snapshot.SessionOptions{Base: strings.Repeat("ab", 32)})
	require.ErrorIs(t, err, vfs.ErrNotFound)
	_, err = r.Get(ctx, "nothex")
	require.ErrorIs(t, err, vfs.ErrInvalid)
	_, err = r.Session("nope")
	require.ErrorIs(t, err, vfs.ErrNotFound)
	require.NoError(t, r.DeleteSession("dup"))
	_, err = r.Session("dup")
	require.ErrorIs(t, err, vfs.ErrNotFound)
	_, err = r.Fork(ctx, snapshot.Source{}, snapshot.SessionOptions{})
	require.ErrorIs(t, err, vfs.ErrInvalid)

	s, err := r.NewSession(ctx, snapshot.SessionOptions{})
	require.NoError(t, err)
	snap, err := r.Snapshot(ctx, s, "")
	require.NoError(t, err)
	id, err := r.Resolve(ctx, snap.ID[:8])
	require.NoError(t, err)
	require.Equal(t, snap.ID, id)
	_, err = r.Resolve(ctx, "ab")
	require.ErrorIs(t, err, vfs.ErrInvalid)
}

// TestOpenLocalRepo: a repository kept whole in one directory reopens with
// its sessions, and closing it releases its store.
func TestOpenLocalRepo(t *testing.T) {
	dir := t.TempDir()
	r, err := snapshot.OpenLocalRepo(ctx, dir, snapshot.RepoOptions{})
	require.NoError(t, err)
	s, err := r.NewSession(ctx, snapshot.SessionOptions{ID: "kept"})
	require.NoError(t, err)
	write(t, s, "a.txt", "kept\n")
	_, err = snapshot.OpenLocalRepo(ctx, dir, snapshot.RepoOptions{})
	require.Error(t, err, "the store is in use")
	require.NoError(t, r.Close())

	r, err = snapshot.OpenLocalRepo(ctx, dir, snapshot.RepoOptions{})
	require.NoError(t, err, "Close released the store")
	defer r.Close()
	s, err = r.Session("kept")
	require.NoError(t, err)
	require.Equal(t, "kept\n", read(t, s, "a.txt"))
}

// TestSnapshotSealProgress: a snapshot reports sealing the files written
// through handles since the last one, from none to all.
func TestSnapshotSealProgress(t *testing.T) {
	r, _, _ := newRepo(t)
	s, err := r.NewSession(ctx, snapshot.SessionOptions{})
	require.NoError(t, err)
	for i := range 5 {
		handleWrite(t, s, fmt.Sprintf("f%d.bin", i), 0, strings.Repeat("x", 1000*(i+1)))
	}
	var got []vfs.SealProgress
	var mu sync.Mutex
	pctx := vfs.WithSealProgress(ctx, func(p vfs.SealProgress) {
		mu.Lock()
		got = append(got, p)
		mu.Unlock()
	})
	_, err = r.Snapshot(pctx, s, "")
	require.NoError(t, err)
	require.Len(t, got, 6, "once before the first file, then once per file")
	require.Equal(t, vfs.SealProgress{FilesTotal: 5, BytesTotal: 15000}, got[0])
	require.Equal(t, vfs.SealProgress{Files: 5, FilesTotal: 5, Bytes: 15000, BytesTotal: 15000}, got[5])

	got = nil
	_, err = r.Snapshot(pctx, s, "")
	require.NoError(t, err)
	require.Empty(t, got, "nothing written since: nothing to seal, no progress")
}
