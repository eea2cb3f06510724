package snapshot

// Benchmarks of the manifest code itself, without any store.

import (
	"fmt"
	"testing"

	"github.com/vfsd/vfsd/vfs"
)

// BenchmarkEncodeDir50 encodes and hashes one directory of 50 files.
func BenchmarkEncodeDir50(b *testing.B) {
	tb := vfs.NewTreeBuilder(vfs.Node{Kind: vfs.KindDir, Ino: 1, Mode: 0o755})
	tb.Set("d", vfs.Node{Kind: vfs.KindDir, Ino: 2, Mode: 0o755})
	for i := range 50 {
		tb.Set(vfs.Path(fmt.Sprintf("d/f%05d.txt", i)), vfs.Node{Kind: vfs.KindFile, Ino: uint64(i + 3), Blob: vfs.HashOf([]byte{byte(i)}), Size: 8192, Created: 1763781111000, Updated: 1763781111000, Version: 1, Mode: 0o644})
	}
	t := tb.Tree()
	b.ReportAllocs()
	for b.Loop() {
		m, _ := encodeDir(t, "d", nil)
		_ = vfs.HashOf(m)
	}
}
