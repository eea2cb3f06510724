package vfs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/vfstest"
)

// TestUpperFilesRemovedInTheBackground creates files through handles,
// removes half of them (their upper files are unlinked in the background),
// and checks that once the session is closed the upper directory holds
// exactly the upper files the tree references — and the same after
// recovery.
func TestUpperFilesRemovedInTheBackground(t *testing.T) {
	blobs := vfstest.NewBlobs()
	opts := vfstest.Options(t, blobs)
	s, err := vfs.Create(ctx, opts, vfs.Tree{}, "")
	require.NoError(t, err)
	const n = 100
	for i := range n {
		h, err := s.OpenFile(ctx, p(fmt.Sprintf("f%03d", i)), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		require.NoError(t, err)
		_, err = h.WriteAt([]byte(fmt.Sprintf("content %d", i)), 0)
		require.NoError(t, err)
		require.NoError(t, h.Close())
	}
	for i := 0; i < n; i += 2 {
		require.NoError(t, s.Remove(ctx, p(fmt.Sprintf("f%03d", i)), vfs.RemoveOptions{}))
	}
	referenced := func(s *vfs.Session) []string {
		var out []string
		_ = s.Tree().Walk(vfs.Root, func(_ vfs.Path, nd vfs.Node) error {
			if nd.Upper != 0 {
				out = append(out, strconv.FormatUint(nd.Upper, 16))
			}
			return nil
		})
		sort.Strings(out)
		return out
	}
	want := referenced(s)
	require.Len(t, want, n/2)
	require.NoError(t, s.Close())
	require.Equal(t, want, upperFiles(t, opts.Dir), "closing waited for the dropped upper files to be removed")

	s, err = vfs.Open(ctx, opts)
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, want, referenced(s))
	for i := 1; i < n; i += 2 {
		require.Equal(t, fmt.Sprintf("content %d", i), read(t, s, fmt.Sprintf("f%03d", i)))
	}
}

// upperFiles lists a session directory's upper files, sorted.
func upperFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "upper"))
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}
