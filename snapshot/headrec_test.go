package snapshot

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/vfs"
)

// countingStore counts the bytes read from Records objects through ReadAt.
type countingStore struct {
	Store
	read atomic.Int64
}

func (c *countingStore) Open(ctx context.Context, ns Namespace, h vfs.Hash) (vfs.Blob, error) {
	b, err := c.Store.Open(ctx, ns, h)
	if err != nil || ns != Records {
		return b, err
	}
	return &countingBlob{Blob: b, n: &c.read}, nil
}

type countingBlob struct {
	vfs.Blob
	n *atomic.Int64
}

func (b *countingBlob) ReadAt(p []byte, off int64) (int, error) {
	n, err := b.Blob.ReadAt(p, off)
	b.n.Add(int64(n))
	return n, err
}

// openCounting opens the repository in dir (store and sessions) with a
// store that counts the bytes read from records; both close with the test.
func openCounting(t *testing.T, dir string) (*Repo, *countingStore) {
	store, err := OpenLocal(filepath.Join(dir, "store"))
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	cs := &countingStore{Store: store}
	r, err := OpenRepo(tctx(t), cs, filepath.Join(dir, "sessions"), RepoOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	return r, cs
}

// headFixture commits a tree of dirs directories of 40 files with long
// names (so the record's pack is far larger than what Get reads first) to
// a local store in dir and returns the snapshot's ID.
func headFixture(t *testing.T, dir string, dirs int, label string) string {
	store, r := openFixtureRepo(t, dir)
	defer store.Close()
	defer r.Close()
	blob, _, err := store.Put(tctx(t), Blobs, strings.NewReader("hello\n"), PutOptions{})
	require.NoError(t, err)
	tb := vfs.NewTreeBuilder(vfs.Node{Kind: vfs.KindDir, Ino: 1, Mode: 0o755, Version: 1})
	ino := uint64(1)
	for d := range dirs {
		ino++
		tb.Set(vfs.Path(fmt.Sprintf("d%04d", d)), vfs.Node{Kind: vfs.KindDir, Ino: ino, Mode: 0o755, Version: 1})
		for f := range 40 {
			ino++
			p := vfs.Path(fmt.Sprintf("d%04d/file-with-a-rather-long-name-%05d.txt", d, f))
			tb.Set(p, vfs.Node{Kind: vfs.KindFile, Ino: ino, Mode: 0o644, Version: 1, Blob: blob, Size: 6})
		}
	}
	snap, err := r.CommitTree(tctx(t), tb.Tree(), label)
	require.NoError(t, err)
	return snap.ID
}

func tctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// openFixtureRepo opens a repository in dir, with its store, for a test
// to write a fixture into; the caller closes both.
func openFixtureRepo(t *testing.T, dir string) (*LocalStore, *Repo) {
	store, err := OpenLocal(filepath.Join(dir, "store"))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sessions"), 0o755))
	r, err := OpenRepo(tctx(t), store, filepath.Join(dir, "sessions"), RepoOptions{})
	require.NoError(t, err)
	return store, r
}

func recordPath(dir, id string) string {
	return filepath.Join(dir, "store", string(Records), id[:2], id)
}

// TestGetReadsRecordHead: Get of a local record reads its head, not the
// record; a manifest early in its pack is found and read without reading
// the rest of the pack; reading a file and counting the manifests work.
func TestGetReadsRecordHead(t *testing.T) {
	skipVerify.Store(true) // the background check would read it all
	defer skipVerify.Store(false)
	dir := t.TempDir()
	id := headFixture(t, dir, 300, "head")
	whole, err := os.ReadFile(recordPath(dir, id))
	require.NoError(t, err)
	size := int64(len(whole))
	require.Greater(t, size, int64(8*headChunk), "the fixture's record must be far larger than its head")
	var first packEntry
	count := 0
	_, err = decodeRecord(whole, func(h vfs.Hash, off, n int) {
		if count == 0 {
			first = packEntry{hash: h, data: whole[off : off+n]}
		}
		count++
	})
	require.NoError(t, err)

	store, err := OpenLocal(filepath.Join(dir, "store"))
	require.NoError(t, err)
	defer store.Close()
	cs := &countingStore{Store: store}
	r, err := OpenRepo(tctx(t), cs, filepath.Join(dir, "sessions"), RepoOptions{})
	require.NoError(t, err)
	defer r.Close()

	snap, err := r.Get(tctx(t), id)
	require.NoError(t, err)
	require.Equal(t, "head", snap.Record.Label)
	require.NotNil(t, snap.head, "a local record is opened by its head")
	require.LessOrEqual(t, cs.read.Load(), int64(headChunk), "Get reads the head only")

	b, err := snap.reader.manifest(tctx(t), first.hash)
	require.NoError(t, err)
	require.Equal(t, first.data, b)
	require.Less(t, cs.read.Load(), size/4, "the first manifest is found without reading the pack")

	// The root manifest is the pack's last: found by scanning headers.
	n, ok, err := snap.Tree.Lookup("d0150/file-with-a-rather-long-name-00007.txt")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int64(6), n.Size)
	require.LessOrEqual(t, cs.read.Load(), size+scanWindow, "nothing is read twice over")
	require.Equal(t, count, snap.ManifestCount())
}

