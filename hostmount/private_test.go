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

// TestPrivatePathsNeverStagedNorWritten: the daemon's own data directory
// (and a socket or token file) inside a mount is skipped and reported, a
// mount inside it or through a symlink to it is refused, a symlink to it
// is not followed into it, and Apply never writes into it.
func TestPrivatePathsNeverStagedNorWritten(t *testing.T) {
	var data string
	e := newEnv(t, func(o *Options) {
		data = filepath.Join(o.Roots[0], "home/.local/state/vfsd")
		require.NoError(t, os.MkdirAll(filepath.Join(data, "store"), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(data, "token"), []byte("vfsd_admin_x\n"), 0o600))
		o.Private = []string{data, filepath.Join(data, "token"), filepath.Join(o.Roots[0], "no-such-socket")}
	})
	e.write("home/notes.txt", "notes\n")
	links := canSymlink(t)
	if links {
		e.symlink(".local/state/vfsd", "home/link-to-data")
	}
	home := filepath.Join(e.root, "home")

	got, rep := e.load(Mount{HostPath: home, MountPath: "/", FollowSymlinks: true})
	for p := range got {
		require.NotContains(t, p, "vfsd", "the data dir was staged")
		require.NotContains(t, p, "link-to-data", "a symlink led into the data dir")
	}
	require.Equal(t, "notes\n", got["notes.txt"], got)
	skips := skipsOf(rep)
	require.Equal(t, SkipPrivate, skips[e.host("home/.local/state/vfsd")])
	refused := []string{data, filepath.Join(data, "store"), filepath.Join(data, "token")}
	if links {
		require.Equal(t, SkipPrivate, skips[filepath.Join(home, "link-to-data")])
		refused = append(refused, filepath.Join(home, "link-to-data"))
	}

	for _, hp := range refused {
		_, _, err := e.im.Import(ctx, e.repo, []Mount{{HostPath: hp, MountPath: "/"}}, nil)
		require.Error(t, err, hp)
		require.Equal(t, vfs.CodeForbidden, vfs.CodeOf(err), hp)
		require.Contains(t, err.Error(), "daemon's own data", hp)
	}

	// A session that creates the data dir's path gets a conflict, and the
	// host's data dir is untouched.
	mounts := []Mount{{HostPath: home, MountPath: "/"}}
	s, rep2, err := e.im.Stage(ctx, e.repo, snapshot.SessionOptions{}, mounts, nil)
	require.NoError(t, err)
	_, err = s.WriteFile(ctx, vfs.MustPath("/.local/state/vfsd/token"), strings.NewReader("vfsd_admin_mine\n"), vfs.WriteOptions{CreateParents: true})
	require.NoError(t, err)
	ar, err := e.im.Apply(ctx, e.repo, rep2.Snapshot, s, mounts, ApplyOptions{})
	require.NoError(t, err)
	conflicts := map[string]string{}
	for _, c := range ar.Conflicts {
		conflicts[c.Path] = c.Conflict
	}
	require.Contains(t, conflicts["/.local/state/vfsd/token"], "daemon's own data")
	requireContent(t, filepath.Join(data, "token"), "vfsd_admin_x\n")
}
