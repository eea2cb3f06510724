package vfs_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/vfstest"
)

// expectedCodes are the failures a random workload legitimately meets.
var expectedCodes = map[vfs.Code]bool{
	vfs.CodeNotFound: true, vfs.CodeExists: true, vfs.CodeNotDir: true, vfs.CodeIsDir: true,
	vfs.CodeNotEmpty: true, vfs.CodeInvalid: true, vfs.CodeConflict: true, vfs.CodeStale: true,
}

// TestConcurrentStress runs every kind of operation on one session from
// many goroutines at once (run it with -race), then checks the tree's
// invariants and that recovery reproduces it.
func TestConcurrentStress(t *testing.T) {
	blobs := vfstest.NewBlobs()
	opts := vfstest.Options(t, blobs)
	trees := sync.Map{}
	opts.LoadTree = func(_ context.Context, id string) (vfs.Tree, error) {
		v, ok := trees.Load(id)
		if !ok {
			return vfs.Tree{}, fmt.Errorf("no tree %s", id)
		}
		return v.(vfs.Tree), nil
	}
	s, err := vfs.Create(ctx, opts, vfs.Tree{}, "")
	require.NoError(t, err)

	const workers, ops = 8, 300
	paths := []string{"a", "b", "d/a", "d/b", "d/e/a", "e/a", "e/b"}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(w), 7))
			pick := func() vfs.Path { return vfs.MustPath(paths[rnd.IntN(len(paths))]) }
			for i := range ops {
				var err error
				rctx := ctx
				if i%2 == 0 {
					rctx = vfs.Relaxed(ctx)
				}
				switch rnd.IntN(12) {
				case 0, 1:
					_, err = s.WriteFile(rctx, pick(), strings.NewReader(fmt.Sprintf("w%d-%d", w, i)), vfs.WriteOptions{CreateParents: true})
				case 2:
					_, err = s.WriteFile(rctx, pick(), strings.NewReader("+"), vfs.WriteOptions{Mode: vfs.WriteAppend})
				case 3:
					var h *vfs.Handle
					if h, err = s.OpenFile(rctx, pick(), os.O_RDWR|os.O_CREATE, 0o644); err == nil {
						if _, werr := h.WriteAt([]byte("H"), int64(rnd.IntN(4))); werr != nil {
							err = werr
						}
						if rnd.IntN(2) == 0 {
							_ = h.Sync()
						}
						if cerr := h.Close(); err == nil {
							err = cerr
						}
					}
				case 4:
					err = s.Rename(rctx, pick(), pick(), vfs.RenameOptions{CreateParents: true})
				case 5:
					err = s.Remove(rctx, pick(), vfs.RemoveOptions{Recursive: rnd.IntN(2) == 0})
				case 6:
					_, err = s.Mkdir(rctx, pick(), vfs.MkdirOptions{Parents: true})
				case 7:
					_, err = s.Truncate(rctx, pick(), int64(rnd.IntN(5)))
				case 8:
					_, _, err = s.ReadFile(ctx, pick())
				case 9:
					_, err = s.List(ctx, pick())
					if err == nil {
						_, err = s.Stat(ctx, pick())
					}
				case 10:
					var f *vfs.Frozen
					if f, err = s.Freeze(ctx); err == nil {
						id := fmt.Sprintf("snap-%d-%d", w, i)
						trees.Store(id, f.Tree)
						err = s.MarkSnapshot(ctx, f, id)
						f.Release()
					}
				case 11:
					id := fmt.Sprintf("restore-%d-%d", w, i)
					t := vfs.EmptyTree(0)
					trees.Store(id, t)
					if rnd.IntN(4) == 0 {
						err = s.ResetTo(ctx, t, id)
					}
				}
				if err != nil && !expectedCodes[vfs.CodeOf(err)] {
					errs <- fmt.Errorf("worker %d op %d: %w", w, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	tree := s.Tree()
	require.NoError(t, tree.Walk(vfs.Root, func(p vfs.Path, n vfs.Node) error {
		if p.IsRoot() {
			return nil
		}
		parent, ok, _ := tree.Lookup(p.Parent())
		if !ok || !parent.IsDir() {
			return fmt.Errorf("%s has no parent directory", p)
		}
		if n.IsFile() {
			b, _, err := s.ReadFile(ctx, p)
			if err != nil {
				return err
			}
			if int64(len(b)) != n.Size {
				return fmt.Errorf("%s: %d bytes, node says %d", p, len(b), n.Size)
			}
		}
		return nil
	}))
	want := tree.Encode()
	require.NoError(t, s.Close())
	s2, err := vfs.Open(ctx, vfs.Options{Dir: opts.Dir, Blobs: blobs, LoadTree: opts.LoadTree, Clock: opts.Clock})
	require.NoError(t, err)
	defer s2.Close()
	require.Equal(t, want, s2.Tree().Encode(), "recovery reproduces the tree the workers left")
}
