package vfs_test

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/vfstest"
)

// quotaSession returns a session under quota q.
func quotaSession(t *testing.T, q vfs.Quota) *vfs.Session {
	t.Helper()
	opts := vfstest.Options(t, vfstest.NewBlobs())
	opts.Quota = q
	s, err := vfs.Create(ctx, opts, vfs.Tree{}, "")
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// requireQuota requires err to be a quota refusal: too_large, carrying
// EDQUOT for the FUSE mount.
func requireQuota(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, vfs.CodeTooLarge, vfs.CodeOf(err), "%v", err)
	require.True(t, errors.Is(err, syscall.EDQUOT), "%v", err)
	require.Contains(t, err.Error(), "quota")
}

// TestQuotaBytes: every way of growing a session past its byte quota is
// refused, and the refused change leaves the session exactly as it was.
func TestQuotaBytes(t *testing.T) {
	const limit = 1000
	cases := []struct {
		name string
		do   func(s *vfs.Session) error
	}{
		{"write_file", func(s *vfs.Session) error {
			_, err := s.WriteFile(ctx, p("big"), strings.NewReader(strings.Repeat("x", 600)), vfs.WriteOptions{})
			return err
		}},
		{"append", func(s *vfs.Session) error {
			_, err := s.WriteFile(ctx, p("a"), strings.NewReader(strings.Repeat("x", 600)), vfs.WriteOptions{Mode: vfs.WriteAppend})
			return err
		}},
		{"truncate", func(s *vfs.Session) error {
			_, err := s.Truncate(ctx, p("a"), 3<<30)
			return err
		}},
		{"handle write", func(s *vfs.Session) error {
			h, err := s.OpenFile(ctx, p("a"), os.O_RDWR, 0)
			if err != nil {
				return err
			}
			defer h.Close()
			_, err = h.WriteAt(make([]byte, 700), 500)
			return err
		}},
		{"handle truncate", func(s *vfs.Session) error {
			h, err := s.OpenFile(ctx, p("a"), os.O_RDWR, 0)
			if err != nil {
				return err
			}
			defer h.Close()
			return h.Truncate(3 << 30)
		}},
		{"batch", func(s *vfs.Session) error {
			b := s.NewBatch()
			if err := b.Write(ctx, p("b1"), strings.NewReader(strings.Repeat("y", 300)), vfs.WriteOptions{}); err != nil {
				return err
			}
			if err := b.Write(ctx, p("b2"), strings.NewReader(strings.Repeat("y", 300)), vfs.WriteOptions{}); err != nil {
				return err
			}
			_, err := b.Commit(ctx)
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := quotaSession(t, vfs.Quota{MaxBytes: limit})
			write(t, s, "a", strings.Repeat("a", 500))
			before := s.Tree().Encode()
			requireQuota(t, c.do(s))
			require.Equal(t, before, s.Tree().Encode(), "a refused change leaves the session as it was")
			require.Equal(t, strings.Repeat("a", 500), read(t, s, "a"))
			// What fits still goes through, and shrinking always does.
			write(t, s, "small", strings.Repeat("s", 400))
			_, err := s.Truncate(ctx, p("a"), 10)
			require.NoError(t, err)
		})
	}
}

// TestQuotaHandleWrites: bytes written through open handles count before
// they are committed, and a refused write lands nothing.
func TestQuotaHandleWrites(t *testing.T) {
	s := quotaSession(t, vfs.Quota{MaxBytes: 1000})
	h, err := s.OpenFile(ctx, p("f"), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0)
	require.NoError(t, err)
	defer h.Close()
	for range 9 {
		n, err := h.WriteAt(make([]byte, 100), 0)
		require.NoError(t, err)
		require.Equal(t, 100, n)
	}
	// Another file cannot take the room the uncommitted writes use.
	_, err = s.WriteFile(ctx, p("g"), strings.NewReader(strings.Repeat("g", 200)), vfs.WriteOptions{})
	requireQuota(t, err)
	_, err = h.WriteAt(make([]byte, 200), 0)
	requireQuota(t, err)
	n, err := h.Stat()
	require.NoError(t, err)
	require.EqualValues(t, 900, n.Size, "the refused write landed nothing")
	require.NoError(t, h.Flush())
	require.EqualValues(t, 900, s.Info().Bytes)
	// Rewriting in place needs no room.
	_, err = h.WriteAt(make([]byte, 100), 0)
	require.NoError(t, err)
	require.NoError(t, h.Flush())
	// Removing makes room; the handle's uncommitted growth goes with it.
	require.NoError(t, s.Remove(ctx, p("f"), vfs.RemoveOptions{}))
	require.NoError(t, h.Close())
	write(t, s, "g", strings.Repeat("g", 1000))
}

// TestQuotaNodes: the node quota counts files, directories and symlinks.
func TestQuotaNodes(t *testing.T) {
	s := quotaSession(t, vfs.Quota{MaxNodes: 3})
	write(t, s, "d/f", "1") // d and d/f
	_, err := s.Symlink(ctx, "f", p("d/l"))
	require.NoError(t, err)
	before := s.Tree().Encode()
	_, err = s.Mkdir(ctx, p("e"), vfs.MkdirOptions{})
	requireQuota(t, err)
	_, err = s.OpenFile(ctx, p("n"), os.O_RDWR|os.O_CREATE, 0)
	requireQuota(t, err)
	_, err = s.WriteFile(ctx, p("x/y/z"), strings.NewReader(""), vfs.WriteOptions{CreateParents: true})
	requireQuota(t, err)
	require.Equal(t, before, s.Tree().Encode())
	// Replacing a file adds no node.
	write(t, s, "d/f", "2")
	require.NoError(t, s.Remove(ctx, p("d/l"), vfs.RemoveOptions{}))
	write(t, s, "g", "ok")
}

// TestMaxFileSize: a size past MaxFileSize is too large whatever the quota
// (EFBIG through the mount, as pjdfstest's truncate/12.t expects), not a
// quota refusal (EDQUOT), and the file is left as it was.
func TestMaxFileSize(t *testing.T) {
	for _, q := range []vfs.Quota{{}, {MaxBytes: 1 << 30}} {
		s := quotaSession(t, q)
		p := vfs.MustPath("f")
		_, err := s.WriteFile(ctx, p, strings.NewReader("x"), vfs.WriteOptions{})
		require.NoError(t, err)
		_, err = s.Truncate(ctx, p, vfs.MaxFileSize+1)
		require.Equal(t, vfs.CodeTooLarge, vfs.CodeOf(err), "%v", err)
		require.False(t, errors.Is(err, syscall.EDQUOT), "%v", err)
		h, err := s.OpenFile(ctx, p, os.O_RDWR, 0)
		require.NoError(t, err)
		require.Equal(t, vfs.CodeTooLarge, vfs.CodeOf(h.Truncate(999999999999999)))
		_, err = h.WriteAt([]byte("y"), vfs.MaxFileSize)
		require.Equal(t, vfs.CodeTooLarge, vfs.CodeOf(err))
		require.NoError(t, h.Close())
		n, err := s.Stat(ctx, p)
		require.NoError(t, err)
		require.EqualValues(t, 1, n.Size)
	}
}
