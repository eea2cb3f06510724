package vfs_test

import (
	"context"
	"io"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/vfstest"
)

var ctx = context.Background()

func p(s string) vfs.Path { return vfs.MustPath(s) }

func write(t *testing.T, s *vfs.Session, path, content string) vfs.WriteResult {
	t.Helper()
	r, err := s.WriteFile(ctx, p(path), strings.NewReader(content), vfs.WriteOptions{CreateParents: true})
	require.NoError(t, err)
	return r
}

func read(t *testing.T, s *vfs.Session, path string) string {
	t.Helper()
	b, _, err := s.ReadFile(ctx, p(path))
	require.NoError(t, err)
	return string(b)
}

func ptr(v uint64) *uint64 { return &v }

func TestWriteFileModes(t *testing.T) {
	tests := []struct {
		name     string
		existing bool
		opts     vfs.WriteOptions
		content  string
		want     string
		created  bool
		code     vfs.Code
	}{
		{name: "create new", opts: vfs.WriteOptions{}, content: "hi", want: "hi", created: true},
		{name: "create replaces", existing: true, content: "new", want: "new"},
		{name: "overwrite existing", existing: true, opts: vfs.WriteOptions{Mode: vfs.WriteOverwrite}, content: "o", want: "o"},
		{name: "overwrite missing", opts: vfs.WriteOptions{Mode: vfs.WriteOverwrite}, content: "o", code: vfs.CodeNotFound},
		{name: "create_new missing", opts: vfs.WriteOptions{Mode: vfs.WriteCreateNew}, content: "n", want: "n", created: true},
		{name: "create_new existing", existing: true, opts: vfs.WriteOptions{Mode: vfs.WriteCreateNew}, content: "n", code: vfs.CodeExists},
		{name: "append existing", existing: true, opts: vfs.WriteOptions{Mode: vfs.WriteAppend}, content: "+", want: "old+"},
		{name: "append missing", opts: vfs.WriteOptions{Mode: vfs.WriteAppend}, content: "+", want: "+", created: true},
		{name: "expected version ok", existing: true, opts: vfs.WriteOptions{ExpectedVersion: ptr(1)}, content: "v", want: "v"},
		{name: "expected version stale", existing: true, opts: vfs.WriteOptions{ExpectedVersion: ptr(5)}, content: "v", code: vfs.CodeConflict},
		{name: "expected absent", opts: vfs.WriteOptions{ExpectedVersion: ptr(0)}, content: "v", want: "v", created: true},
		{name: "append expected stale", existing: true, opts: vfs.WriteOptions{Mode: vfs.WriteAppend, ExpectedVersion: ptr(2)}, content: "v", code: vfs.CodeConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := vfstest.NewSession(t)
			if tt.existing {
				write(t, s, "f.txt", "old")
			}
			before := s.Tree().Encode()
			res, err := s.WriteFile(ctx, p("f.txt"), strings.NewReader(tt.content), tt.opts)
			if tt.code != "" {
				require.Equal(t, tt.code, vfs.CodeOf(err), "err: %v", err)
				require.Equal(t, before, s.Tree().Encode(), "a failed write changes nothing")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, read(t, s, "f.txt"))
			require.Equal(t, tt.created, res.Created)
			require.Equal(t, int64(len(tt.want)), res.Node.Size)
			require.Equal(t, vfs.EncodingUTF8, res.Node.Encoding)
		})
	}
}

func TestWriteFileCreateParentsAndEncoding(t *testing.T) {
	s, blobs := vfstest.NewSession(t)
	_, err := s.WriteFile(ctx, p("a/b/c.bin"), strings.NewReader("x\x00y"), vfs.WriteOptions{})
	require.Equal(t, vfs.CodeNotFound, vfs.CodeOf(err))
	res, err := s.WriteFile(ctx, p("a/b/c.bin"), strings.NewReader("x\x00y"), vfs.WriteOptions{CreateParents: true})
	require.NoError(t, err)
	require.Equal(t, vfs.EncodingBinary, res.Node.Encoding)
	require.Equal(t, uint64(1), res.Node.Version)
	data, ok := blobs.Get(res.Node.Blob)
	require.True(t, ok, "content lives in the blob store")
	require.Equal(t, "x\x00y", string(data))
	require.Zero(t, blobs.Pins(), "every put is unpinned once referenced")
	entries, err := os.ReadDir(s.Dir() + "/upper")
	require.NoError(t, err)
	require.Empty(t, entries, "whole-file writes never touch the upper dir")
}

