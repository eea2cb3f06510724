package bench

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// RoundTrip asks for an extended attribute path does not have, n times:
// each is one request to the file system serving path (the kernel caches
// no xattrs), answered ENODATA. It is the body of `vfsd bench round-trip`,
// which the mount benchmark's round_trip step runs in a fresh process, as
// a container's program would: the benchmark's own process serves the
// vfsd mount, and a client there would compete with its server for the
// same threads.
func RoundTrip(path string, n int) error {
	var buf [64]byte
	for range n {
		_, err := unix.Getxattr(path, "user.vfsd-bench-absent", buf[:])
		if !errors.Is(err, unix.ENODATA) {
			return fmt.Errorf("getxattr %s: got %v, want ENODATA", path, err)
		}
	}
	return nil
}
