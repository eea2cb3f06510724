package hostmount

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// TestApplyUnreadableLazyDirectory: applying a session whose import base
// has a lazily loaded directory that cannot be read (its manifest's
// record is gone from the store) fails with io_error and writes nothing
// to the host: the directory's files are neither taken as absent (and
// written over) nor as deleted.
func TestApplyUnreadableLazyDirectory(t *testing.T) {
	e := newEnv(t)
	e.write("proj/top.txt", "top\n")
	e.write("proj/bad/g.txt", "g\n")
	e.write("proj/bad/sub/f.txt", "f\n")
	host := filepath.Join(e.root, "proj")
	mounts := []Mount{{HostPath: host, MountPath: "/"}}
	s, rep, err := e.im.Stage(ctx, e.repo, snapshot.SessionOptions{}, mounts, nil)
	require.NoError(t, err)
	first := rep.Snapshot
	// The import base: a second snapshot whose record holds the root's
	// manifest; bad/'s manifests stay in the first one's.
	_, err = s.WriteFile(ctx, vfs.MustPath("top.txt"), strings.NewReader("top 2\n"), vfs.WriteOptions{})
	require.NoError(t, err)
	base, err := e.repo.Snapshot(ctx, s, "base")
	require.NoError(t, err)
	// The session then changes bad/ (read while the store was whole) and
	// the change is snapshotted: what Apply writes.
	_, err = s.WriteFile(ctx, vfs.MustPath("bad/g.txt"), strings.NewReader("g from the session\n"), vfs.WriteOptions{})
	require.NoError(t, err)
	target, err := e.repo.Snapshot(ctx, s, "target")
	require.NoError(t, err)
	sid := s.ID()
	require.NoError(t, e.repo.Close())

	h, err := vfs.ParseHash(first)
	require.NoError(t, err)
	require.NoError(t, e.store.Delete(ctx, snapshot.Records, h))
	e.repo, err = snapshot.OpenRepo(ctx, e.store, filepath.Join(e.dir, "sessions"), snapshot.RepoOptions{})
	require.NoError(t, err)
	// The staged session stood on the first snapshot and cannot open: the
	// apply names its target snapshot and takes another session.
	_, err = e.repo.Session(sid)
	require.Error(t, err)
	s, err = e.repo.NewSession(ctx, snapshot.SessionOptions{})
	require.NoError(t, err)
	host0 := e.describeHost(t, host)
	for _, dry := range []bool{true, false} {
		got, err := e.im.Apply(ctx, e.repo, base.ID, s, mounts, ApplyOptions{Snapshot: target.ID, DryRun: dry})
		require.ErrorIs(t, err, vfs.ErrIO, "dry run %v: %+v", dry, got)
		require.Equal(t, host0, e.describeHost(t, host), "nothing written")
	}
}

// describeHost lists the files under dir with their contents.
func (e *env) describeHost(t *testing.T, dir string) map[string]string {
	out := map[string]string{}
	require.NoError(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	}))
	return out
}