func TestReadRangeAndList(t *testing.T) {
	s, _ := vfstest.NewSession(t)
	write(t, s, "d/b.txt", "hello world")
	write(t, s, "d/a.txt", "a")
	_, err := s.Mkdir(ctx, p("d/sub"), vfs.MkdirOptions{})
	require.NoError(t, err)
	buf := make([]byte, 5)
	n, err := s.ReadAt(ctx, p("d/b.txt"), buf, 6)
	require.NoError(t, err)
	require.Equal(t, "world", string(buf[:n]))
	_, err = s.ReadAt(ctx, p("d/b.txt"), buf, 20)
	require.ErrorIs(t, err, io.EOF)

	entries, err := s.List(ctx, p("d"))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name)
	}
	require.Equal(t, []string{"a.txt", "b.txt", "sub"}, names)

	_, err = s.List(ctx, p("d/a.txt"))
	require.Equal(t, vfs.CodeNotDir, vfs.CodeOf(err))
	_, err = s.Stat(ctx, p("d/a.txt/x"))
	require.Equal(t, vfs.CodeNotDir, vfs.CodeOf(err))
	_, err = s.Stat(ctx, p("nope/x"))
	require.Equal(t, vfs.CodeNotFound, vfs.CodeOf(err))
	_, _, err = s.ReadFile(ctx, p("d"))
	require.Equal(t, vfs.CodeIsDir, vfs.CodeOf(err))
}

func TestMetadataOps(t *testing.T) {
	s, _ := vfstest.NewSession(t)
	write(t, s, "f", "x")
	n, err := s.Chmod(ctx, p("f"), 0o600)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), n.Mode)
	require.Equal(t, uint64(2), n.Version)
	mt := time.Date(2020, 5, 6, 7, 8, 9, 123e6, time.UTC)
	n, err = s.SetTimes(ctx, p("f"), mt)
	require.NoError(t, err)
	require.Equal(t, mt, n.UpdatedAt())
	require.Equal(t, uint64(3), n.Version)

	ln, err := s.Symlink(ctx, "f", p("ln"))
	require.NoError(t, err)
	require.True(t, ln.IsSymlink())
	target, err := s.Readlink(ctx, p("ln"))
	require.NoError(t, err)
	require.Equal(t, "f", target)
	_, err = s.Symlink(ctx, "", p("ln2"))
	require.Equal(t, vfs.CodeInvalid, vfs.CodeOf(err))
	_, _, err = s.ReadFile(ctx, p("ln"))
	require.Equal(t, vfs.CodeInvalid, vfs.CodeOf(err))

	_, err = s.Mkdir(ctx, p("a/b/c"), vfs.MkdirOptions{Parents: true})
	require.NoError(t, err)
	seq := s.Info().Seq
	_, err = s.Mkdir(ctx, p("a/b/c"), vfs.MkdirOptions{Parents: true})
	require.NoError(t, err)
	require.Equal(t, seq, s.Info().Seq, "mkdir -p of an existing dir journals nothing")

	require.Equal(t, vfs.CodeNotEmpty, vfs.CodeOf(s.Remove(ctx, p("a"), vfs.RemoveOptions{})))
	require.NoError(t, s.Remove(ctx, p("a"), vfs.RemoveOptions{Recursive: true}))
	require.NoError(t, s.Rename(ctx, p("f"), p("g/h"), vfs.RenameOptions{CreateParents: true}))
	require.Equal(t, "x", read(t, s, "g/h"))

	n, err = s.Truncate(ctx, p("g/h"), 0)
	require.NoError(t, err)
	require.Zero(t, n.Size)
	write(t, s, "t", "0123456789")
	n, err = s.Truncate(ctx, p("t"), 4)
	require.NoError(t, err)
	require.Equal(t, int64(4), n.Size)
	require.Equal(t, "0123", read(t, s, "t"))
	n, err = s.Truncate(ctx, p("t"), 6)
	require.NoError(t, err)
	require.Equal(t, "0123\x00\x00", read(t, s, "t"))
	_, err = s.Truncate(ctx, p("t"), -1)
	require.Equal(t, vfs.CodeInvalid, vfs.CodeOf(err))
}

