package vfs_test

import (
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/vfstest"
)

func stat(t *testing.T, s *vfs.Session, path string) vfs.Node {
	t.Helper()
	n, err := s.Stat(ctx, p(path))
	require.NoError(t, err)
	return n
}

// TestOwnersAndModes: nodes carry owners and all twelve mode bits; mode 0
// is honoured where asked; chown to another uid works and always moves
// ctime; chmod moves ctime, not mtime.
func TestOwnersAndModes(t *testing.T) {
	blobs := vfstest.NewBlobs()
	opts := vfstest.Options(t, blobs)
	opts.Owner = &vfs.Owner{Uid: 1000, Gid: 1000}
	s, err := vfs.Create(ctx, opts, vfs.Tree{}, "")
	require.NoError(t, err)
	defer s.Close()

	root := stat(t, s, "/")
	require.Equal(t, uint32(1000), root.Uid, "a session made from nothing has its default owner")
	write(t, s, "f", "x")
	f := stat(t, s, "f")
	require.Equal(t, vfs.Owner{Uid: 1000, Gid: 1000}, vfs.Owner{Uid: f.Uid, Gid: f.Gid})
	require.Equal(t, uint32(1), f.Nlink)

	h, err := s.OpenFileWith(ctx, p("zero"), os.O_RDWR|os.O_CREATE|os.O_EXCL, vfs.CreateOptions{Perm: 0, Owner: &vfs.Owner{Uid: 7, Gid: 8}})
	require.NoError(t, err)
	require.NoError(t, h.Close())
	z := stat(t, s, "zero")
	require.Equal(t, fs.FileMode(0), z.Mode, "open(O_CREAT, 0) gives mode 0")
	require.Equal(t, uint32(7), z.Uid)
	_, err = s.Mkdir(ctx, p("d0"), vfs.MkdirOptions{Perm: 0, ExactPerm: true})
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0), stat(t, s, "d0").Mode, "mkdir(p, 0) gives mode 0")

	before := stat(t, s, "f")
	n, err := s.Chmod(ctx, p("f"), 0o755|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)
	require.NoError(t, err)
	require.Equal(t, uint32(0o7755), n.UnixMode()&0o7777, "chmod keeps setuid, setgid, sticky")
	require.Equal(t, before.Mtime, n.Mtime, "chmod does not touch mtime")
	require.Greater(t, n.Ctime, before.Ctime, "chmod moves ctime")

	n, err = s.Chown(ctx, p("f"), 2000, vfs.NoOwner)
	require.NoError(t, err)
	require.Equal(t, uint32(2000), n.Uid)
	require.Equal(t, uint32(1000), n.Gid, "NoOwner leaves the group")
	require.Zero(t, n.Mode&fs.ModeSetuid, "chown drops setuid")
	require.Zero(t, n.Mode&fs.ModeSetgid, "chown drops setgid of a group-executable file")
	again, err := s.Chown(ctx, p("f"), 2000, 1000)
	require.NoError(t, err)
	require.Greater(t, again.Ctime, n.Ctime, "chown to the same owner still moves ctime")

	// A setgid directory gives its group, and its setgid bit to subdirectories.
	_, err = s.Mkdir(ctx, p("g"), vfs.MkdirOptions{Perm: 0o2775, ExactPerm: true})
	require.NoError(t, err)
	_, err = s.Chmod(ctx, p("g"), 0o775|fs.ModeSetgid)
	require.NoError(t, err)
	_, err = s.Chown(ctx, p("g"), 1000, 50)
	require.NoError(t, err)
	_, err = s.Mkdir(ctx, p("g/sub"), vfs.MkdirOptions{Owner: &vfs.Owner{Uid: 3, Gid: 3}})
	require.NoError(t, err)
	sub := stat(t, s, "g/sub")
	require.Equal(t, uint32(50), sub.Gid)
	require.NotZero(t, sub.Mode&fs.ModeSetgid)
}

