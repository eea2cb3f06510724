// Package storetest is a conformance suite for snapshot.Store
// implementations: every backend runs the same tests through Run.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// Run runs the conformance tests against stores made by newStore, one fresh,
// empty store per subtest. Run closes each store when its subtest ends (and
// checks that closing twice is harmless), so newStore should not close it.
func Run(t *testing.T, newStore func(t *testing.T) snapshot.Store) {
	open := func(t *testing.T) snapshot.Store {
		t.Helper()
		s := newStore(t)
		t.Cleanup(func() {
			assert.NoError(t, s.Close(), "Close")
			assert.NoError(t, s.Close(), "second Close")
		})
		return s
	}
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s snapshot.Store)
	}{
		{"RoundTrip", testRoundTrip},
		{"ReadAt", testReadAt},
		{"IdempotentPut", testIdempotentPut},
		{"DeferredPutThenSync", testDeferredPut},
		{"NamespacesAreSeparate", testNamespaces},
		{"UnknownNamespace", testUnknownNamespace},
		{"Missing", testMissing},
		{"Delete", testDelete},
		{"List", testList},
		{"ListStops", testListStops},
		{"ReaderError", testReaderError},
		{"CanceledContext", testCanceledContext},
		{"CancelDuringPut", testCancelDuringPut},
		{"Concurrent", testConcurrent},
		{"Closed", testClosed},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

// Random returns n pseudo-random bytes determined by seed.
func Random(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8 && i+j < n; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

// Put stores data and checks the returned hash and size.
func Put(t *testing.T, s snapshot.Store, ns snapshot.Namespace, data []byte, opts snapshot.PutOptions) vfs.Hash {
	t.Helper()
	h, n, err := s.Put(context.Background(), ns, bytes.NewReader(data), opts)
	require.NoError(t, err)
	require.Equal(t, vfs.HashOf(data), h, "Put's hash")
	require.Equal(t, int64(len(data)), n, "Put's size")
	return h
}

// ReadAll opens an object and returns its whole content, checking Size.
func ReadAll(t *testing.T, s snapshot.Store, ns snapshot.Namespace, h vfs.Hash) []byte {
	t.Helper()
	b, err := s.Open(context.Background(), ns, h)
	require.NoError(t, err)
	defer func() { require.NoError(t, b.Close()) }()
	buf := make([]byte, b.Size())
	n, err := b.ReadAt(buf, 0)
	if err == io.EOF && n == len(buf) {
		err = nil // ReaderAt may report EOF with a read that reaches the end
	}
	require.NoError(t, err)
	require.Equal(t, len(buf), n)
	return buf
}

// ListAll returns every object of ns and its size.
func ListAll(t *testing.T, s snapshot.Store, ns snapshot.Namespace) map[vfs.Hash]int64 {
	t.Helper()
	got := map[vfs.Hash]int64{}
	err := s.List(context.Background(), ns, func(h vfs.Hash, size int64) error {
		if _, dup := got[h]; dup {
			return fmt.Errorf("List reported %s twice", h)
		}
		got[h] = size
		return nil
	})
	require.NoError(t, err)
	return got
}

// Sizes of content longer than a store may hold in memory for one Put
// (LocalStore holds up to 1 MiB): just longer, and streamed over several
// buffers.
const (
	large       = 1<<20 + 1
	largeStream = 3<<20 + 12345
)

func testRoundTrip(t *testing.T, s snapshot.Store) {
	ctx := context.Background()
	cases := []struct {
		name string
		data []byte
	}{
		{"empty", []byte{}},
		{"small", []byte("hello, world\n")},
		{"1MiB", Random(1, 1<<20)},
		{"1MiB+1", Random(1, large)},
		{"3MiB+", Random(1, largeStream)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := Put(t, s, snapshot.Blobs, tc.data, snapshot.PutOptions{})
			require.Equal(t, tc.data, ReadAll(t, s, snapshot.Blobs, h))
			size, err := s.Stat(ctx, snapshot.Blobs, h)
			require.NoError(t, err)
			require.Equal(t, int64(len(tc.data)), size)
		})
	}
	require.Len(t, ListAll(t, s, snapshot.Blobs), len(cases))
}

func testReadAt(t *testing.T, s snapshot.Store) {
	data := Random(2, 10000)
	h := Put(t, s, snapshot.Blobs, data, snapshot.PutOptions{})
	b, err := s.Open(context.Background(), snapshot.Blobs, h)
	require.NoError(t, err)
	defer b.Close()
	require.Equal(t, int64(len(data)), b.Size())

	buf := make([]byte, 100)
	for _, off := range []int64{0, 1, 4095, 4096, 5000, 9900} {
		n, err := b.ReadAt(buf, off)
		require.NoError(t, err, "ReadAt(100 bytes, %d)", off)
		require.Equal(t, 100, n)
		require.Equal(t, data[off:off+100], buf, "ReadAt(100 bytes, %d)", off)
	}

	// A read crossing the end returns what there is, and io.EOF.
	n, err := b.ReadAt(buf, 9950)
	require.ErrorIs(t, err, io.EOF)
	require.Equal(t, 50, n)
	require.Equal(t, data[9950:], buf[:50])

	// Reads at or past the end return io.EOF and nothing.
	for _, off := range []int64{10000, 10001, 1 << 40} {
		n, err := b.ReadAt(buf, off)
		require.ErrorIs(t, err, io.EOF, "ReadAt past EOF at %d", off)
		require.Zero(t, n)
	}

	_, err = b.ReadAt(buf, -1)
	require.Error(t, err, "ReadAt at a negative offset")

	// Concurrent readers of one blob.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			p := make([]byte, 1000)
			off := int64(i * 1000)
			n, err := b.ReadAt(p, off)
			if assert.NoError(t, err) && assert.Equal(t, 1000, n) {
				assert.Equal(t, data[off:off+1000], p)
			}
		})
	}
	wg.Wait()
}

