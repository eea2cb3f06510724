//go:build linux

package beneath_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/internal/beneath"
)

// tree makes a root directory with a/b/f, a symlink into it and one out of
// it, and an outside directory with a file.
func tree(t *testing.T) (root, outside string) {
	t.Helper()
	root, outside = t.TempDir(), t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "a", "b"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "a", "b", "f"), []byte("f"), 0o644))
	require.NoError(t, os.Symlink("a", filepath.Join(root, "in")))
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "out")))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o600))
	return root, outside
}

func TestOpenRefusesWhatLeadsAway(t *testing.T) {
	root, _ := tree(t)
	r, err := beneath.OpenRoot(root)
	require.NoError(t, err)
	defer r.Close()
	for _, tc := range []struct {
		rel   string
		flags int
		err   error
	}{
		{"a/b/f", unix.O_RDONLY, nil},
		{"", unix.O_RDONLY | unix.O_DIRECTORY, nil},
		{"in/b/f", unix.O_RDONLY, unix.ELOOP},      // a symlink inside: refused all the same
		{"out/secret", unix.O_RDONLY, unix.ELOOP},  // a symlink out
		{"out", unix.O_RDONLY, unix.ELOOP},         // a trailing symlink, followed
		{"../x", unix.O_RDONLY, unix.EXDEV},        // out by ..
		{"/etc/passwd", unix.O_RDONLY, unix.EXDEV}, // absolute
	} {
		t.Run(tc.rel, func(t *testing.T) {
			fd, err := beneath.Open(r.Fd(), tc.rel, tc.flags)
			if tc.err == nil {
				require.NoError(t, err)
				unix.Close(fd)
				return
			}
			require.ErrorIs(t, err, tc.err)
		})
	}
	// O_PATH|O_NOFOLLOW: a trailing symlink is the link itself.
	fd, err := beneath.OpenNode(r.Fd(), "out")
	require.NoError(t, err)
	defer unix.Close(fd)
	st, err := beneath.Fstat(fd)
	require.NoError(t, err)
	require.EqualValues(t, unix.S_IFLNK, st.Mode&unix.S_IFMT)
	target, err := beneath.Readlink(fd)
	require.NoError(t, err)
	require.NotEmpty(t, target)
}

func TestOpenRefusesMountCrossing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	root, _ := tree(t)
	sub := filepath.Join(root, "a", "mnt")
	require.NoError(t, os.Mkdir(sub, 0o755))
	require.NoError(t, unix.Mount("tmpfs", sub, "tmpfs", 0, "size=1m"))
	defer unix.Unmount(sub, unix.MNT_DETACH)
	r, err := beneath.OpenRoot(root)
	require.NoError(t, err)
	defer r.Close()
	_, err = beneath.Open(r.Fd(), "a/mnt", unix.O_RDONLY|unix.O_DIRECTORY)
	require.ErrorIs(t, err, unix.EXDEV)
}

// TestNodeCallsChangeTheLinkNotItsTarget: owner, times and extended
// attributes set through a symlink's descriptor are the symlink's.
func TestNodeCallsChangeTheLinkNotItsTarget(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown and trusted.* attributes need root")
	}
	root, outside := tree(t)
	secret := filepath.Join(outside, "secret")
	var before unix.Stat_t
	require.NoError(t, unix.Stat(secret, &before))
	r, err := beneath.OpenRoot(root)
	require.NoError(t, err)
	defer r.Close()
	fd, err := beneath.OpenNode(r.Fd(), "out")
	require.NoError(t, err)
	defer unix.Close(fd)
	require.NoError(t, beneath.Chown(fd, 4242, 4242))
	require.NoError(t, beneath.SetXattr(fd, "trusted.vfsd-test", []byte("v")))
	require.NoError(t, beneath.Utimes(fd, unix.NsecToTimespec(1e9), unix.NsecToTimespec(2e9)))
	names, err := beneath.ListXattrs(fd)
	require.NoError(t, err)
	require.Contains(t, names, "trusted.vfsd-test")
	v, err := beneath.GetXattr(fd, "trusted.vfsd-test")
	require.NoError(t, err)
	require.Equal(t, "v", string(v))
	require.NoError(t, beneath.RemoveXattr(fd, "trusted.vfsd-test"))
	require.NoError(t, beneath.RemoveXattr(fd, "trusted.vfsd-test"), "an attribute not there is no error")

	var link, after unix.Stat_t
	require.NoError(t, unix.Lstat(filepath.Join(root, "out"), &link))
	require.EqualValues(t, 4242, link.Uid)
	require.EqualValues(t, 2, link.Mtim.Sec)
	require.NoError(t, unix.Stat(secret, &after))
	require.Equal(t, before.Uid, after.Uid)
	require.Equal(t, before.Mtim, after.Mtim)
	_, err = unix.Getxattr(secret, "trusted.vfsd-test", nil)
	require.ErrorIs(t, err, unix.ENODATA)

	// Reopen gives the same inode; chmod through the descriptor.
	ffd, err := beneath.OpenNode(r.Fd(), "a/b/f")
	require.NoError(t, err)
	defer unix.Close(ffd)
	require.NoError(t, beneath.Chmod(ffd, 0o600))
	rfd, err := beneath.Reopen(ffd, unix.O_RDONLY)
	require.NoError(t, err)
	defer unix.Close(rfd)
	a, err := beneath.Fstat(ffd)
	require.NoError(t, err)
	b, err := beneath.Fstat(rfd)
	require.NoError(t, err)
	require.True(t, beneath.SameNode(&a, &b))
	require.EqualValues(t, 0o600, b.Mode&0o7777)
}

