package snapshot_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// stepClock returns a clock that starts at the same instant each time and
// moves one millisecond per call, so that two runs of the same operations
// produce the same nodes.
func stepClock() func() time.Time {
	t := time.Unix(1_700_000_000, 0)
	return func() time.Time { t = t.Add(time.Millisecond); return t }
}

// lazyFixture writes a repository with one snapshot of a nested tree and
// returns its directory and the snapshot's ID.
func lazyFixture(t *testing.T) (string, string) {
	dir := t.TempDir()
	r, err := snapshot.OpenLocalRepo(ctx, dir, snapshot.RepoOptions{Clock: stepClock()})
	require.NoError(t, err)
	s, err := r.NewSession(ctx, snapshot.SessionOptions{ID: "origin"})
	require.NoError(t, err)
	for g := range 3 {
		for d := range 4 {
			for f := range 5 {
				write(t, s, fmt.Sprintf("g%d/d%d/f%d.txt", g, d, f), fmt.Sprintf("content %d %d %d\n", g, d, f))
			}
		}
	}
	write(t, s, "top.txt", "top\n")
	_, err = s.Mkdir(ctx, p("empty/inner"), vfs.MkdirOptions{Parents: true})
	require.NoError(t, err)
	_, err = s.Symlink(ctx, "d0/f0.txt", p("g0/link"))
	require.NoError(t, err)
	snap, err := r.Snapshot(ctx, s, "base")
	require.NoError(t, err)
	require.NoError(t, r.Close())
	return dir, snap.ID
}

// lazyRun is what one reopening of the fixture produced.
type lazyRun struct {
	lazyBase bool
	tree     string // the fork's tree after the edits, encoded
	root     vfs.Hash
	record   snapshot.Record
	diff     []string
	reload   string // the edited snapshot loaded by a fresh repository
	files    []string
	third    vfs.Hash // the manifests of a second round of edits
}

// runLazy reopens the fixture (loading snapshots lazily, or whole when
// eager), forks the snapshot, edits it, snapshots the edit, and reports.
func runLazy(t *testing.T, dir, base string, eager bool) lazyRun {
	var out lazyRun
	r, err := snapshot.OpenLocalRepo(ctx, dir, snapshot.RepoOptions{Clock: stepClock()})
	require.NoError(t, err)
	snapshot.SetEagerLoad(r, eager)
	f, err := r.Fork(ctx, snapshot.Source{Snapshot: base}, snapshot.SessionOptions{})
	require.NoError(t, err)
	out.lazyBase = f.Tree().IsLazy()
	require.Equal(t, "content 2 3 4\n", read(t, f, "g2/d3/f4.txt"))
	write(t, f, "g1/d2/f3.txt", "edited\n")
	write(t, f, "g1/new/deep/file.txt", "new\n")
	err = f.Remove(ctx, p("g0/d1"), vfs.RemoveOptions{Recursive: true})
	require.NoError(t, err)
	err = f.Rename(ctx, p("g2/d0"), p("moved"), vfs.RenameOptions{})
	require.NoError(t, err)
	write(t, f, "moved/f9.txt", "in a moved lazy directory\n")
	err = f.Rename(ctx, p("g2/d1"), p("g1/d1-moved"), vfs.RenameOptions{})
	require.NoError(t, err)
	_, err = f.Chmod(ctx, p("g1/d3"), 0o700)
	require.NoError(t, err)
	out.tree = string(f.Tree().Encode())
	snap, err := r.Snapshot(ctx, f, "edited")
	require.NoError(t, err)
	out.root, out.record = snap.Record.Root, snap.Record
	// A second round: the reference is now a snapshot this process wrote
	// over a partly lazy tree.
	write(t, f, "g2/d2/f0.txt", "second round\n")
	require.NoError(t, f.Remove(ctx, p("moved/f9.txt"), vfs.RemoveOptions{}))
	require.NoError(t, f.Rename(ctx, p("g1/d1-moved"), p("g0/again"), vfs.RenameOptions{}))
	_, err = f.Mkdir(ctx, p("g1/d2"+"/sub"), vfs.MkdirOptions{})
	require.NoError(t, err)
	third, err := r.Snapshot(ctx, f, "third")
	require.NoError(t, err)
	out.third = third.Record.Root
	d, err := r.Diff(ctx, snapshot.Source{Snapshot: base}, snapshot.Source{Snapshot: snap.ID}, snapshot.DiffOptions{Text: true})
	require.NoError(t, err)
	for _, e := range d.Entries {
		b, err := json.Marshal(e)
		require.NoError(t, err)
		out.diff = append(out.diff, string(b))
	}
	mat := filepath.Join(t.TempDir(), "m")
	_, err = r.Materialize(ctx, snapshot.Source{Snapshot: snap.ID}, mat)
	require.NoError(t, err)
	require.NoError(t, filepath.Walk(mat, func(path string, info os.FileInfo, err error) error {
		require.NoError(t, err)
		rel, _ := filepath.Rel(mat, path)
		line := fmt.Sprintf("%s %v %d", rel, info.Mode(), info.Size())
		if info.Mode().IsRegular() {
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			line += " " + string(b)
		}
		out.files = append(out.files, line)
		return nil
	}))
	sort.Strings(out.files)
	id := snap.ID
	require.NoError(t, r.DeleteSession(f.ID()))
	require.NoError(t, r.Close())

	r, err = snapshot.OpenLocalRepo(ctx, dir, snapshot.RepoOptions{Clock: stepClock()})
	require.NoError(t, err)
	defer r.Close()
	snapshot.SetEagerLoad(r, eager)
	again, err := r.Get(ctx, id)
	require.NoError(t, err)
	require.Equal(t, !eager, again.Tree.IsLazy())
	out.reload = string(again.Tree.Encode())
	require.Equal(t, snap.Record.Files, again.Tree.Files())
	require.Equal(t, snap.Record.Bytes, again.Tree.Bytes())
	require.Equal(t, int(snap.Record.Nodes), again.Tree.Len())
	return out
}