// TestTimesNanoseconds: utimensat semantics with UTIME_NOW and UTIME_OMIT,
// ctime always now, nanosecond precision.
func TestTimesNanoseconds(t *testing.T) {
	s, _ := vfstest.NewSession(t)
	write(t, s, "f", "x")
	f := stat(t, s, "f")
	at := time.Unix(1_000_000, 123_456_789)
	n, err := s.Utimens(ctx, p("f"), vfs.At(at), vfs.UtimeOmit)
	require.NoError(t, err)
	require.Equal(t, at.UnixNano(), n.Atime)
	require.Equal(t, f.Mtime, n.Mtime, "UTIME_OMIT leaves mtime")
	require.Greater(t, n.Ctime, f.Ctime)
	require.NotEqual(t, at.UnixNano(), n.Ctime, "ctime is never the caller's time")
	m, err := s.Utimens(ctx, p("f"), vfs.UtimeOmit, vfs.UtimeNow)
	require.NoError(t, err)
	require.Equal(t, m.Ctime, m.Mtime, "UTIME_NOW is the change's time")
	require.Equal(t, at.UnixNano(), m.Atime)
	n, err = s.SetTimes(ctx, p("f"), at)
	require.NoError(t, err)
	require.Equal(t, at.UnixNano(), n.Mtime)
	require.Equal(t, at.UnixMilli(), n.Updated, "the millisecond mirror follows")
}

// TestTimesSetWhileWritesPending: tar writes a file through a descriptor,
// sets its times, then closes it; the close must not move mtime again.
func TestTimesSetWhileWritesPending(t *testing.T) {
	s, _ := vfstest.NewSession(t)
	h, err := s.OpenFile(ctx, p("f"), os.O_CREATE|os.O_WRONLY, 0o644)
	require.NoError(t, err)
	_, err = h.WriteAt([]byte("content"), 0)
	require.NoError(t, err)
	mt := time.Unix(1_700_000_000, 5)
	_, err = s.Utimens(ctx, p("f"), vfs.UtimeOmit, vfs.At(mt))
	require.NoError(t, err)
	require.NoError(t, h.Flush())
	require.NoError(t, h.Close())
	n := stat(t, s, "f")
	require.Equal(t, mt.UnixNano(), n.Mtime, "the times set last hold")
	require.EqualValues(t, 7, n.Size)
}

// TestSpecialFilesAndXattrs: mknod kinds with rdev; xattrs with
// XATTR_CREATE/REPLACE, no_data and limits.
func TestSpecialFilesAndXattrs(t *testing.T) {
	s, _ := vfstest.NewSession(t)
	for _, k := range []vfs.Kind{vfs.KindFifo, vfs.KindSocket, vfs.KindCharDev, vfs.KindBlockDev} {
		n, err := s.Mknod(ctx, p(k.String()), k, vfs.CreateOptions{Perm: 0o640}, 0x0801)
		require.NoError(t, err, k)
		require.Equal(t, k, n.Kind)
		require.Equal(t, fs.FileMode(0o640), n.Mode)
		if k == vfs.KindCharDev || k == vfs.KindBlockDev {
			require.Equal(t, uint64(0x0801), n.Rdev)
		}
	}
	_, err := s.Open(ctx, p("fifo"))
	require.Equal(t, vfs.CodeInvalid, vfs.CodeOf(err))
	_, err = s.WriteFile(ctx, p("fifo"), strings.NewReader("x"), vfs.WriteOptions{})
	require.Equal(t, vfs.CodeInvalid, vfs.CodeOf(err))
	_, err = s.Mknod(ctx, p("fifo"), vfs.KindFifo, vfs.CreateOptions{}, 0)
	require.Equal(t, vfs.CodeExists, vfs.CodeOf(err))

	write(t, s, "f", "x")
	_, err = s.SetXattr(ctx, p("f"), "user.a", []byte("1"), vfs.XattrReplace)
	require.Equal(t, vfs.CodeNoData, vfs.CodeOf(err))
	_, err = s.SetXattr(ctx, p("f"), "user.a", []byte("1"), vfs.XattrCreate)
	require.NoError(t, err)
	_, err = s.SetXattr(ctx, p("f"), "user.a", []byte("2"), vfs.XattrCreate)
	require.Equal(t, vfs.CodeExists, vfs.CodeOf(err))
	_, err = s.SetXattr(ctx, p("f"), "trusted.b", nil, 0)
	require.NoError(t, err)
	v, err := s.GetXattr(ctx, p("f"), "user.a")
	require.NoError(t, err)
	require.Equal(t, "1", string(v))
	names, err := s.ListXattr(ctx, p("f"))
	require.NoError(t, err)
	require.Equal(t, []string{"trusted.b", "user.a"}, names)
	_, err = s.RemoveXattr(ctx, p("f"), "user.a")
	require.NoError(t, err)
	_, err = s.GetXattr(ctx, p("f"), "user.a")
	require.Equal(t, vfs.CodeNoData, vfs.CodeOf(err))
	_, err = s.RemoveXattr(ctx, p("f"), "user.a")
	require.Equal(t, vfs.CodeNoData, vfs.CodeOf(err))
	_, err = s.SetXattr(ctx, p("f"), "user.big", make([]byte, vfs.MaxXattrValue+1), 0)
	require.Equal(t, vfs.CodeTooLarge, vfs.CodeOf(err))
	for i := range 4 {
		_, err = s.SetXattr(ctx, p("f"), "user."+string(rune('a'+i)), make([]byte, vfs.MaxXattrValue), 0)
		if i < 3 {
			require.NoError(t, err)
		}
	}
	require.Equal(t, vfs.CodeNoSpace, vfs.CodeOf(err), "256 KiB per node")
}

