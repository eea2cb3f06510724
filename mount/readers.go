//go:build linux

package mount

import (
	"runtime"
	"sync"
)

// go-fuse keeps up to max(2, GOMAXPROCS)+1 goroutines blocked in read(2)
// on /dev/fuse, waiting for requests, and each holds a P (a scheduler slot)
// while it waits. With every P held so, the Go scheduler's monitor takes
// one back after 20 µs and hands it on, for nearly every request, and so
// never slows its own 20 µs polling down: during node's require() of a
// node_modules that was 15% of the mount's CPU in nanosleep alone, with
// twice fuse-overlayfs' context switches per request.
//
// So with Options.ReaderCap, a mount's server is created while
// GOMAXPROCS is 1 (go-fuse then keeps at most three readers: it reads
// GOMAXPROCS only then), and GOMAXPROCS is then left at least
// readerProcs(live mounts), so that some P is always idle. GOMAXPROCS is
// the process's: it is raised, never lowered, and only on this package's
// mounts.
var (
	readersMu   sync.Mutex
	liveServers int
)

// readerProcs is the GOMAXPROCS that leaves a P idle while n capped
// servers each have their three readers blocked.
func readerProcs(n int) int { return min(3*n+1, 64) }

// withReaderCap runs mount (which creates a go-fuse server) with go-fuse's
// readers capped, then raises GOMAXPROCS as needed; release undoes the
// count once the server is gone.
func withReaderCap[T any](mount func() (T, error)) (T, func(), error) {
	readersMu.Lock()
	defer readersMu.Unlock()
	prev := runtime.GOMAXPROCS(1)
	v, err := mount()
	if err != nil {
		runtime.GOMAXPROCS(prev)
		return v, func() {}, err
	}
	liveServers++
	runtime.GOMAXPROCS(max(prev, readerProcs(liveServers)))
	var once sync.Once
	return v, func() {
		once.Do(func() {
			readersMu.Lock()
			liveServers--
			readersMu.Unlock()
		})
	}, nil
}
