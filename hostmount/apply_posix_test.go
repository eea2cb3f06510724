//go:build linux && !vfsd_osroot

package hostmount

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// TestApplyPOSIXMetadata: owner, mode (special bits), extended attribute
// and symlink-owner changes, a new sticky directory, a new setgid file
// with attributes, a new hard link, a fifo and a device made in the
// session reach the host as the session has them (set-ID bits as the
// admin asks: KeepSetID; see TestApplyWritesNoNewPrivileges).
func TestApplyPOSIXMetadata(t *testing.T) {
	needRoot(t)
	e := newEnv(t)
	dir := posixHost(t, e, "p")
	mounts := []Mount{{HostPath: dir, MountPath: "/"}}
	s, rep, err := e.im.Stage(ctx, e.repo, snapshot.SessionOptions{}, mounts, nil)
	require.NoError(t, err)
	must := func(_ vfs.Node, err error) { t.Helper(); require.NoError(t, err) }
	must(s.Chown(ctx, "user-owned", 2000, 2001))
	must(s.Chmod(ctx, "root-owned", 0o750|fs.ModeSetuid))
	must(s.SetXattr(ctx, "tagged", "user.k", []byte("changed"), 0))
	must(s.SetXattr(ctx, "tagged", "user.new", []byte("n"), 0))
	must(s.RemoveXattr(ctx, "tagged", "trusted.t"))
	must(s.Chown(ctx, "link", 9, 9))
	must(s.Mkdir(ctx, "newdir", vfs.MkdirOptions{Perm: 0o777 | fs.ModeSticky, ExactPerm: true, Owner: &vfs.Owner{Uid: 3, Gid: 3}}))
	_, err = s.WriteFile(ctx, "newdir/new", strings.NewReader("new"), vfs.WriteOptions{})
	require.NoError(t, err)
	must(s.Chown(ctx, "newdir/new", 1000, 1000))
	must(s.Chmod(ctx, "newdir/new", 0o755|fs.ModeSetgid))
	must(s.SetXattr(ctx, "newdir/new", "user.x", []byte("y"), 0))
	must(s.Link(ctx, "a", "sub/c"))
	must(s.Mknod(ctx, "newfifo", vfs.KindFifo, vfs.CreateOptions{Perm: 0o600, Owner: &vfs.Owner{Uid: 11, Gid: 12}}, 0))
	must(s.Mknod(ctx, "zero", vfs.KindCharDev, vfs.CreateOptions{Perm: 0o666}, uint64(unix.Mkdev(1, 5))))

	got, err := e.im.Apply(ctx, e.repo, rep.Snapshot, s, mounts, ApplyOptions{KeepSetID: true})
	require.NoError(t, err)
	require.Empty(t, got.Conflicts)
	actions := map[string]string{}
	for _, c := range got.Applied {
		actions[c.Path] = c.Action
		require.Empty(t, c.Note, c.Path)
	}
	require.Equal(t, map[string]string{"/user-owned": "metadata", "/root-owned": "chmod", "/tagged": "metadata",
		"/link": "metadata", "/newdir": "mkdir", "/newdir/new": "write", "/sub/c": "link", "/newfifo": "mknod",
		"/zero": "mknod"}, actions)

	host := hostStates(t, dir)
	var ca, cc unix.Stat_t
	require.NoError(t, unix.Lstat(filepath.Join(dir, "a"), &ca))
	require.NoError(t, unix.Lstat(filepath.Join(dir, "sub/c"), &cc))
	require.Equal(t, ca.Ino, cc.Ino, "a new hard link is a host hard link")
	for rel, hs := range host {
		if hs.kind == vfs.KindDir {
			hs.mtime = 0 // apply leaves directories the times their new entries give them
			host[rel] = hs
		}
	}
	session := map[string]hostState{}
	require.NoError(t, s.Tree().Walk(vfs.Root, func(p vfs.Path, n vfs.Node) error {
		hs := nodeState(n)
		if hs.kind == vfs.KindDir {
			hs.mtime = 0
		}
		session[strings.TrimPrefix(string(p), "/")] = hs
		return nil
	}))
	for rel, hs := range host {
		hs.ino = 0
		host[rel] = hs
	}
	require.Equal(t, session, host)

	// The next apply has nothing left to do.
	again, err := e.im.Apply(ctx, e.repo, got.Import, s, mounts, ApplyOptions{DryRun: true})
	require.NoError(t, err)
	require.Empty(t, again.Applied)
	require.Empty(t, again.Conflicts)
}