func testIdempotentPut(t *testing.T, s snapshot.Store) {
	want := map[vfs.Hash]int64{}
	for _, data := range [][]byte{[]byte("the same content, twice"), Random(4, largeStream)} {
		h1 := Put(t, s, snapshot.Blobs, data, snapshot.PutOptions{})
		h2 := Put(t, s, snapshot.Blobs, data, snapshot.PutOptions{})
		h3 := Put(t, s, snapshot.Blobs, data, snapshot.PutOptions{Deferred: true})
		require.Equal(t, h1, h2)
		require.Equal(t, h1, h3)
		want[h1] = int64(len(data))
		require.Equal(t, want, ListAll(t, s, snapshot.Blobs))
		require.Equal(t, data, ReadAll(t, s, snapshot.Blobs, h1))
	}
	// Deferred first, then durable.
	data := Random(5, large)
	h := Put(t, s, snapshot.Blobs, data, snapshot.PutOptions{Deferred: true})
	require.Equal(t, h, Put(t, s, snapshot.Blobs, data, snapshot.PutOptions{}))
	require.Equal(t, data, ReadAll(t, s, snapshot.Blobs, h))
}

func testDeferredPut(t *testing.T, s snapshot.Store) {
	ctx := context.Background()
	var hs []vfs.Hash
	for i := range 10 {
		hs = append(hs, Put(t, s, snapshot.Blobs, Random(uint64(100+i), 5000), snapshot.PutOptions{Deferred: true}))
	}
	// Deferred objects are readable at once, before Sync.
	require.Equal(t, Random(100, 5000), ReadAll(t, s, snapshot.Blobs, hs[0]))
	require.NoError(t, s.Sync(ctx))
	for i, h := range hs {
		require.Equal(t, Random(uint64(100+i), 5000), ReadAll(t, s, snapshot.Blobs, h))
	}
	// A durable Put of content a deferred Put stored succeeds.
	Put(t, s, snapshot.Blobs, Random(100, 5000), snapshot.PutOptions{})
	require.Len(t, ListAll(t, s, snapshot.Blobs), 10)
	require.NoError(t, s.Sync(ctx), "Sync with nothing pending")
}