// TestDirectoryNlink: 2 + subdirectories, through mkdir, rmdir, rename.
func TestDirectoryNlink(t *testing.T) {
	s, _ := vfstest.NewSession(t)
	for _, d := range []string{"a", "a/b", "a/c", "x"} {
		_, err := s.Mkdir(ctx, p(d), vfs.MkdirOptions{})
		require.NoError(t, err)
	}
	write(t, s, "a/file", "x")
	require.Equal(t, uint32(4), stat(t, s, "/").Nlink)
	require.Equal(t, uint32(4), stat(t, s, "a").Nlink)
	require.NoError(t, s.Rename(ctx, p("a/b"), p("x/b"), vfs.RenameOptions{}))
	require.Equal(t, uint32(3), stat(t, s, "a").Nlink)
	require.Equal(t, uint32(3), stat(t, s, "x").Nlink)
	require.NoError(t, s.Remove(ctx, p("a/c"), vfs.RemoveOptions{}))
	require.Equal(t, uint32(2), stat(t, s, "a").Nlink)
	// Replacing an empty directory by rename.
	_, err := s.Mkdir(ctx, p("a/e"), vfs.MkdirOptions{})
	require.NoError(t, err)
	require.NoError(t, s.Rename(ctx, p("x/b"), p("a/e"), vfs.RenameOptions{}))
	require.Equal(t, uint32(3), stat(t, s, "a").Nlink)
	require.Equal(t, uint32(2), stat(t, s, "x").Nlink)
	require.NoError(t, s.Remove(ctx, p("a"), vfs.RemoveOptions{Recursive: true}))
	require.Equal(t, uint32(3), stat(t, s, "/").Nlink)
}

