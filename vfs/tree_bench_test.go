package vfs

import (
	"fmt"
	"testing"
)

// benchTree is a tree of 20,000 files in 350 directories, and their paths.
func benchTree(b *testing.B) (Tree, []Path) {
	var evs []Event
	var ps []Path
	for i := range 20000 {
		p := MustPath(fmt.Sprintf("d%d/e%d/f%d.txt", i%50, i%7, i))
		ps = append(ps, p)
		evs = append(evs, Event{Op: OpWrite, Path: p, Parents: true, Blob: HashOf([]byte(p)), Size: 1, Time: int64(i + 1)})
	}
	t := EmptyTree(0)
	for i := range evs {
		var err error
		if t, err = Reduce(t, &evs[i]); err != nil {
			b.Fatal(err)
		}
	}
	return t, ps
}

// BenchmarkTreeLookup: the hot path of every tool call and FUSE request,
// a lookup in a tree that is not lazy.
func BenchmarkTreeLookup(b *testing.B) {
	t, ps := benchTree(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		n, ok, err := t.Lookup(ps[i%len(ps)])
		if !ok || err != nil || n.Size != 1 {
			b.Fatal("missing")
		}
	}
}