func testNamespaces(t *testing.T, s snapshot.Store) {
	ctx := context.Background()
	blob := []byte("a blob")
	record := []byte(`{"snapshot":1}`)
	hb := Put(t, s, snapshot.Blobs, blob, snapshot.PutOptions{})
	hr := Put(t, s, snapshot.Records, record, snapshot.PutOptions{})

	_, err := s.Open(ctx, snapshot.Records, hb)
	require.ErrorIs(t, err, vfs.ErrNotFound)
	_, err = s.Stat(ctx, snapshot.Blobs, hr)
	require.ErrorIs(t, err, vfs.ErrNotFound)
	require.Equal(t, map[vfs.Hash]int64{hb: int64(len(blob))}, ListAll(t, s, snapshot.Blobs))
	require.Equal(t, map[vfs.Hash]int64{hr: int64(len(record))}, ListAll(t, s, snapshot.Records))

	// The same content in both namespaces is two objects; deleting one
	// leaves the other.
	hb2 := Put(t, s, snapshot.Blobs, record, snapshot.PutOptions{})
	require.Equal(t, hr, hb2)
	require.NoError(t, s.Delete(ctx, snapshot.Blobs, hb2))
	require.Equal(t, record, ReadAll(t, s, snapshot.Records, hr))
}

func testUnknownNamespace(t *testing.T, s snapshot.Store) {
	ctx := context.Background()
	bad := snapshot.Namespace("../escape")
	_, _, err := s.Put(ctx, bad, bytes.NewReader([]byte("x")), snapshot.PutOptions{})
	require.ErrorIs(t, err, vfs.ErrInvalid)
	_, err = s.Open(ctx, bad, vfs.HashOf([]byte("x")))
	require.ErrorIs(t, err, vfs.ErrInvalid)
	err = s.List(ctx, bad, func(vfs.Hash, int64) error { return nil })
	require.ErrorIs(t, err, vfs.ErrInvalid)
}

func testMissing(t *testing.T, s snapshot.Store) {
	ctx := context.Background()
	h := vfs.HashOf([]byte("never stored"))
	for _, ns := range snapshot.Namespaces {
		_, err := s.Open(ctx, ns, h)
		require.ErrorIs(t, err, vfs.ErrNotFound, "Open in %s", ns)
		require.Contains(t, err.Error(), h.String())
		_, err = s.Stat(ctx, ns, h)
		require.ErrorIs(t, err, vfs.ErrNotFound, "Stat in %s", ns)
		_, err = s.Open(ctx, ns, vfs.Hash{})
		require.ErrorIs(t, err, vfs.ErrNotFound, "Open of the zero hash in %s", ns)
	}
}

func testDelete(t *testing.T, s snapshot.Store) {
	ctx := context.Background()
	keep := Put(t, s, snapshot.Blobs, []byte("keep"), snapshot.PutOptions{})
	data := []byte("delete me")
	h := Put(t, s, snapshot.Blobs, data, snapshot.PutOptions{})
	require.NoError(t, s.Delete(ctx, snapshot.Blobs, h))
	_, err := s.Open(ctx, snapshot.Blobs, h)
	require.ErrorIs(t, err, vfs.ErrNotFound)
	_, err = s.Stat(ctx, snapshot.Blobs, h)
	require.ErrorIs(t, err, vfs.ErrNotFound)
	require.Equal(t, map[vfs.Hash]int64{keep: 4}, ListAll(t, s, snapshot.Blobs))

	require.NoError(t, s.Delete(ctx, snapshot.Blobs, h), "deleting a deleted object")
	require.NoError(t, s.Delete(ctx, snapshot.Records, vfs.HashOf([]byte("never"))), "deleting a missing object")

	// Stored again after Delete.
	Put(t, s, snapshot.Blobs, data, snapshot.PutOptions{})
	require.Equal(t, data, ReadAll(t, s, snapshot.Blobs, h))

	// An open reader outlives Delete or not, but the store must not break.
	b, err := s.Open(ctx, snapshot.Blobs, keep)
	require.NoError(t, err)
	require.NoError(t, s.Delete(ctx, snapshot.Blobs, keep))
	require.NoError(t, b.Close())
}

