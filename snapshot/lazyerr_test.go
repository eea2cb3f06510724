package snapshot_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/snapshot/snapshottest"
	"github.com/vfsd/vfsd/vfs"
)

// TestDiffUnreadableLazyDirectory: a diff that needs a lazily loaded
// directory whose manifest cannot be read fails with io_error, never
// lists it as added, deleted or unchanged.
func TestDiffUnreadableLazyDirectory(t *testing.T) {
	b := snapshottest.NewBroken(t)
	empty, err := b.Repo.NewSession(ctx, snapshot.SessionOptions{ID: "empty"})
	require.NoError(t, err)
	broken, err := b.Repo.Get(ctx, b.Snapshot)
	require.NoError(t, err)
	scoped := func(paths ...string) []vfs.Change {
		var out []vfs.Change
		for _, p := range paths {
			out = append(out, vfs.Change{Path: vfs.MustPath(p)})
		}
		return out
	}
	cases := []struct {
		name string
		diff func() (*snapshot.Diff, error)
	}{
		{"snapshot to empty", func() (*snapshot.Diff, error) {
			return b.Repo.Diff(ctx, snapshot.Source{Snapshot: b.Snapshot}, snapshot.Source{Session: empty}, snapshot.DiffOptions{})
		}},
		{"empty to session", func() (*snapshot.Diff, error) {
			return b.Repo.Diff(ctx, snapshot.Source{Session: empty}, snapshot.Source{Session: b.S}, snapshot.DiffOptions{})
		}},
		{"trees, scoped beneath the directory", func() (*snapshot.Diff, error) {
			return b.Repo.DiffTrees(ctx, broken.Tree, empty.Tree(), scoped("bad/g.txt"), snapshot.DiffOptions{})
		}},
		{"trees, the other way", func() (*snapshot.Diff, error) {
			return b.Repo.DiffTrees(ctx, empty.Tree(), b.S.Tree(), scoped("bad/sub/f.txt"), snapshot.DiffOptions{})
		}},
		{"trees, both holding the directory", func() (*snapshot.Diff, error) {
			return b.Repo.DiffTrees(ctx, broken.Tree, b.S.Tree(), scoped("bad/g.txt", "bad/sub"), snapshot.DiffOptions{})
		}},
		{"trees, a name the directory lacks", func() (*snapshot.Diff, error) {
			return b.Repo.DiffTrees(ctx, broken.Tree, empty.Tree(), scoped("bad/none.txt"), snapshot.DiffOptions{})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := c.diff()
			require.ErrorIs(t, err, vfs.ErrIO, "%+v", d)
			require.ErrorContains(t, err, "reading a directory of the snapshot failed")
		})
	}
}

// TestSessionUnreadableLazyDirectory: the session's own reads and writes
// beneath an unreadable lazily loaded directory fail with io_error.
func TestSessionUnreadableLazyDirectory(t *testing.T) {
	b := snapshottest.NewBroken(t)
	s := b.S
	cases := []struct {
		name string
		op   func() error
	}{
		{"open to read", func() error { _, err := s.OpenFile(ctx, p("bad/g.txt"), os.O_RDONLY, 0); return err }},
		{"open to read a name it lacks", func() error { _, err := s.OpenFile(ctx, p("bad/none"), os.O_RDONLY, 0); return err }},
		{"open to create", func() error { _, err := s.OpenFile(ctx, p("bad/new"), os.O_RDWR|os.O_CREATE, 0o644); return err }},
		{"append", func() error {
			_, err := s.WriteFile(ctx, p("bad/g.txt"), strings.NewReader("x"), vfs.WriteOptions{Mode: vfs.WriteAppend})
			return err
		}},
		{"stat", func() error { _, err := s.Stat(ctx, p("bad/none")); return err }},
		{"list", func() error { _, err := s.List(ctx, p("bad/sub")); return err }},
		{"walk", func() error { return s.Walk(ctx, p("bad"), func(vfs.Path, vfs.Node) error { return nil }) }},
		{"mkdir -p", func() error { _, err := s.Mkdir(ctx, p("bad/sub"), vfs.MkdirOptions{Parents: true}); return err }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.ErrorIs(t, c.op(), vfs.ErrIO)
		})
	}
}