// TestLazyLoadMatchesWholeLoad: a snapshot loaded lazily, forked, edited
// across lazy directories (deep writes, removals, moves) and snapshotted
// gives the same tree, manifests, diff and materialized files as the same
// work on the snapshot loaded whole.
func TestLazyLoadMatchesWholeLoad(t *testing.T) {
	dir, base := lazyFixture(t)
	whole := runLazy(t, dir, base, true)
	lazy := runLazy(t, dir, base, false)
	require.False(t, whole.lazyBase)
	require.True(t, lazy.lazyBase, "a reopened snapshot is loaded lazily")
	require.Equal(t, whole.tree, lazy.tree)
	require.Equal(t, whole.root, lazy.root, "the edited snapshot's manifests are the same")
	require.Equal(t, whole.third, lazy.third, "and those of the next one")
	require.Equal(t, whole.record.Files, lazy.record.Files)
	require.Equal(t, whole.record.Bytes, lazy.record.Bytes)
	require.Equal(t, whole.record.Nodes, lazy.record.Nodes)
	require.Equal(t, whole.diff, lazy.diff)
	require.Equal(t, whole.files, lazy.files)
	require.Equal(t, whole.reload, lazy.reload)
	require.Equal(t, whole.tree, lazy.reload, "the reloaded snapshot is the edited tree")
}