func testList(t *testing.T, s snapshot.Store) {
	require.Empty(t, ListAll(t, s, snapshot.Blobs), "List of an empty store")
	want := map[vfs.Hash]int64{}
	for i := range 300 { // more than the 256 fan-out directories
		data := Random(uint64(1000+i), i*7)
		want[Put(t, s, snapshot.Blobs, data, snapshot.PutOptions{Deferred: true})] = int64(len(data))
	}
	require.Equal(t, want, ListAll(t, s, snapshot.Blobs))
	require.Empty(t, ListAll(t, s, snapshot.Records))
}

func testListStops(t *testing.T, s snapshot.Store) {
	for i := range 5 {
		Put(t, s, snapshot.Blobs, Random(uint64(i), 10), snapshot.PutOptions{Deferred: true})
	}
	stop := errors.New("stop here")
	calls := 0
	err := s.List(context.Background(), snapshot.Blobs, func(vfs.Hash, int64) error {
		calls++
		return stop
	})
	require.ErrorIs(t, err, stop)
	require.Equal(t, 1, calls)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = s.List(ctx, snapshot.Blobs, func(vfs.Hash, int64) error { return nil })
	require.ErrorIs(t, err, context.Canceled)
}

// failingReader yields some data, then an error.
type failingReader struct {
	data []byte
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func testReaderError(t *testing.T, s snapshot.Store) {
	boom := errors.New("boom")
	for _, size := range []int{0, 100000, 1 << 20, largeStream} {
		_, _, err := s.Put(context.Background(), snapshot.Blobs, &failingReader{data: Random(3, size), err: boom}, snapshot.PutOptions{})
		require.ErrorIs(t, err, boom, "after %d bytes", size)
		require.Empty(t, ListAll(t, s, snapshot.Blobs), "a failed Put stores nothing")
	}
	// Even content that is already stored.
	data := Random(3, 1000)
	Put(t, s, snapshot.Blobs, data, snapshot.PutOptions{})
	_, _, err := s.Put(context.Background(), snapshot.Blobs, &failingReader{data: data, err: boom}, snapshot.PutOptions{})
	require.ErrorIs(t, err, boom)
}

func testCanceledContext(t *testing.T, s snapshot.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	data := []byte("never stored")
	_, _, err := s.Put(ctx, snapshot.Blobs, bytes.NewReader(data), snapshot.PutOptions{})
	require.ErrorIs(t, err, context.Canceled)
	require.Empty(t, ListAll(t, s, snapshot.Blobs))
	_, err = s.Stat(context.Background(), snapshot.Blobs, vfs.HashOf(data))
	require.ErrorIs(t, err, vfs.ErrNotFound)
}

// cancelingReader cancels its context after yielding after bytes, and then
// keeps yielding data.
type cancelingReader struct {
	r      io.Reader
	after  int
	read   int
	cancel context.CancelFunc
}

func (c *cancelingReader) Read(p []byte) (int, error) {
	if len(p) > 4096 {
		p = p[:4096]
	}
	n, err := c.r.Read(p)
	c.read += n
	if c.read >= c.after {
		c.cancel()
	}
	return n, err
}

func testCancelDuringPut(t *testing.T, s snapshot.Store) {
	for _, tc := range []struct{ size, after int }{
		{1 << 20, 1},
		{1 << 20, 64 << 10},
		{1 << 20, 1 << 20},
		{largeStream, 64 << 10},
		{largeStream, 2 << 20},
		{largeStream, largeStream},
	} {
		t.Run(fmt.Sprintf("%d/%d", tc.after, tc.size), func(t *testing.T) {
			after := tc.after
			data := Random(uint64(after), tc.size)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			h, n, err := s.Put(ctx, snapshot.Blobs, &cancelingReader{r: bytes.NewReader(data), after: after, cancel: cancel}, snapshot.PutOptions{})
			objects := ListAll(t, s, snapshot.Blobs)
			if err != nil {
				// Failed: with the context's error, and nothing stored.
				require.ErrorIs(t, err, context.Canceled)
				require.Empty(t, objects)
				return
			}
			// Succeeded: the whole content, intact.
			require.Equal(t, vfs.HashOf(data), h)
			require.Equal(t, int64(len(data)), n)
			require.Equal(t, map[vfs.Hash]int64{h: n}, objects)
			require.Equal(t, data, ReadAll(t, s, snapshot.Blobs, h))
			require.NoError(t, s.Delete(context.Background(), snapshot.Blobs, h))
		})
	}
}

func testConcurrent(t *testing.T, s snapshot.Store) {
	ctx := context.Background()
	const workers, contents, rounds = 32, 8, 4
	data := make([][]byte, contents)
	want := map[vfs.Hash]int64{}
	for i := range data {
		data[i] = Random(uint64(5000+i), 1000*(i+1))
		want[vfs.HashOf(data[i])] = int64(len(data[i]))
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for r := range rounds {
				i := (w + r) % contents
				opts := snapshot.PutOptions{Deferred: (w+r)%2 == 0}
				h, n, err := s.Put(ctx, snapshot.Blobs, bytes.NewReader(data[i]), opts)
				if !assert.NoError(t, err) {
					return
				}
				assert.Equal(t, vfs.HashOf(data[i]), h)
				assert.Equal(t, int64(len(data[i])), n)
				// Read back what another goroutine may have stored.
				b, err := s.Open(ctx, snapshot.Blobs, h)
				if !assert.NoError(t, err) {
					return
				}
				got := make([]byte, b.Size())
				_, err = b.ReadAt(got, 0)
				if err == io.EOF {
					err = nil
				}
				assert.NoError(t, err)
				assert.Equal(t, data[i], got)
				assert.NoError(t, b.Close())
			}
			if w%8 == 0 {
				assert.NoError(t, s.Sync(ctx))
			}
		})
	}
	wg.Wait()
	require.NoError(t, s.Sync(ctx))
	require.Equal(t, want, ListAll(t, s, snapshot.Blobs))
}