// TestGetDetectsCorruptRecord: a flipped byte anywhere in a local record
// opened by its head is never used silently: the manifest read that meets
// it fails, and the background check of the whole record marks it corrupt,
// so that the next Get fails with ErrCorruptObject.
func TestGetDetectsCorruptRecord(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   func(b []byte) int // the byte to flip
	}{
		{"in the record's label", func(b []byte) int { return strings.Index(string(b), "corrupt-me") + 3 }},
		// A directory's first entry: its name is written whole.
		{"in a manifest of the pack", func(b []byte) int { return strings.LastIndex(string(b), "name-00000") + 2 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			id := headFixture(t, dir, 100, "corrupt-me")
			h, err := vfs.ParseHash(id)
			require.NoError(t, err)
			path := recordPath(dir, id)
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			i := tc.at(b)
			require.Greater(t, i, 0)
			b[i] ^= 1
			require.NoError(t, os.Chmod(path, 0o644))
			require.NoError(t, os.WriteFile(path, b, 0o644))

			done := make(chan error, 1)
			hook := func(got vfs.Hash, err error) {
				if got == h {
					select {
					case done <- err:
					default:
					}
				}
			}
			verifyHook.Store(&hook)
			defer verifyHook.Store(nil)

			r, err := OpenLocalRepo(tctx(t), dir, RepoOptions{})
			require.NoError(t, err)
			defer r.Close()
			snap, err := r.Get(tctx(t), id)
			require.NoError(t, err, "the head alone cannot be checked")
			// Reading the whole tree meets the manifests: a flipped one
			// fails its read.
			walkErr := snap.Tree.Walk(vfs.Root, func(vfs.Path, vfs.Node) error { return nil })
			select {
			case err := <-done:
				require.ErrorIs(t, err, ErrCorruptObject)
			case <-time.After(time.Minute):
				t.Fatal("the background check did not end")
			}
			if strings.Contains(tc.name, "manifest") {
				// The lazy tree reports it as an io_error naming the cause.
				require.Error(t, walkErr)
				require.Contains(t, walkErr.Error(), "does not match its hash")
			}
			_, err = r.Get(tctx(t), id)
			require.ErrorIs(t, err, ErrCorruptObject)
			_, err = snap.reader.manifest(tctx(t), snap.Record.Root)
			require.ErrorIs(t, err, ErrCorruptObject, "a snapshot already handed out fails its next manifest read")
		})
	}
}

// TestGetReadsAncestorHeads: a snapshot whose record is small (one
// changed directory) reads a file of an unchanged directory from its
// parent's record by that record's head and the manifests on the path,
// not the parent's whole pack.
func TestGetReadsAncestorHeads(t *testing.T) {
	skipVerify.Store(true)
	defer skipVerify.Store(false)
	dir := t.TempDir()
	base := headFixture(t, dir, 200, "base")
	baseWhole, err := os.ReadFile(recordPath(dir, base))
	require.NoError(t, err)

	r, err := OpenLocalRepo(tctx(t), dir, RepoOptions{})
	require.NoError(t, err)
	f, err := r.Fork(tctx(t), Source{Snapshot: base}, SessionOptions{ID: "child"})
	require.NoError(t, err)
	_, err = f.WriteFile(tctx(t), "d0199/new.txt", strings.NewReader("new\n"), vfs.WriteOptions{})
	require.NoError(t, err)
	child, err := r.Snapshot(tctx(t), f, "child")
	require.NoError(t, err)
	require.NoError(t, r.Close())

	r, cs := openCounting(t, dir)
	snap, err := r.Get(tctx(t), child.ID)
	require.NoError(t, err)
	n, ok, err := snap.Tree.Lookup("d0100/file-with-a-rather-long-name-00001.txt")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int64(6), n.Size)
	_, ok, err = snap.Tree.Lookup("d0199/new.txt")
	require.NoError(t, err)
	require.True(t, ok)
	require.Less(t, cs.read.Load(), int64(len(baseWhole)), "the parent's record is not read whole")
}

// withoutPackIndex stores record id of the store in dir again with its
// Record's pack index replaced by index (none when nil), as a record
// written before pack indexes (or one whose index lies) is, and returns
// the new record's ID.
func withoutPackIndex(t *testing.T, dir, id string, index []byte) string {
	whole, err := os.ReadFile(recordPath(dir, id))
	require.NoError(t, err)
	rec, packAt, err := decodeRecordHead(whole)
	require.NoError(t, err)
	require.NotEmpty(t, rec.PackIndex, "records are written with a pack index")
	rec.PackIndex = index
	js, err := json.Marshal(rec)
	require.NoError(t, err)
	b := append([]byte(recordFormat+"\n"), js...)
	b = append(b, '\n')
	b = append(b, whole[packAt:]...)
	store, err := OpenLocal(filepath.Join(dir, "store"))
	require.NoError(t, err)
	defer store.Close()
	h, _, err := store.Put(tctx(t), Records, bytes.NewReader(b), PutOptions{})
	require.NoError(t, err)
	return h.String()
}

