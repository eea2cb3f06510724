package snapshot_test

import (
	"testing"
	"time"

	"github.com/vfsd/vfsd/snapshot"
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