// TestRemoveAllStaysBeneath: RemoveAll removes a directory with symlinks
// in it (to outside) without touching what they point to, and a directory
// larger than one batch of names.
func TestRemoveAllStaysBeneath(t *testing.T) {
	root, outside := tree(t)
	big := filepath.Join(root, "a", "big")
	require.NoError(t, os.Mkdir(big, 0o755))
	for i := range 5000 {
		require.NoError(t, os.WriteFile(filepath.Join(big, fmt.Sprint(i)), nil, 0o644))
	}
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "a", "b", "escape")))
	r, err := beneath.OpenRoot(root)
	require.NoError(t, err)
	defer r.Close()
	require.NoError(t, beneath.RemoveAll(r.Fd(), "a"))
	require.NoError(t, beneath.RemoveAll(r.Fd(), "out"))
	require.NoError(t, beneath.RemoveAll(r.Fd(), "gone"), "what is not there is no error")
	ents, err := os.ReadDir(root)
	require.NoError(t, err)
	require.Len(t, ents, 1) // "in", a dangling symlink now
	b, err := os.ReadFile(filepath.Join(outside, "secret"))
	require.NoError(t, err)
	require.Equal(t, "s", string(b))
}

func TestEachName(t *testing.T) {
	dir := t.TempDir()
	var want []string
	for i := range 3000 {
		name := fmt.Sprintf("a-fairly-long-name-to-fill-several-buffers-%05d", i)
		want = append(want, name)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), nil, 0o644))
	}
	r, err := beneath.OpenRoot(dir)
	require.NoError(t, err)
	defer r.Close()
	fd, err := beneath.OpenDir(r.Fd(), "")
	require.NoError(t, err)
	defer unix.Close(fd)
	var got []string
	require.NoError(t, beneath.EachName(fd, func(name string) bool {
		got = append(got, name)
		return true
	}))
	sort.Strings(got)
	require.Equal(t, want, got)
}

// TestXattrsAtReadTheEntryItself: the *At calls read a symlink's own
// attributes, never its target's, with the *xattrat system calls and with
// their fallback.
func TestXattrsAtReadTheEntryItself(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("trusted.* attributes need root")
	}
	root, outside := tree(t)
	require.NoError(t, unix.Lsetxattr(filepath.Join(root, "out"), "trusted.vfsd-link", []byte("link"), 0))
	require.NoError(t, unix.Setxattr(outside, "trusted.vfsd-target", []byte("target"), 0))
	r, err := beneath.OpenRoot(root)
	require.NoError(t, err)
	defer r.Close()
	for _, fallback := range []bool{false, true} {
		t.Run(fmt.Sprintf("fallback=%v", fallback), func(t *testing.T) {
			if fallback {
				defer beneath.WithoutXattrAt()()
			}
			names, err := beneath.ListXattrsAt(r.Fd(), "out")
			require.NoError(t, err)
			require.Contains(t, names, "trusted.vfsd-link")
			require.NotContains(t, names, "trusted.vfsd-target")
			v, err := beneath.GetXattrAt(r.Fd(), "out", "trusted.vfsd-link")
			require.NoError(t, err)
			require.Equal(t, "link", string(v))
			_, err = beneath.GetXattrAt(r.Fd(), "out", "trusted.vfsd-target")
			require.ErrorIs(t, err, unix.ENODATA)
			_, err = beneath.ListXattrsAt(r.Fd(), "missing")
			require.ErrorIs(t, err, unix.ENOENT)
		})
	}
}
