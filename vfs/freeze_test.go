package vfs_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/vfstest"
)

// gatedBlobs holds deferred puts — the ones Freeze makes while sealing —
// until the gate opens.
type gatedBlobs struct {
	*vfstest.Blobs
	entered chan struct{}
	gate    chan struct{}
	once    sync.Once
}

func (g *gatedBlobs) Put(ctx context.Context, r io.Reader, deferred bool) (vfs.Hash, int64, func(), error) {
	if deferred {
		g.once.Do(func() { close(g.entered) })
		<-g.gate
	}
	return g.Blobs.Put(ctx, r, deferred)
}

// TestFreezeKeepsSessionServing blocks a freeze while it seals, and checks
// that reads and writes of the session go on meanwhile, and that the write
// made during the freeze is not in what it captured.
func TestFreezeKeepsSessionServing(t *testing.T) {
	blobs := &gatedBlobs{Blobs: vfstest.NewBlobs(), entered: make(chan struct{}), gate: make(chan struct{})}
	opts := vfstest.Options(t, blobs)
	s, err := vfs.Create(ctx, opts, vfs.Tree{}, "")
	require.NoError(t, err)
	defer s.Close()
	h, err := s.OpenFile(ctx, p("f"), os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	_, err = h.WriteAt([]byte("before"), 0)
	require.NoError(t, err)

	frozen := make(chan *vfs.Frozen)
	go func() {
		f, err := s.Freeze(ctx)
		if err != nil {
			t.Error(err)
		}
		frozen <- f
	}()
	<-blobs.entered // the freeze is sealing, and stuck there

	_, err = h.WriteAt([]byte("AFTER!"), 0)
	require.NoError(t, err, "writes go on during a freeze")
	require.NoError(t, h.Flush())
	require.Equal(t, "AFTER!", read(t, s, "f"), "and reads see them")
	_, err = s.Mkdir(ctx, p("d"), vfs.MkdirOptions{})
	require.NoError(t, err, "so do metadata changes")

	close(blobs.gate)
	f := <-frozen
	defer f.Release()
	n, ok, _ := f.Tree.Lookup("f")
	require.True(t, ok)
	data, _ := blobs.Get(n.Blob)
	require.Equal(t, "before", string(data), "the freeze holds the file as it was when captured")
	_, ok, _ = f.Tree.Lookup("d")
	require.False(t, ok)
	require.NoError(t, h.Close())
}

// TestWritesLandWhollyBeforeOrAfterASnapshot races full-file overwrites
// through a handle with freezes: every frozen copy holds exactly one write.
func TestWritesLandWhollyBeforeOrAfterASnapshot(t *testing.T) {
	s, blobs := vfstest.NewSession(t)
	const size = 256 << 10
	h, err := s.OpenFile(ctx, p("f"), os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	_, err = h.WriteAt(bytes.Repeat([]byte{0}, size), 0)
	require.NoError(t, err)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := byte(1); ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := h.WriteAt(bytes.Repeat([]byte{i}, size), 0); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for range 40 {
		f, err := s.Freeze(ctx)
		require.NoError(t, err)
		n, _, _ := f.Tree.Lookup("f")
		data, ok := blobs.Get(n.Blob)
		require.True(t, ok)
		require.Len(t, data, size)
		require.Equal(t, bytes.Repeat(data[:1], size), data, "a snapshot holds one whole write, never a mix")
		f.Release()
	}
	close(stop)
	wg.Wait()
	require.NoError(t, h.Close())
}
