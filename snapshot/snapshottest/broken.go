// Package snapshottest builds repositories for tests of the packages
// above the store: one with a snapshot that cannot be read whole.
package snapshottest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// Broken is a repository whose session S was forked from a lazily loaded
// snapshot one of whose directories cannot be read: the manifests of BadDir (and
// of everything beneath it) are in a snapshot record corrupted on disk,
// as a bad disk, a half-written object or a remote that lost it leaves
// them. Everything else reads normally.
type Broken struct {
	Repo     *snapshot.Repo
	S        *vfs.Session // the session, ID "test-session", its tree still lazy
	Dir      string       // the repository's directory (store/ and sessions/)
	Snapshot string       // the lazily loaded snapshot the session was forked from
	BadDir   string       // "bad": its manifest cannot be read
	BadFile  string       // "bad/sub/f.txt", beneath it
	GoodFile string       // "good/a.txt", readable
}

// BrokenFiles are the files of a Broken repository's snapshot, as they were
// written (BadDir's are unreadable once the record is corrupted).
var BrokenFiles = map[string]string{
	"top.txt":       "top v2\n",
	"good/a.txt":    "good v2\n",
	"bad/g.txt":     "bad g\n",
	"bad/sub/f.txt": "bad sub f\n",
}

// NewBroken builds a Broken repository. The session is lazily loaded and
// its tree still lazy; BadDir's manifest fails to load with a vfs.CodeIO
// error.
func NewBroken(t testing.TB) *Broken {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	r, err := snapshot.OpenLocalRepo(ctx, dir, snapshot.RepoOptions{})
	require.NoError(t, err)
	s, err := r.NewSession(ctx, snapshot.SessionOptions{ID: "origin"})
	require.NoError(t, err)
	put := func(s *vfs.Session, p, content string) {
		_, err := s.WriteFile(ctx, vfs.MustPath(p), strings.NewReader(content), vfs.WriteOptions{CreateParents: true})
		require.NoError(t, err)
	}
	for _, p := range []string{"top.txt", "good/a.txt", "bad/g.txt", "bad/sub/f.txt"} {
		put(s, p, strings.Replace(BrokenFiles[p], "v2", "v1", 1))
	}
	base, err := r.Snapshot(ctx, s, "base")
	require.NoError(t, err)
	// A second snapshot rewrites the root's and good's manifests only:
	// bad's stay in the first snapshot's record.
	f, err := r.Fork(ctx, snapshot.Source{Snapshot: base.ID}, snapshot.SessionOptions{ID: "second"})
	require.NoError(t, err)
	put(f, "top.txt", BrokenFiles["top.txt"])
	put(f, "good/a.txt", BrokenFiles["good/a.txt"])
	second, err := r.Snapshot(ctx, f, "second")
	require.NoError(t, err)
	require.NoError(t, r.DeleteSession("second"))
	require.NoError(t, r.DeleteSession("origin"))
	require.NoError(t, r.Close())

	rec := filepath.Join(dir, "store", string(snapshot.Records), base.ID[:2], base.ID)
	b, err := os.ReadFile(rec)
	require.NoError(t, err)
	i := strings.LastIndex(string(b), "g.txt") // inside bad's manifest
	require.Positive(t, i, "the record holds bad's manifest")
	b[i] ^= 0x20
	require.NoError(t, os.Chmod(rec, 0o644))
	require.NoError(t, os.WriteFile(rec, b, 0o644))

	r, err = snapshot.OpenLocalRepo(ctx, dir, snapshot.RepoOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	ls, err := r.Fork(ctx, snapshot.Source{Snapshot: second.ID}, snapshot.SessionOptions{ID: "test-session"})
	require.NoError(t, err)
	require.True(t, ls.Tree().IsLazy(), "the fork is lazily loaded")
	return &Broken{Repo: r, S: ls, Dir: dir, Snapshot: second.ID,
		BadDir: "bad", BadFile: "bad/sub/f.txt", GoodFile: "good/a.txt"}
}
