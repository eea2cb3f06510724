package snapshot_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// reopenFixture writes a repository holding one session whose base is a
// snapshot of n files (50 per directory, 20 directories per group, as
// bench cow lays them out, all with one small content) and returns its
// directory and the path of the file to read.
func reopenFixture(b *testing.B, n int) (string, vfs.Path) {
	dir := b.TempDir()
	r, err := snapshot.OpenLocalRepo(ctx, dir, snapshot.RepoOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	content := "hello, lazy world\n"
	blob, _, err := r.Store().Put(ctx, snapshot.Blobs, strings.NewReader(content), snapshot.PutOptions{})
	if err != nil {
		b.Fatal(err)
	}
	tb := vfs.NewTreeBuilder(vfs.Node{Kind: vfs.KindDir, Ino: 1, Mode: 0o755, Version: 1})
	ino := uint64(1)
	var last vfs.Path
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
		tb.Set(p, vfs.Node{Kind: vfs.KindFile, Ino: ino, Mode: 0o644, Version: 1, Blob: blob, Size: int64(len(content))})
		last = p
	}
	base, err := r.CommitTree(ctx, tb.Tree(), "")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := r.NewSession(ctx, snapshot.SessionOptions{ID: "bench", Base: base.ID}); err != nil {
		b.Fatal(err)
	}
	return dir, last
}

// BenchmarkReopenRead times what a fresh process does to answer its first
// read: open the repository (recovering its one session, whose base is a
// snapshot of n files) and read one file. Loaded lazily, the cost does not
// grow with n; "whole" loads the base's every manifest, as before.
func BenchmarkReopenRead(b *testing.B) {
	for _, n := range []int{2000, 50000} {
		for _, mode := range []string{"lazy", "whole"} {
			b.Run(fmt.Sprintf("files=%d/%s", n, mode), func(b *testing.B) {
				dir, file := reopenFixture(b, n)
				snapshot.SetEagerDefault(mode == "whole")
				defer snapshot.SetEagerDefault(false)
				for b.Loop() {
					r, err := snapshot.OpenLocalRepo(ctx, dir, snapshot.RepoOptions{})
					if err != nil {
						b.Fatal(err)
					}
					s, err := r.Session("bench")
					if err != nil {
						b.Fatal(err)
					}
					if _, _, err := s.ReadFile(ctx, file); err != nil {
						b.Fatal(err)
					}
					if err := r.Close(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
