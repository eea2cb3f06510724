package osfile_test

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/internal/osfile"
)

// TestOpenFileFlags: the flags vfsd uses behave as os.OpenFile's.
func TestOpenFileFlags(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "f")

	_, err := osfile.Open(name)
	require.ErrorIs(t, err, fs.ErrNotExist)

	f, err := osfile.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	require.NoError(t, err)
	_, err = f.WriteString("hello")
	require.NoError(t, err)
	b := make([]byte, 5)
	_, err = f.ReadAt(b, 0)
	require.NoError(t, err)
	require.Equal(t, "hello", string(b))
	require.NoError(t, f.Close())

	_, err = osfile.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	require.ErrorIs(t, err, fs.ErrExist, "O_EXCL refuses an existing file")

	f, err = osfile.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	require.NoError(t, err)
	fi, err := f.Stat()
	require.NoError(t, err)
	require.Zero(t, fi.Size(), "O_TRUNC empties it")
	require.NoError(t, f.Close())

	f, err = osfile.OpenFile(name, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("abc")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	f, err = osfile.Open(name)
	require.NoError(t, err)
	got, err := io.ReadAll(f)
	require.NoError(t, err)
	require.Equal(t, "abc", string(got))
	_, err = f.Write([]byte("x"))
	require.Error(t, err, "opened for reading only")
	require.NoError(t, f.Close())

	ro := filepath.Join(dir, "ro")
	f, err = osfile.OpenFile(ro, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o444)
	require.NoError(t, err)
	_, err = f.WriteString("written through the creating handle")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	fi, err = os.Stat(ro)
	require.NoError(t, err)
	require.Zero(t, fi.Mode().Perm()&0o200, "created read-only")
}

// TestRemoveAndRenameWhileOpen: a file open through osfile can be removed
// and renamed, and the open handle keeps reading it, on Windows as on Unix.
func TestRemoveAndRenameWhileOpen(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	require.NoError(t, os.WriteFile(a, []byte("content"), 0o600))

	f, err := osfile.Open(a)
	require.NoError(t, err)
	require.NoError(t, os.Rename(a, b), "rename while open")
	require.NoError(t, os.Remove(b), "remove while open")
	got, err := io.ReadAll(f)
	require.NoError(t, err)
	require.Equal(t, "content", string(got), "the open handle still reads")
	require.NoError(t, f.Close())
	_, err = os.Stat(b)
	require.ErrorIs(t, err, fs.ErrNotExist)

	w, err := osfile.OpenFile(a, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	require.NoError(t, err)
	require.NoError(t, os.Remove(a), "remove while open for writing")
	require.NoError(t, w.Close())
}
