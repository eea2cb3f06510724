package snapshot_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/snapshot/storetest"
	"github.com/vfsd/vfsd/vfs"
)

func TestMemoryStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) snapshot.Store { return snapshot.NewMemory() })
}

func TestLocalStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) snapshot.Store {
		s, err := snapshot.OpenLocal(t.TempDir())
		require.NoError(t, err)
		return s
	})
}

func openLocal(t *testing.T, dir string) *snapshot.LocalStore {
	t.Helper()
	s, err := snapshot.OpenLocal(dir)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func TestLocalLayout(t *testing.T) {
	dir := t.TempDir()
	s := openLocal(t, dir)

	marker, err := os.ReadFile(filepath.Join(dir, "store.json"))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(marker, &m))
	require.Equal(t, map[string]any{"format": "vfsd-store/1"}, m)

	for _, ns := range []string{"blobs", "snapshots"} {
		for _, fan := range []string{"00", "7f", "ff"} {
			fi, err := os.Stat(filepath.Join(dir, ns, fan))
			require.NoError(t, err)
			require.True(t, fi.IsDir())
		}
		entries, err := os.ReadDir(filepath.Join(dir, ns))
		require.NoError(t, err)
		require.Len(t, entries, 256)
	}

	data := []byte("laid out")
	h := storetest.Put(t, s, snapshot.Blobs, data, snapshot.PutOptions{})
	hx := h.String()
	path := filepath.Join(dir, "blobs", hx[:2], hx)
	require.Equal(t, path, s.ObjectPath(snapshot.Blobs, h))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o444), fi.Mode().Perm(), "objects are read-only")
	require.Equal(t, int64(len(data)), fi.Size())

	hr := storetest.Put(t, s, snapshot.Records, []byte("record"), snapshot.PutOptions{Deferred: true})
	rx := hr.String()
	_, err = os.Stat(filepath.Join(dir, "snapshots", rx[:2], rx))
	require.NoError(t, err)

	tmp, err := os.ReadDir(filepath.Join(dir, "tmp"))
	require.NoError(t, err)
	require.Empty(t, tmp, "no temporary file outlives its Put")

	// Open gives a read-only file.
	b, err := s.Open(context.Background(), snapshot.Blobs, h)
	require.NoError(t, err)
	fb, ok := b.(vfs.FileBlob)
	require.True(t, ok, "LocalStore.Open returns a vfs.FileBlob")
	_, err = fb.File().Write([]byte("x"))
	require.Error(t, err, "objects are opened read-only")
	_, err = fb.File().WriteAt([]byte("x"), 0)
	require.Error(t, err, "objects are opened read-only")
	require.NoError(t, b.Close())
	require.Equal(t, data, storetest.ReadAll(t, s, snapshot.Blobs, h))
}

// TestLocalCorruption documents what happens when an object is damaged on
// disk behind the store's back: Open and Stat do not hash, so they return
// the damaged bytes; Verify detects the damage; a Put of the original content
// deduplicates against the damaged object (it trusts names), so the remedy is
// Delete then Put.
func TestLocalCorruption(t *testing.T) {
	ctx := context.Background()
	s := openLocal(t, t.TempDir())
	data := []byte("precious content")
	h := storetest.Put(t, s, snapshot.Blobs, data, snapshot.PutOptions{})
	require.NoError(t, s.Verify(ctx, snapshot.Blobs, h))

	path := s.ObjectPath(snapshot.Blobs, h)
	require.NoError(t, os.Chmod(path, 0o644))
	damaged := []byte("precious CONTENT, damaged")
	require.NoError(t, os.WriteFile(path, damaged, 0o644))

	require.Equal(t, damaged, storetest.ReadAll(t, s, snapshot.Blobs, h), "Open returns the bytes on disk")
	size, err := s.Stat(ctx, snapshot.Blobs, h)
	require.NoError(t, err)
	require.Equal(t, int64(len(damaged)), size)

	err = s.Verify(ctx, snapshot.Blobs, h)
	require.ErrorIs(t, err, snapshot.ErrCorruptObject)
	require.Contains(t, err.Error(), h.String())

	h2 := storetest.Put(t, s, snapshot.Blobs, data, snapshot.PutOptions{})
	require.Equal(t, h, h2)
	require.ErrorIs(t, s.Verify(ctx, snapshot.Blobs, h), snapshot.ErrCorruptObject, "Put trusts an existing name")

	require.NoError(t, s.Delete(ctx, snapshot.Blobs, h))
	storetest.Put(t, s, snapshot.Blobs, data, snapshot.PutOptions{})
	require.NoError(t, s.Verify(ctx, snapshot.Blobs, h))
	require.Equal(t, data, storetest.ReadAll(t, s, snapshot.Blobs, h))

	require.ErrorIs(t, s.Verify(ctx, snapshot.Records, h), vfs.ErrNotFound)
}

func TestLocalReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := snapshot.OpenLocal(dir)
	require.NoError(t, err)
	h := storetest.Put(t, s, snapshot.Blobs, []byte("kept"), snapshot.PutOptions{Deferred: true})
	require.NoError(t, s.Sync(context.Background()))
	require.NoError(t, s.Close())

	// Crash leftovers in tmp/.
	tmp := filepath.Join(dir, "tmp")
	require.NoError(t, os.WriteFile(filepath.Join(tmp, "put-123"), []byte("half an object"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(tmp, "put-456"), nil, 0o444))
	require.NoError(t, os.Mkdir(filepath.Join(tmp, "junk"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(tmp, "junk", "f"), nil, 0o600))

	s = openLocal(t, dir)
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Empty(t, left, "OpenLocal clears tmp/")
	require.Equal(t, map[vfs.Hash]int64{h: 4}, storetest.ListAll(t, s, snapshot.Blobs))
	require.Equal(t, []byte("kept"), storetest.ReadAll(t, s, snapshot.Blobs, h))
}

func TestLocalOpenChecks(t *testing.T) {
	t.Run("missing dir is created", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "a", "b")
		openLocal(t, dir)
		_, err := os.Stat(filepath.Join(dir, "store.json"))
		require.NoError(t, err)
	})
	t.Run("non-empty dir without marker", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o600))
		_, err := snapshot.OpenLocal(dir)
		require.Error(t, err)
		require.Contains(t, err.Error(), "not a vfsd store")
		require.Contains(t, err.Error(), "store.json")
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Len(t, entries, 1, "a refused directory is left alone")
	})
	t.Run("invalid marker", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "store.json"), []byte("{not json"), 0o600))
		_, err := snapshot.OpenLocal(dir)
		require.ErrorContains(t, err, "invalid marker")
	})
	t.Run("other format", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "store.json"), []byte(`{"format":"vfsd-store/9"}`), 0o600))
		_, err := snapshot.OpenLocal(dir)
		require.ErrorContains(t, err, `unsupported store format "vfsd-store/9"`)
	})
	t.Run("marker only (interrupted creation) is completed", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "store.json"), []byte(`{"format":"vfsd-store/1"}`), 0o444))
		s := openLocal(t, dir)
		storetest.Put(t, s, snapshot.Records, []byte("ok"), snapshot.PutOptions{})
	})
	t.Run("leftover of an interrupted creation", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "store.json.tmp"), []byte(`{"for`), 0o444))
		openLocal(t, dir)
		_, err := os.Stat(filepath.Join(dir, "store.json.tmp"))
		require.ErrorIs(t, err, os.ErrNotExist)
	})
	t.Run("one user at a time", func(t *testing.T) {
		dir := t.TempDir()
		s, err := snapshot.OpenLocal(dir)
		require.NoError(t, err)
		_, err = snapshot.OpenLocal(dir)
		require.ErrorContains(t, err, "in use")
		require.NoError(t, s.Close())
		openLocal(t, dir)
	})
}

func TestLocalListSkipsForeignFiles(t *testing.T) {
	dir := t.TempDir()
	s := openLocal(t, dir)
	h := storetest.Put(t, s, snapshot.Blobs, []byte("real"), snapshot.PutOptions{})
	hx := h.String()
	other := vfs.HashOf([]byte("elsewhere")).String()
	fan := filepath.Join(dir, "blobs", hx[:2])
	for _, name := range []string{
		"README",
		hx[:2] + strings.ToUpper(hx[2:]), // not lowercase
		hx[:2] + strings.Repeat("g", 62), // not hex
		hx + ".tmp",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(fan, name), nil, 0o444))
	}
	if other[:2] != hx[:2] {
		// A valid name in the wrong fan-out directory is not an object
		// (Open would not find it).
		require.NoError(t, os.WriteFile(filepath.Join(fan, other), nil, 0o444))
	}
	require.NoError(t, os.Mkdir(filepath.Join(fan, strings.Repeat("a", 64)), 0o700))
	require.Equal(t, map[vfs.Hash]int64{h: 4}, storetest.ListAll(t, s, snapshot.Blobs))
}

func TestLocalFailedPutLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	s := openLocal(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := s.Put(ctx, snapshot.Blobs, bytes.NewReader([]byte("x")), snapshot.PutOptions{})
	require.ErrorIs(t, err, context.Canceled)
	boom := errors.New("boom")
	_, _, err = s.Put(context.Background(), snapshot.Blobs, errReader{boom}, snapshot.PutOptions{})
	require.ErrorIs(t, err, boom)
	left, err := os.ReadDir(filepath.Join(dir, "tmp"))
	require.NoError(t, err)
	require.Empty(t, left)
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func TestStoreBytes(t *testing.T) {
	ctx := context.Background()
	local := openLocal(t, t.TempDir())
	for _, s := range []interface {
		snapshot.Store
		Bytes(context.Context) (int64, error)
	}{snapshot.NewMemory(), local} {
		n, err := s.Bytes(ctx)
		require.NoError(t, err)
		require.Zero(t, n)
		storetest.Put(t, s, snapshot.Blobs, make([]byte, 1000), snapshot.PutOptions{})
		storetest.Put(t, s, snapshot.Blobs, make([]byte, 1000), snapshot.PutOptions{})
		storetest.Put(t, s, snapshot.Records, make([]byte, 24), snapshot.PutOptions{})
		n, err = s.Bytes(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(1024), n)
	}
}