// TestHardLinks: names share one node; writes through one name (tools and
// handles) are seen through all; unlink counts down; handles follow the
// inode; rename over another name of the same node does nothing.
func TestHardLinks(t *testing.T) {
	blobs := vfstest.NewBlobs()
	opts := vfstest.Options(t, blobs)
	s, err := vfs.Create(ctx, opts, vfs.Tree{}, "")
	require.NoError(t, err)
	write(t, s, "a/f", "one")
	_, err = s.Mkdir(ctx, p("b"), vfs.MkdirOptions{})
	require.NoError(t, err)
	n, err := s.Link(ctx, p("a/f"), p("b/g"))
	require.NoError(t, err)
	require.Equal(t, uint32(2), n.Nlink)
	require.Equal(t, stat(t, s, "a/f").Ino, stat(t, s, "b/g").Ino)
	_, err = s.Link(ctx, p("a"), p("b/dir"))
	require.Equal(t, vfs.CodePermission, vfs.CodeOf(err), "links to directories are refused")
	_, err = s.Link(ctx, p("a/f"), p("b/g"))
	require.Equal(t, vfs.CodeExists, vfs.CodeOf(err))
	require.Equal(t, int64(1), s.Tree().Files(), "a linked file counts once")

	write(t, s, "b/g", "two")
	require.Equal(t, "two", read(t, s, "a/f"), "a tool write through one name is seen through the other")
	_, err = s.Chmod(ctx, p("a/f"), 0o600)
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o600), stat(t, s, "b/g").Mode)

	h, err := s.OpenFile(ctx, p("b/g"), os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = h.WriteAt([]byte("THREE"), 0)
	require.NoError(t, err)
	require.NoError(t, h.Flush())
	require.Equal(t, "THREE", read(t, s, "a/f"), "a handle write through one name is seen through the other")

	// Unlinking the handle's name: the handle follows the inode.
	before := stat(t, s, "a/f")
	require.NoError(t, s.Remove(ctx, p("b/g"), vfs.RemoveOptions{}))
	after := stat(t, s, "a/f")
	require.Equal(t, uint32(1), after.Nlink)
	require.Greater(t, after.Ctime, before.Ctime, "unlink moves the remaining name's ctime")
	require.False(t, h.Detached())
	require.Equal(t, p("a/f"), h.Path())
	_, err = h.WriteAt([]byte("four!"), 0)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	require.Equal(t, "four!", read(t, s, "a/f"))

	// Rename onto another name of the same node does nothing.
	_, err = s.Link(ctx, p("a/f"), p("b/h"))
	require.NoError(t, err)
	require.NoError(t, s.Rename(ctx, p("a/f"), p("b/h"), vfs.RenameOptions{}))
	require.Equal(t, uint32(2), stat(t, s, "a/f").Nlink)
	// Rename a directory holding a name: the link moves with it.
	require.NoError(t, s.Rename(ctx, p("b"), p("c"), vfs.RenameOptions{}))
	require.Equal(t, []vfs.Path{"a/f", "c/h"}, s.Tree().LinkNames(stat(t, s, "a/f").Ino))
	write(t, s, "c/h", "five")
	require.Equal(t, "five", read(t, s, "a/f"))

	// Replay reproduces it all.
	want := s.Tree().Encode()
	require.NoError(t, s.Close())
	s2, err := vfs.Open(ctx, opts)
	require.NoError(t, err)
	defer s2.Close()
	require.Equal(t, string(want), string(s2.Tree().Encode()))
	write(t, s2, "a/f", "six")
	require.Equal(t, "six", read(t, s2, "c/h"))
	require.NoError(t, s2.Remove(ctx, p("c"), vfs.RemoveOptions{Recursive: true}))
	require.Equal(t, uint32(1), stat(t, s2, "a/f").Nlink)
	require.False(t, s2.Tree().HasLinks())
}

// TestHardLinksInTreeBuilder: paths set with the same Ino and Nlink > 1
// become one node; link counts are recomputed.
func TestHardLinksInTreeBuilder(t *testing.T) {
	tb := vfs.NewTreeBuilder(vfs.Node{Kind: vfs.KindDir, Mode: 0o755, Ino: 1})
	tb.Set(p("d"), vfs.Node{Kind: vfs.KindDir, Ino: 2})
	f := vfs.Node{Kind: vfs.KindFile, Ino: 3, Nlink: 2, Size: 5, Blob: vfs.HashOf([]byte("hello"))}
	tb.Set(p("a"), f)
	tb.Set(p("d/b"), f)
	tb.Set(p("lone"), vfs.Node{Kind: vfs.KindFile, Ino: 4, Nlink: 9})
	tr := tb.Tree()
	require.Equal(t, []vfs.Path{"a", "d/b"}, tr.LinkNames(3))
	n, _, _ := tr.Lookup(p("d/b"))
	require.Equal(t, uint32(2), n.Nlink)
	n, _, _ = tr.Lookup(p("lone"))
	require.Equal(t, uint32(1), n.Nlink, "a link count is the names found")
	root, _, _ := tr.Lookup(vfs.Root)
	require.Equal(t, uint32(3), root.Nlink)
	require.Equal(t, int64(5), tr.Bytes())
}