// TestLazyLoadCorruptManifest: a manifest that cannot be read beneath a
// lazily loaded directory fails the read that needs it, with an io_error,
// and leaves reads elsewhere working.
func TestLazyLoadCorruptManifest(t *testing.T) {
	dir, base := lazyFixture(t)
	// A second snapshot that rewrites only g1's path: the manifests of g0
	// and g2 stay in the first snapshot's record.
	r, err := snapshot.OpenLocalRepo(ctx, dir, snapshot.RepoOptions{})
	require.NoError(t, err)
	f, err := r.Fork(ctx, snapshot.Source{Snapshot: base}, snapshot.SessionOptions{ID: "second"})
	require.NoError(t, err)
	write(t, f, "g1/d0/f0.txt", "changed\n")
	second, err := r.Snapshot(ctx, f, "second")
	require.NoError(t, err)
	require.NoError(t, r.DeleteSession("second"))
	require.NoError(t, r.DeleteSession("origin"))
	_, err = r.Fork(ctx, snapshot.Source{Snapshot: second.ID}, snapshot.SessionOptions{ID: "third"})
	require.NoError(t, err)
	require.NoError(t, r.Close())
	// Corrupt the first snapshot's record, which holds g0's manifests.
	rec := filepath.Join(dir, "store", string(snapshot.Records), base[:2], base)
	b, err := os.ReadFile(rec)
	require.NoError(t, err)
	i := strings.LastIndex(string(b), "f0.txt") // inside a manifest of the pack (a first entry, its name written whole)
	require.Positive(t, i)
	require.NoError(t, os.Chmod(rec, 0o644))
	require.NoError(t, os.WriteFile(rec, []byte(string(b[:i])+"X"+string(b[i+1:])), 0o644))

	r, err = snapshot.OpenLocalRepo(ctx, dir, snapshot.RepoOptions{})
	require.NoError(t, err)
	defer r.Close()
	s, err := r.Session("third")
	require.NoError(t, err)
	require.True(t, s.Tree().IsLazy())
	require.Equal(t, "changed\n", read(t, s, "g1/d0/f0.txt"))
	_, _, err = s.ReadFile(ctx, p("g0/d1/f1.txt"))
	require.Error(t, err)
	require.ErrorIs(t, err, vfs.ErrIO)
	_, err = s.List(ctx, p("g0"))
	require.Error(t, err)
	_, err = s.WriteFile(ctx, p("g0/d1/f1.txt"), strings.NewReader("x"), vfs.WriteOptions{})
	require.Error(t, err)
	require.Error(t, s.Walk(ctx, vfs.Root, func(vfs.Path, vfs.Node) error { return nil }))
	_, err = r.GC(ctx)
	require.Error(t, err, "a collection that cannot read a tree deletes nothing")
}

// TestRemoteForkReadsOnlyNeededRecords: a fork of a pushed snapshot
// answers a read after fetching only the records holding the manifests on
// the read's path, not every record of the snapshot's history; a
// directory whose record cannot be fetched fails its read with io_error.
func TestRemoteForkReadsOnlyNeededRecords(t *testing.T) {
	remote := &flakyStore{Store: snapshot.NewMemory()}
	a, _ := newRemoteRepo(t, remote, snapshot.RemoteOptions{})
	b, _ := newRemoteRepo(t, remote, snapshot.RemoteOptions{})
	sa, err := a.NewSession(ctx, snapshot.SessionOptions{ID: "a"})
	require.NoError(t, err)
	for i := range 20 {
		write(t, sa, fmt.Sprintf("dir%d/f%d.txt", i%4, i), fmt.Sprintf("content %d", i))
	}
	first, err := a.Snapshot(ctx, sa, "first")
	require.NoError(t, err)
	write(t, sa, "dir0/f0.txt", "changed")
	second, err := a.Snapshot(ctx, sa, "second") // holds the root's and dir0's manifests only
	require.NoError(t, err)
	_, err = a.Push(ctx, first.ID)
	require.NoError(t, err)
	_, err = a.Push(ctx, second.ID)
	require.NoError(t, err)

	before := remote.opens.Load()
	sb, err := b.Fork(ctx, snapshot.Source{Snapshot: second.ID}, snapshot.SessionOptions{ID: "b"})
	require.NoError(t, err)
	require.True(t, sb.Tree().IsLazy())
	require.Equal(t, "changed", read(t, sb, "dir0/f0.txt"))
	require.Equal(t, int64(2), remote.opens.Load()-before, "the second snapshot's record and one blob; the first's record is not fetched")

	remote.down.Store(true)
	_, _, err = sb.ReadFile(ctx, p("dir1/f1.txt"))
	require.ErrorIs(t, err, vfs.ErrIO, "dir1's manifest is in the first record, which the remote cannot serve now")
	remote.down.Store(false)
	require.Equal(t, "content 1", read(t, sb, "dir1/f1.txt"), "and a later read succeeds")
}