func testClosed(t *testing.T, s snapshot.Store) {
	ctx := context.Background()
	h := Put(t, s, snapshot.Blobs, []byte("before close"), snapshot.PutOptions{})
	b, err := s.Open(ctx, snapshot.Blobs, h)
	require.NoError(t, err)
	require.NoError(t, s.Close())

	_, _, err = s.Put(ctx, snapshot.Blobs, bytes.NewReader([]byte("after close")), snapshot.PutOptions{})
	require.ErrorIs(t, err, vfs.ErrClosed)
	_, err = s.Open(ctx, snapshot.Blobs, h)
	require.ErrorIs(t, err, vfs.ErrClosed)
	_, err = s.Stat(ctx, snapshot.Blobs, h)
	require.ErrorIs(t, err, vfs.ErrClosed)
	require.ErrorIs(t, s.Delete(ctx, snapshot.Blobs, h), vfs.ErrClosed)
	require.ErrorIs(t, s.List(ctx, snapshot.Blobs, func(vfs.Hash, int64) error { return nil }), vfs.ErrClosed)
	require.ErrorIs(t, s.Sync(ctx), vfs.ErrClosed)

	// A reader opened before Close still reads.
	buf := make([]byte, b.Size())
	n, err := b.ReadAt(buf, 0)
	if err == io.EOF {
		err = nil
	}
	require.NoError(t, err)
	require.Equal(t, "before close", string(buf[:n]))
	require.NoError(t, b.Close())
}
