package snapshot_test

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// BenchmarkFork times forking a snapshot into a new session; the pool of
// prepared session directories refills between iterations, off the clock.
func BenchmarkFork(b *testing.B) {
	r, _, _ := newRepo(b)
	s, err := r.NewSession(ctx, snapshot.SessionOptions{})
	if err != nil {
		b.Fatal(err)
	}
	write(b, s, "a/b", "x")
	snap, err := r.Snapshot(ctx, s, "")
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		time.Sleep(50 * time.Millisecond)
		b.StartTimer()
		f, err := r.Fork(ctx, snapshot.Source{Snapshot: snap.ID}, snapshot.SessionOptions{})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		r.DeleteSession(f.ID())
		b.StartTimer()
	}
}

// buildTree lays out n files, 50 per directory and 20 directories per
// group, as bench cow does, with content hashes but no content.
func buildTree(n int) vfs.Tree {
	tb := vfs.NewTreeBuilder(vfs.Node{Kind: vfs.KindDir, Ino: 1, Mode: 0o755, Version: 1})
	ino := uint64(1)
	for i := range n {
		d := i / 50
		p := vfs.Path(fmt.Sprintf("g%03d/d%04d/f%05d.txt", d/20, d, i))
		p.Ancestors(func(a vfs.Path) bool {
			if _, ok := tb.Get(a); ok {
				return false
			}
			ino++
			tb.Set(a, vfs.Node{Kind: vfs.KindDir, Ino: ino, Mode: 0o755, Version: 1})
			return true
		})
		ino++
		tb.Set(p, vfs.Node{Kind: vfs.KindFile, Ino: ino, Mode: 0o644, Version: 1, Blob: vfs.HashOf([]byte(p)), Size: 8192})
	}
	return tb.Tree()
}

// BenchmarkSnapshotDirty10 times a snapshot after 10 random files changed,
// at two workspace sizes: the cost must not grow with the workspace. The
// memory store isolates the engine's work; the local one adds the disk.
func BenchmarkSnapshotDirty10(b *testing.B) {
	for _, backend := range []string{"memory", "local"} {
		for _, n := range []int{2000, 50000} {
			b.Run(fmt.Sprintf("%s/files=%d", backend, n), func(b *testing.B) {
				var store snapshot.Store = snapshot.NewMemory()
				if backend == "local" {
					local, err := snapshot.OpenLocal(b.TempDir())
					if err != nil {
						b.Fatal(err)
					}
					store = local
				}
				r, err := snapshot.OpenRepo(ctx, store, b.TempDir(), snapshot.RepoOptions{})
				if err != nil {
					b.Fatal(err)
				}
				defer func() { r.Close(); store.Close() }()
				base, err := r.CommitTree(ctx, buildTree(n), "")
				if err != nil {
					b.Fatal(err)
				}
				s, err := r.NewSession(ctx, snapshot.SessionOptions{Base: base.ID})
				if err != nil {
					b.Fatal(err)
				}
				rnd := rand.New(rand.NewPCG(1, 2))
				for i := 0; b.Loop(); i++ {
					b.StopTimer()
					for range 10 {
						f := rnd.IntN(n)
						d := f / 50
						p := vfs.Path(fmt.Sprintf("g%03d/d%04d/f%05d.txt", d/20, d, f))
						if _, err := s.WriteFile(vfs.Relaxed(ctx), p, strings.NewReader(fmt.Sprint(i, f)), vfs.WriteOptions{}); err != nil {
							b.Fatal(err)
						}
					}
					if err := store.Sync(ctx); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					if _, err := r.Snapshot(ctx, s, ""); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkReadSnapshotFile times reading a 4 KiB file whose content is a
// blob of the session's snapshot (the read path a remote may have to
// fetch for): whole with ReadFile, and through an open handle with ReadAt
// (what the FUSE mount does per read). Compare with and without a remote
// to see what looking for a local copy first costs.
func BenchmarkReadSnapshotFile(b *testing.B) {
	r, _, _ := newRepo(b)
	s, err := r.NewSession(ctx, snapshot.SessionOptions{ID: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	write(b, s, "f", strings.Repeat("x", 4096))
	if _, err := r.Snapshot(ctx, s, ""); err != nil {
		b.Fatal(err)
	}
	b.Run("ReadFile", func(b *testing.B) {
		for range b.N {
			if _, _, err := s.ReadFile(ctx, p("f")); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Handle.ReadAt", func(b *testing.B) {
		h, err := s.OpenFile(ctx, p("f"), os.O_RDONLY, 0)
		if err != nil {
			b.Fatal(err)
		}
		defer h.Close()
		buf := make([]byte, 4096)
		b.ResetTimer()
		for range b.N {
			if _, err := h.ReadAt(buf, 0); err != nil && err != io.EOF {
				b.Fatal(err)
			}
		}
	})
}