// TestApplyMetadataNeverThroughSymlink swaps the host file for a symlink
// to a file outside the root just before apply changes its owner, mode or
// attributes: the change is a conflict, and the outside file is untouched.
func TestApplyMetadataNeverThroughSymlink(t *testing.T) {
	needRoot(t)
	for _, tc := range []struct {
		name   string
		change func(s *vfs.Session) error
	}{
		{"chown", func(s *vfs.Session) error { _, err := s.Chown(ctx, "f", 4242, 4242); return err }},
		{"chmod", func(s *vfs.Session) error { _, err := s.Chmod(ctx, "f", 0o777|fs.ModeSetuid); return err }},
		{"setxattr", func(s *vfs.Session) error { _, err := s.SetXattr(ctx, "f", "user.evil", []byte("1"), 0); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.write("p/f", "f")
			mounts := []Mount{{HostPath: filepath.Join(e.root, "p"), MountPath: "/"}}
			s, rep, err := e.im.Stage(ctx, e.repo, snapshot.SessionOptions{}, mounts, nil)
			require.NoError(t, err)
			require.NoError(t, tc.change(s))
			secret := filepath.Join(e.outside, "secret")
			var before unix.Stat_t
			require.NoError(t, unix.Stat(secret, &before))
			testHookBeforeMove = func(name string) {
				victim := filepath.Join(e.root, "p", name)
				require.NoError(t, os.Remove(victim))
				require.NoError(t, os.Symlink(secret, victim))
			}
			defer func() { testHookBeforeMove = nil }()
			got, err := e.im.Apply(ctx, e.repo, rep.Snapshot, s, mounts, ApplyOptions{})
			require.NoError(t, err)
			require.Len(t, got.Conflicts, 1)
			require.Contains(t, got.Conflicts[0].Conflict, "changed on the host while being applied")
			var after unix.Stat_t
			require.NoError(t, unix.Stat(secret, &after))
			require.Equal(t, before.Uid, after.Uid)
			require.Equal(t, before.Mode, after.Mode)
			n, _ := unix.Getxattr(secret, "user.evil", nil)
			require.LessOrEqual(t, n, 0, "no attribute was set through the symlink")
		})
	}
}

// TestApplyLinkOutsideMounts: a hard link whose other name is outside
// every mount is written as a copy, and the report says so; as a daemon
// that is not root, a new device is a conflict.
func TestApplyLinkOutsideMountsAndDevicesNotRoot(t *testing.T) {
	needRoot(t)
	e := newEnv(t)
	e.write("p/keep", "k")
	mounts := []Mount{{HostPath: filepath.Join(e.root, "p"), MountPath: "/m"}}
	s, rep, err := e.im.Stage(ctx, e.repo, snapshot.SessionOptions{}, mounts, nil)
	require.NoError(t, err)
	_, err = s.WriteFile(ctx, "scratch", strings.NewReader("outside"), vfs.WriteOptions{})
	require.NoError(t, err)
	_, err = s.Link(ctx, "scratch", "m/linked")
	require.NoError(t, err)
	_, err = s.Mknod(ctx, "m/dev", vfs.KindBlockDev, vfs.CreateOptions{Perm: 0o600}, uint64(unix.Mkdev(7, 0)))
	require.NoError(t, err)
	isRoot = false
	defer func() { isRoot = true }()
	got, err := e.im.Apply(ctx, e.repo, rep.Snapshot, s, mounts, ApplyOptions{})
	require.NoError(t, err)
	require.Len(t, got.Applied, 1)
	require.Equal(t, "/m/linked", got.Applied[0].Path)
	require.Equal(t, "write", got.Applied[0].Action)
	require.Contains(t, got.Applied[0].Note, "written as a copy: its other name /scratch is outside the mounts")
	b, err := os.ReadFile(filepath.Join(e.root, "p/linked"))
	require.NoError(t, err)
	require.Equal(t, "outside", string(b))
	require.Len(t, got.Conflicts, 1)
	require.Contains(t, got.Conflicts[0].Conflict, "only a daemon running as root")
}

// TestApplyMetadataConflict: a mode or owner the session changed that the
// host changed too since the import is a conflict, left as the host has it.
func TestApplyMetadataConflict(t *testing.T) {
	needRoot(t)
	e := newEnv(t)
	e.write("p/m", "m")
	e.write("p/o", "o")
	mounts := []Mount{{HostPath: filepath.Join(e.root, "p"), MountPath: "/"}}
	s, rep, err := e.im.Stage(ctx, e.repo, snapshot.SessionOptions{}, mounts, nil)
	require.NoError(t, err)
	_, err = s.Chmod(ctx, "m", 0o600)
	require.NoError(t, err)
	_, err = s.Chown(ctx, "o", 5, 5)
	require.NoError(t, err)
	require.NoError(t, os.Chmod(filepath.Join(e.root, "p/m"), 0o640))
	require.NoError(t, os.Lchown(filepath.Join(e.root, "p/o"), 6, 6))
	got, err := e.im.Apply(ctx, e.repo, rep.Snapshot, s, mounts, ApplyOptions{})
	require.NoError(t, err)
	require.Empty(t, got.Applied)
	require.Len(t, got.Conflicts, 2)
	require.Contains(t, got.Conflicts[0].Conflict, "its mode is 0640 on the host, 0644 when imported")
	require.Contains(t, got.Conflicts[1].Conflict, "its owner is 6:6 on the host, 0:0 when imported")
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(filepath.Join(e.root, "p/m"), &st))
	require.Equal(t, uint32(0o640), st.Mode&0o7777)
}