func TestPolicyHook(t *testing.T) {
	blobs := vfstest.NewBlobs()
	opts := vfstest.Options(t, blobs)
	opts.Policy = func(a vfs.Access, path vfs.Path) error {
		if a == vfs.AccessWrite && path.HasPrefix("ro") {
			return os.ErrPermission
		}
		return nil
	}
	s, err := vfs.Create(ctx, opts, vfs.Tree{}, "")
	require.NoError(t, err)
	defer s.Close()
	_, err = s.WriteFile(ctx, p("ro/x"), strings.NewReader("x"), vfs.WriteOptions{CreateParents: true})
	require.ErrorIs(t, err, vfs.ErrForbidden)
	err = s.Rename(ctx, p("ro"), p("rw"), vfs.RenameOptions{})
	require.ErrorIs(t, err, vfs.ErrForbidden, "the policy is asked before the tree")
	_, err = s.WriteFile(ctx, p("rw/x"), strings.NewReader("x"), vfs.WriteOptions{CreateParents: true})
	require.NoError(t, err)
	err = s.Rename(ctx, p("rw/x"), p("ro/x"), vfs.RenameOptions{})
	require.ErrorIs(t, err, vfs.ErrForbidden)
}

func TestHandleCopyUpCommitAndLiveSize(t *testing.T) {
	s, _ := vfstest.NewSession(t)
	w := write(t, s, "f", "hello")

	ro, err := s.OpenFile(ctx, p("f"), os.O_RDONLY, 0)
	require.NoError(t, err)
	buf := make([]byte, 5)
	_, err = ro.ReadAt(buf, 0)
	require.NoError(t, err)
	upper, _ := os.ReadDir(s.Dir() + "/upper")
	require.Empty(t, upper, "a read-only open never copies")
	_, err = ro.WriteAt([]byte("x"), 0)
	require.Equal(t, vfs.CodeInvalid, vfs.CodeOf(err))

	h, err := s.OpenFile(ctx, p("f"), os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = h.WriteAt([]byte(" world"), 5)
	require.NoError(t, err)
	upper, _ = os.ReadDir(s.Dir() + "/upper")
	require.Len(t, upper, 1, "the first write copied up")

	n, err := s.Stat(ctx, p("f"))
	require.NoError(t, err)
	require.Equal(t, int64(11), n.Size, "stat sees the live size")
	require.Equal(t, w.Node.Version, n.Version, "not committed yet")
	require.Equal(t, w.Node.Ino, n.Ino, "copy-up keeps the inode")
	require.Equal(t, "hello world", read(t, s, "f"), "session reads see handle writes")
	_, err = ro.ReadAt(buf, 6)
	require.NoError(t, err)
	require.Equal(t, "world", string(buf), "other handles see them too")

	require.NoError(t, h.Flush())
	n, _ = s.Stat(ctx, p("f"))
	require.Equal(t, w.Node.Version+1, n.Version, "flush commits one change")
	require.NoError(t, h.Truncate(2))
	n, _ = s.Stat(ctx, p("f"))
	require.Equal(t, int64(2), n.Size)
	require.Equal(t, w.Node.Version+2, n.Version)
	require.NoError(t, h.Sync())
	require.NoError(t, h.Close())
	require.NoError(t, h.Close(), "closing twice is fine")
	require.NoError(t, ro.Close())
	_, err = h.WriteAt([]byte("x"), 0)
	require.Equal(t, vfs.CodeClosed, vfs.CodeOf(err))
}

func TestHandleCreateExclTruncAppend(t *testing.T) {
	s, _ := vfstest.NewSession(t)
	h, err := s.OpenFile(ctx, p("new"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	require.NoError(t, err)
	n, _ := h.Stat()
	require.Equal(t, os.FileMode(0o600), n.Mode)
	require.NoError(t, h.Close())
	_, err = s.OpenFile(ctx, p("new"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0)
	require.Equal(t, vfs.CodeExists, vfs.CodeOf(err))
	_, err = s.OpenFile(ctx, p("missing"), os.O_RDONLY, 0)
	require.Equal(t, vfs.CodeNotFound, vfs.CodeOf(err))
	_, err = s.OpenFile(ctx, vfs.Root, os.O_RDONLY, 0)
	require.Equal(t, vfs.CodeIsDir, vfs.CodeOf(err))

	write(t, s, "log", "a")
	h, err = s.OpenFile(ctx, p("log"), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = h.WriteAt([]byte("b"), 0)
	require.NoError(t, err)
	_, err = h.WriteAt([]byte("c"), 0)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	require.Equal(t, "abc", read(t, s, "log"))

	h, err = s.OpenFile(ctx, p("log"), os.O_WRONLY|os.O_TRUNC, 0)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	require.Equal(t, "", read(t, s, "log"))
}

func TestHandleFollowsRenameAndDetachesOnRemove(t *testing.T) {
	s, _ := vfstest.NewSession(t)
	write(t, s, "d/f", "data")
	h, err := s.OpenFile(ctx, p("d/f"), os.O_RDWR, 0)
	require.NoError(t, err)
	require.NoError(t, s.Rename(ctx, p("d"), p("e"), vfs.RenameOptions{}))
	require.Equal(t, p("e/f"), h.Path())
	_, err = h.WriteAt([]byte("D"), 0)
	require.NoError(t, err)
	require.NoError(t, h.Flush())
	require.Equal(t, "Data", read(t, s, "e/f"))

	// Remove the file: the handle keeps its content privately, like an
	// unlinked POSIX file.
	require.NoError(t, s.Remove(ctx, p("e/f"), vfs.RemoveOptions{}))
	require.True(t, h.Detached())
	_, err = h.WriteAt([]byte("!"), 4)
	require.NoError(t, err)
	buf := make([]byte, 5)
	_, err = h.ReadAt(buf, 0)
	require.NoError(t, err)
	require.Equal(t, "Data!", string(buf))
	_, err = s.Stat(ctx, p("e/f"))
	require.Equal(t, vfs.CodeNotFound, vfs.CodeOf(err))
	require.NoError(t, h.Close())
	upper, _ := os.ReadDir(s.Dir() + "/upper")
	require.Empty(t, upper, "the orphan's upper file is removed on close")

	// Replace a file by rename: handles on the replaced file detach.
	write(t, s, "a", "A")
	write(t, s, "b", "B")
	hb, err := s.OpenFile(ctx, p("b"), os.O_RDONLY, 0)
	require.NoError(t, err)
	require.NoError(t, s.Rename(ctx, p("a"), p("b"), vfs.RenameOptions{}))
	require.True(t, hb.Detached())
	_, err = hb.ReadAt(buf[:1], 0)
	require.NoError(t, err)
	require.Equal(t, "B", string(buf[:1]))
	require.Equal(t, "A", read(t, s, "b"))
	require.NoError(t, hb.Close())
}

func TestToolWriteOverOpenHandle(t *testing.T) {
	s, _ := vfstest.NewSession(t)
	write(t, s, "f", "12345")
	h, err := s.OpenFile(ctx, p("f"), os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = h.WriteAt([]byte("x"), 0)
	require.NoError(t, err)
	write(t, s, "f", "tool")
	require.False(t, h.Detached(), "a content write keeps the file (and its inode)")
	buf := make([]byte, 4)
	_, err = h.ReadAt(buf, 0)
	require.NoError(t, err)
	require.Equal(t, "tool", string(buf))
	_, err = h.WriteAt([]byte("T"), 0)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	require.Equal(t, "Tool", read(t, s, "f"))
}

func TestRecoveryReproducesTree(t *testing.T) {
	blobs := vfstest.NewBlobs()
	opts := vfstest.Options(t, blobs)
	s, err := vfs.Create(ctx, opts, vfs.Tree{}, "")
	require.NoError(t, err)
	write(t, s, "a/b/c.txt", "one")
	write(t, s, "a/b/c.txt", "two")
	_, err = s.Symlink(ctx, "b", p("a/ln"))
	require.NoError(t, err)
	require.NoError(t, s.Rename(ctx, p("a/b"), p("z"), vfs.RenameOptions{}))
	h, err := s.OpenFile(ctx, p("z/c.txt"), os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = h.WriteAt([]byte("TWO and more"), 0)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	h, err = s.OpenFile(ctx, p("z/c.txt"), os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = h.WriteAt([]byte("uncommitted tail"), 100)
	require.NoError(t, err)
	want := s.Tree().Encode() // committed state: the open handle's write is not in it
	require.NoError(t, s.Close())

	s2, err := vfs.Open(ctx, opts)
	require.NoError(t, err)
	defer s2.Close()
	require.Equal(t, want, s2.Tree().Encode(), "replay reproduces the tree byte for byte")
	require.Equal(t, "TWO and more", read(t, s2, "z/c.txt"), "uncommitted writes are cut back to the committed size")
	write(t, s2, "after", "ok")
	_, err = s2.OpenFile(ctx, p("z/c.txt"), os.O_RDWR, 0)
	require.NoError(t, err)
}

func TestResetAndResetTo(t *testing.T) {
	s, _ := vfstest.NewSession(t)
	write(t, s, "f", "before")
	base := s.Tree()
	write(t, s, "f", "after")
	write(t, s, "g", "new")
	h, err := s.OpenFile(ctx, p("g"), os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = h.WriteAt([]byte("G"), 0)
	require.NoError(t, err)
	keep, err := s.OpenFile(ctx, p("f"), os.O_RDONLY, 0)
	require.NoError(t, err)

	var notices []vfs.Op
	cancel := s.Subscribe(func(n vfs.Notice) { notices = append(notices, n.Event.Op) })
	defer cancel()
	require.NoError(t, s.ResetTo(ctx, base, "snap-1"))
	require.Equal(t, []vfs.Op{vfs.OpRestore}, notices)
	require.Equal(t, "before", read(t, s, "f"))
	_, err = s.Stat(ctx, p("g"))
	require.Equal(t, vfs.CodeNotFound, vfs.CodeOf(err))
	require.True(t, h.Detached(), "g is gone from the restored tree")
	require.False(t, keep.Detached(), "f is the same file (same inode) in the restored tree")
	buf := make([]byte, 6)
	_, err = keep.ReadAt(buf, 0)
	require.NoError(t, err)
	require.Equal(t, "before", string(buf))
	require.NoError(t, h.Close())
	require.NoError(t, keep.Close())
	require.Equal(t, "snap-1", s.Info().Ref, "the restored snapshot is the new reference")
	require.Zero(t, s.Info().Dirty)

	require.NoError(t, s.Reset(ctx))
	require.Equal(t, 1, s.Tree().Len(), "reset returns to the initial (empty) tree")
	upper, _ := os.ReadDir(s.Dir() + "/upper")
	require.Empty(t, upper)
}

func TestRestoreIsJournaledAndCompactedOnOpen(t *testing.T) {
	blobs := vfstest.NewBlobs()
	opts := vfstest.Options(t, blobs)
	trees := map[string]vfs.Tree{}
	opts.LoadTree = func(_ context.Context, id string) (vfs.Tree, error) { return trees[id], nil }
	s, err := vfs.Create(ctx, opts, vfs.Tree{}, "")
	require.NoError(t, err)
	write(t, s, "f", "one")
	trees["snap-1"] = s.Tree()
	write(t, s, "f", "two")
	require.NoError(t, s.ResetTo(ctx, trees["snap-1"], "snap-1"))
	write(t, s, "g", "after")
	f, err := s.Freeze(ctx)
	require.NoError(t, err)
	require.NoError(t, s.MarkSnapshot(ctx, f, "snap-2"))
	f.Release()
	write(t, s, "h", "dirty")
	want := s.Tree().Encode()
	wantInfo := s.Info()
	require.NoError(t, s.Close())

	s2, err := vfs.Open(ctx, vfs.Options{Dir: opts.Dir, Blobs: blobs, LoadTree: opts.LoadTree, Clock: opts.Clock})
	require.NoError(t, err)
	require.Equal(t, want, s2.Tree().Encode())
	info := s2.Info()
	require.Equal(t, "snap-1", info.Base, "the journal was compacted to start at the restore")
	require.Equal(t, "snap-2", info.Ref)
	require.Equal(t, wantInfo.Dirty, info.Dirty)
	require.Equal(t, wantInfo.Seq, info.Seq, "compaction keeps the events' numbers (positions the call log recorded stay valid)")
	require.Equal(t, wantInfo.Seq-3, s2.HistoryStart(), "the history starts at the restore: write g, the snapshot mark and write h follow")
	require.NoError(t, s2.Close())

	s3, err := vfs.Open(ctx, vfs.Options{Dir: opts.Dir, Blobs: blobs, LoadTree: opts.LoadTree, Clock: opts.Clock})
	require.NoError(t, err, "the compacted journal opens again")
	require.Equal(t, want, s3.Tree().Encode())
	require.Equal(t, "snap-2", s3.Info().Ref)
	require.NoError(t, s3.Close())
}

func TestMarkSnapshotAfterRestoreIsIgnored(t *testing.T) {
	s, _ := vfstest.NewSession(t)
	write(t, s, "f", "x")
	f, err := s.Freeze(ctx)
	require.NoError(t, err)
	defer f.Release()
	require.NoError(t, s.ResetTo(ctx, vfs.EmptyTree(0), "other"))
	require.NoError(t, s.MarkSnapshot(ctx, f, "stale"))
	require.Equal(t, "other", s.Info().Ref, "a snapshot frozen before a restore does not become the reference")
}

func TestPreparedDir(t *testing.T) {
	dir := t.TempDir() + "/slot"
	require.NoError(t, vfs.PrepareDir(dir))
	_, err := vfs.ReadHeader(dir)
	require.ErrorIs(t, err, vfs.ErrNoSession)
	blobs := vfstest.NewBlobs()
	opts := vfstest.Options(t, blobs)
	opts.Dir = dir
	s, err := vfs.Create(ctx, opts, vfs.Tree{}, "")
	require.NoError(t, err)
	write(t, s, "a", "b")
	require.NoError(t, s.Close())
	h, err := vfs.ReadHeader(dir)
	require.NoError(t, err)
	require.Equal(t, "test", h.Session)
	_, err = vfs.Create(ctx, opts, vfs.Tree{}, "")
	require.Error(t, err, "a used directory cannot hold a second session")
}

func TestReinitChangesWhatResetReturnsTo(t *testing.T) {
	blobs := vfstest.NewBlobs()
	opts := vfstest.Options(t, blobs)
	trees := map[string]vfs.Tree{}
	opts.LoadTree = func(_ context.Context, id string) (vfs.Tree, error) { return trees[id], nil }
	s, err := vfs.Create(ctx, opts, vfs.Tree{}, "")
	require.NoError(t, err)
	write(t, s, "host.txt", "imported again")
	trees["import-2"] = s.Tree()
	require.NoError(t, s.Reinit(ctx, trees["import-2"], "import-2"))
	write(t, s, "agent.txt", "work")
	require.NoError(t, s.Reset(ctx))
	require.Equal(t, "imported again", read(t, s, "host.txt"))
	_, err = s.Stat(ctx, p("agent.txt"))
	require.Equal(t, vfs.CodeNotFound, vfs.CodeOf(err))
	require.NoError(t, s.Close())

	s2, err := vfs.Open(ctx, vfs.Options{Dir: opts.Dir, Blobs: blobs, LoadTree: opts.LoadTree, Clock: opts.Clock})
	require.NoError(t, err)
	defer s2.Close()
	require.Equal(t, "import-2", s2.Info().Initial, "the new initial state survives recovery and compaction")
}

func TestSymlinkTargetMustBeUTF8(t *testing.T) {
	s, _ := vfstest.NewSession(t)
	_, err := s.Symlink(ctx, "bad\xff", p("ln"))
	require.Equal(t, vfs.CodeInvalid, vfs.CodeOf(err))
}

func TestRestoreNeverReusesInodes(t *testing.T) {
	blobs := vfstest.NewBlobs()
	opts := vfstest.Options(t, blobs)
	s, err := vfs.Create(ctx, opts, vfs.Tree{}, "")
	require.NoError(t, err)
	base := vfs.EmptyTree(s.Info().Created.UnixMilli()) // what snapshot "" loads
	write(t, s, "a", "a")
	late := write(t, s, "late", "created after the base").Node.Ino
	require.NoError(t, s.ResetTo(ctx, base, ""))
	fresh := write(t, s, "fresh", "after the restore").Node.Ino
	require.Greater(t, fresh, late, "a restore keeps the inode high-water mark")
	want := s.Tree().Encode()
	require.NoError(t, s.Close())

	// Replay, and the compaction it does, keep it too.
	s2, err := vfs.Open(ctx, opts)
	require.NoError(t, err)
	require.Equal(t, want, s2.Tree().Encode())
	require.NoError(t, s2.Close())
	s3, err := vfs.Open(ctx, opts)
	require.NoError(t, err)
	defer s3.Close()
	require.Equal(t, want, s3.Tree().Encode(), "after compaction")
	require.Greater(t, write(t, s3, "later", "x").Node.Ino, fresh)
}

// TestCreatedFileJournalRecords: a file created for writing, written, given
// its times and closed — what tar does for every file — is two journal
// records (the create with its upper file, the commit with the times),
// and replays to the same file after a reopen.
func TestCreatedFileJournalRecords(t *testing.T) {
	blobs := vfstest.NewBlobs()
	opts := vfstest.Options(t, blobs)
	s, err := vfs.Create(ctx, opts, vfs.Tree{}, "")
	require.NoError(t, err)
	before := s.Info().Seq
	h, err := s.OpenFile(ctx, p("new.txt"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	require.NoError(t, err)
	n, err := s.Stat(ctx, p("new.txt"))
	require.NoError(t, err)
	require.NotZero(t, n.Upper, "created straight into an upper file")
	_, err = h.WriteAt([]byte("hello"), 0)
	require.NoError(t, err)
	mtime := time.Date(2001, 2, 3, 4, 5, 6, 7, time.UTC)
	_, err = s.Utimens(ctx, p("new.txt"), vfs.UtimeOmit, vfs.At(mtime))
	require.NoError(t, err)
	require.NoError(t, h.Close())
	require.Equal(t, uint64(2), s.Info().Seq-before)
	n, err = s.Stat(ctx, p("new.txt"))
	require.NoError(t, err)
	require.Equal(t, int64(5), n.Size)
	require.True(t, n.UpdatedAt().Equal(mtime), "the write did not move the time set after it: %v", n.UpdatedAt())

	// A file that exists already keeps its content: no upper file is made.
	write(t, s, "old.txt", "old")
	h, err = s.OpenFile(ctx, p("old.txt"), os.O_WRONLY|os.O_CREATE, 0o640)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	require.Equal(t, "old", read(t, s, "old.txt"))

	require.NoError(t, s.Close())
	s, err = vfs.Open(ctx, opts)
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, "hello", read(t, s, "new.txt"))
	n, err = s.Stat(ctx, p("new.txt"))
	require.NoError(t, err)
	require.True(t, n.UpdatedAt().Equal(mtime))
	require.Equal(t, fs.FileMode(0o640), n.Mode.Perm())
}

// TestTruncatingOpenJournalRecords: opening a file with content with
// O_TRUNC for writing, then writing and closing it (what a shell's > and
// git's COMMIT_EDITMSG do) is two journal records: the truncation with its
// new upper file, and the commit.
func TestTruncatingOpenJournalRecords(t *testing.T) {
	blobs := vfstest.NewBlobs()
	opts := vfstest.Options(t, blobs)
	s, err := vfs.Create(ctx, opts, vfs.Tree{}, "")
	require.NoError(t, err)
	write(t, s, "f", "old content")
	before := s.Info().Seq
	h, err := s.OpenFile(ctx, p("f"), os.O_WRONLY|os.O_TRUNC, 0)
	require.NoError(t, err)
	require.Equal(t, "", read(t, s, "f"))
	_, err = h.WriteAt([]byte("new"), 0)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	require.Equal(t, uint64(2), s.Info().Seq-before)
	require.Equal(t, "new", read(t, s, "f"))

	// An empty file has nothing to truncate: no event, no upper file.
	write(t, s, "e", "")
	before = s.Info().Seq
	h, err = s.OpenFile(ctx, p("e"), os.O_WRONLY|os.O_TRUNC, 0)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	require.Equal(t, before, s.Info().Seq)

	require.NoError(t, s.Close())
	s, err = vfs.Open(ctx, opts)
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, "new", read(t, s, "f"))
	require.Equal(t, "", read(t, s, "e"))
}

// TestWriteDeclaredEncoding: the writer's declared encoding is kept with
// the file, through the tree's encoding (what snapshots store) and an
// append; content declared UTF-8 that is not is refused, changing nothing.
func TestWriteDeclaredEncoding(t *testing.T) {
	s, blobs := vfstest.NewSession(t)
	for _, c := range []struct {
		name, content  string
		declared, want vfs.Encoding
		code           vfs.Code
	}{
		{name: "text declared binary", content: "hello", declared: vfs.EncodingBinary, want: vfs.EncodingBinary},
		{name: "text with NUL declared utf-8", content: "a\x00b", declared: vfs.EncodingUTF8, want: vfs.EncodingUTF8},
		{name: "text with NUL undeclared", content: "a\x00b", want: vfs.EncodingBinary},
		{name: "text undeclared", content: "héllo", want: vfs.EncodingUTF8},
		{name: "invalid UTF-8 declared utf-8", content: "a\xffb", declared: vfs.EncodingUTF8, code: vfs.CodeInvalid},
		{name: "a rune cut at the end declared utf-8", content: "a\xc3", declared: vfs.EncodingUTF8, code: vfs.CodeInvalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := s.Tree().Encode()
			res, err := s.WriteFile(ctx, p("f"), strings.NewReader(c.content), vfs.WriteOptions{Encoding: c.declared})
			if c.code != "" {
				require.Equal(t, c.code, vfs.CodeOf(err), "err: %v", err)
				require.Equal(t, before, s.Tree().Encode(), "a refused write changes nothing")
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, res.Node.Encoding)
			_, n, _, err := vfs.DecodeNode(vfs.AppendNode(nil, "f", res.Node))
			require.NoError(t, err)
			require.Equal(t, c.want, n.Encoding, "the hint is in the node's record, which snapshots store")
		})
	}
	_, err := s.WriteFile(ctx, p("g"), strings.NewReader("x\x00"), vfs.WriteOptions{Encoding: vfs.EncodingUTF8})
	require.NoError(t, err)
	res, err := s.WriteFile(ctx, p("g"), strings.NewReader("y\x00"), vfs.WriteOptions{Mode: vfs.WriteAppend, Encoding: vfs.EncodingUTF8})
	require.NoError(t, err)
	require.Equal(t, vfs.EncodingUTF8, res.Node.Encoding, "an append keeps a declared hint for the whole file")
	_, err = s.WriteFile(ctx, p("g"), strings.NewReader("\xff"), vfs.WriteOptions{Mode: vfs.WriteAppend, Encoding: vfs.EncodingUTF8})
	require.Equal(t, vfs.CodeInvalid, vfs.CodeOf(err))
	require.Equal(t, "x\x00y\x00", read(t, s, "g"))
	require.Zero(t, blobs.Pins())

	b := s.NewBatch()
	require.NoError(t, b.Write(ctx, p("h"), strings.NewReader("text"), vfs.WriteOptions{Encoding: vfs.EncodingBinary}))
	_, err = b.Commit(ctx)
	require.NoError(t, err)
	n, err := s.Stat(ctx, p("h"))
	require.NoError(t, err)
	require.Equal(t, vfs.EncodingBinary, n.Encoding, "a batch write keeps the hint too")
}

// TestTextSniffer: a text sniffer tells UTF-8 with NUL bytes from bytes
// that are not UTF-8, in any chunking; a plain one stops at the first NUL.
func TestTextSniffer(t *testing.T) {
	for content, valid := range map[string]bool{"": true, "a\x00b": true, "é\x00ü": true, "a\x00\xff": false, "\xc3": false, "\xff\x00": false} {
		for chunk := 1; chunk <= 3; chunk++ {
			sn := vfs.NewTextSniffer(nil)
			for i := 0; i < len(content); i += chunk {
				_, _ = sn.Write([]byte(content[i:min(i+chunk, len(content))]))
			}
			require.Equal(t, valid, sn.ValidUTF8(), "%q in chunks of %d", content, chunk)
			require.Equal(t, vfs.DetectEncoding([]byte(content)), sn.Encoding(), "%q", content)
		}
		plain := vfs.NewSniffer(nil)
		_, _ = plain.Write([]byte(content))
		require.Equal(t, vfs.DetectEncoding([]byte(content)), plain.Encoding(), "%q", content)
	}
}