// TestPackIndexReadsOneManifest: a manifest in the middle of a large
// record's pack is read with one ReadAt through the record's pack index,
// where a record without one (written before pack indexes) walks the
// pack's headers to it; a pack index that lies (lengths that do not add
// up, prefixes swapped) is never believed: the walk finds what it names.
func TestPackIndexReadsOneManifest(t *testing.T) {
	skipVerify.Store(true) // the background check would read it all
	defer skipVerify.Store(false)
	dir := t.TempDir()
	indexed := headFixture(t, dir, 200, "indexed")
	whole, err := os.ReadFile(recordPath(dir, indexed))
	require.NoError(t, err)
	rec, _, err := decodeRecordHead(whole)
	require.NoError(t, err)
	// The first and the last entries' prefixes swapped: the lengths still
	// add up, but the index sends each lookup to the other's place.
	swapped := bytes.Clone(rec.PackIndex)
	var starts []int
	for i := 0; i < len(swapped); {
		starts = append(starts, i)
		_, k := binary.Uvarint(swapped[i+packIndexPrefix:])
		i += packIndexPrefix + k
	}
	a, z := starts[0], starts[len(starts)-1]
	tmp := bytes.Clone(swapped[a : a+packIndexPrefix])
	copy(swapped[a:], swapped[z:z+packIndexPrefix])
	copy(swapped[z:], tmp)
	short := bytes.Clone(rec.PackIndex[:len(rec.PackIndex)-3])

	for _, tc := range []struct {
		name    string
		id      string
		maxRead int64 // bytes of the record read to find the file, at most
		minRead int64
	}{
		{name: "with a pack index", id: indexed, maxRead: headChunk + 16<<10}, // the head, the root and d0100
		{name: "without one (an older record)", id: withoutPackIndex(t, dir, indexed, nil), minRead: 4 * scanWindow},
		{name: "with an index that does not add up", id: withoutPackIndex(t, dir, indexed, short), minRead: 4 * scanWindow},
		{name: "with prefixes swapped", id: withoutPackIndex(t, dir, indexed, swapped)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, err := OpenLocal(filepath.Join(dir, "store"))
			require.NoError(t, err)
			defer store.Close()
			cs := &countingStore{Store: store}
			r, err := OpenRepo(tctx(t), cs, filepath.Join(dir, "sessions"), RepoOptions{})
			require.NoError(t, err)
			defer r.Close()
			snap, err := r.Get(tctx(t), tc.id)
			require.NoError(t, err)
			require.NotNil(t, snap.head)
			require.Empty(t, snap.Record.PackIndex, "the index is not kept in the Record")
			n, ok, err := snap.Tree.Lookup("d0100/file-with-a-rather-long-name-00007.txt")
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, int64(6), n.Size)
			if tc.maxRead > 0 {
				require.LessOrEqual(t, cs.read.Load(), tc.maxRead)
			}
			require.GreaterOrEqual(t, cs.read.Load(), tc.minRead)
			require.Equal(t, 201, snap.ManifestCount())
			require.NoError(t, snap.Tree.Walk(vfs.Root, func(vfs.Path, vfs.Node) error { return nil }))
		})
	}
}

// TestSessionOpenReadsNoManifests: opening a session forked from a large
// lazily loaded snapshot and changed once reads the snapshot's head and
// the manifests on the changed path, not the manifest of every directory
// the change's expansion brought into the tree.
func TestSessionOpenReadsNoManifests(t *testing.T) {
	skipVerify.Store(true)
	defer skipVerify.Store(false)
	dir := t.TempDir()
	base := headFixture(t, dir, 200, "base")
	r, err := OpenLocalRepo(tctx(t), dir, RepoOptions{})
	require.NoError(t, err)
	f, err := r.Fork(tctx(t), Source{Snapshot: base}, SessionOptions{ID: "child"})
	require.NoError(t, err)
	_, err = f.WriteFile(tctx(t), "d0000/new.txt", strings.NewReader("new\n"), vfs.WriteOptions{})
	require.NoError(t, err)
	require.NoError(t, r.Close())

	r, cs := openCounting(t, dir)
	s, err := r.Session("child")
	require.NoError(t, err)
	// The head, the root's manifest and d0000's: not 200 directories'.
	require.LessOrEqual(t, cs.read.Load(), int64(headChunk+16<<10))
	b, _, err := s.ReadFile(tctx(t), "d0000/new.txt")
	require.NoError(t, err)
	require.Equal(t, "new\n", string(b))
	n, err := s.Stat(tctx(t), "d0150")
	require.NoError(t, err)
	require.Equal(t, uint32(2), n.Nlink, "a lazy directory still counts its links when asked")
}
