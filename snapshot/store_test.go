package snapshot_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
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

// TestLocalStoreNamedTemp runs the conformance suite with named temporary
// files, which Put uses where unnamed ones (O_TMPFILE) are missing or not
// known to be durable.
func TestLocalStoreNamedTemp(t *testing.T) {
	tempFiles(t, snapshot.LocalTempNamed)
	storetest.Run(t, func(t *testing.T) snapshot.Store {
		s, err := snapshot.OpenLocal(t.TempDir())
		require.NoError(t, err)
		return s
	})
}

// TestLocalStoreUnnamedTemp runs the conformance suite with unnamed
// temporary files, whatever the filesystem of the test's temporary
// directory (if it supports them).
func TestLocalStoreUnnamedTemp(t *testing.T) {
	tempFiles(t, snapshot.LocalTempUnnamed)
	storetest.Run(t, func(t *testing.T) snapshot.Store {
		s, err := snapshot.OpenLocal(t.TempDir())
		require.NoError(t, err)
		return s
	})
}

// tempFiles makes LocalStore Puts use the temporary files tf until t ends.
// For unnamed ones it skips t if the filesystem of the test's temporary
// directory lacks them.
func tempFiles(t *testing.T, tf snapshot.LocalTempFiles) {
	t.Helper()
	if tf == snapshot.LocalTempUnnamed && !tmpfileSupported(t, os.TempDir()) {
		t.Skip("the filesystem of the test's temporary directory lacks O_TMPFILE")
	}
	prev := snapshot.SetLocalTempFiles(tf)
	t.Cleanup(func() { snapshot.SetLocalTempFiles(prev) })
}

// bothTemps runs fn with unnamed temporary files (where the filesystem has
// them) and with named ones.
func bothTemps(t *testing.T, fn func(t *testing.T)) {
	t.Run("unnamed", func(t *testing.T) {
		tempFiles(t, snapshot.LocalTempUnnamed)
		fn(t)
	})
	t.Run("named", func(t *testing.T) {
		tempFiles(t, snapshot.LocalTempNamed)
		fn(t)
	})
}

func openLocal(t *testing.T, dir string) *snapshot.LocalStore {
	t.Helper()
	s, err := snapshot.OpenLocal(dir)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func TestLocalLayout(t *testing.T) { bothTemps(t, testLocalLayout) }

func testLocalLayout(t *testing.T) {
	dir := t.TempDir()
	s := openLocal(t, dir)

	marker, err := os.ReadFile(filepath.Join(dir, "store.json"))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(marker, &m))
	require.Equal(t, map[string]any{"format": "vfsd-store/1"}, m)

	for _, ns := range []string{"blobs", "snapshots"} {
		entries, err := os.ReadDir(filepath.Join(dir, ns))
		require.NoError(t, err)
		require.Empty(t, entries, "fan-out directories are made on first use")
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

	require.Empty(t, tmpLeftovers(t, dir), "no temporary file outlives its Put")

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
	require.NoError(t, os.MkdirAll(filepath.Join(tmp, "ab"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(tmp, "ab", "put-789"), nil, 0o444))

	s = openLocal(t, dir)
	require.Empty(t, tmpLeftovers(t, dir), "OpenLocal clears tmp/")
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
		if _, err := os.Stat(filepath.Join(fan, name)); err == nil {
			continue // a case-insensitive filesystem (Windows, macOS): the object's own name
		}
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

func TestLocalFailedPutLeavesNothing(t *testing.T) { bothTemps(t, testLocalFailedPutLeavesNothing) }

func testLocalFailedPutLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	s := openLocal(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := s.Put(ctx, snapshot.Blobs, bytes.NewReader([]byte("x")), snapshot.PutOptions{})
	require.ErrorIs(t, err, context.Canceled)
	boom := errors.New("boom")
	_, _, err = s.Put(context.Background(), snapshot.Blobs, errReader{boom}, snapshot.PutOptions{})
	require.ErrorIs(t, err, boom)
	// Content longer than Put buffers fails once streaming to a file.
	big := io.MultiReader(bytes.NewReader(storetest.Random(9, 3<<20)), errReader{boom})
	_, _, err = s.Put(context.Background(), snapshot.Blobs, big, snapshot.PutOptions{})
	require.ErrorIs(t, err, boom)
	require.ErrorContains(t, err, "read content")
	require.Empty(t, tmpLeftovers(t, dir))
	require.Empty(t, storetest.ListAll(t, s, snapshot.Blobs))
}

// TestLocalSmallDedupCreatesNothing checks that a Put of stored content of
// up to 1 MiB creates no file: it succeeds with tmp/ unusable, where new
// content (or stored content longer than 1 MiB, which Put streams to a file
// before it knows its hash) fails.
func TestLocalSmallDedupCreatesNothing(t *testing.T) { bothTemps(t, testLocalSmallDedupCreatesNothing) }

func testLocalSmallDedupCreatesNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openLocal(t, dir)
	small := storetest.Random(11, 1<<20) // the most Put holds in memory
	large := storetest.Random(12, 1<<20+1)
	hs := storetest.Put(t, s, snapshot.Blobs, small, snapshot.PutOptions{Deferred: true})
	storetest.Put(t, s, snapshot.Blobs, large, snapshot.PutOptions{})

	tmp := filepath.Join(dir, "tmp")
	require.NoError(t, os.RemoveAll(tmp))
	require.NoError(t, os.WriteFile(tmp, nil, 0o444)) // not a directory
	for _, opts := range []snapshot.PutOptions{{}, {Deferred: true}} {
		require.Equal(t, hs, storetest.Put(t, s, snapshot.Blobs, small, opts))
		_, _, err := s.Put(ctx, snapshot.Blobs, bytes.NewReader(large), opts)
		require.ErrorContains(t, err, "create temporary")
		_, _, err = s.Put(ctx, snapshot.Blobs, bytes.NewReader([]byte("new")), opts)
		require.ErrorContains(t, err, "create temporary")
	}
	require.Len(t, storetest.ListAll(t, s, snapshot.Blobs), 2)
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

// tmpLeftovers lists what is under the store's tmp/ besides its 256
// subdirectories: temporary files that outlived their Put.
func tmpLeftovers(t *testing.T, dir string) []string {
	t.Helper()
	var left []string
	tmp := filepath.Join(dir, "tmp")
	err := filepath.WalkDir(tmp, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == tmp {
			return err
		}
		rel, _ := filepath.Rel(tmp, p)
		if d.IsDir() && len(rel) == 2 {
			return nil
		}
		left = append(left, rel)
		return nil
	})
	require.NoError(t, err)
	return left
}
