package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
)

// roundTripFile is the file the round_trip step asks about.
const roundTripFile = "round-trip"

// RoundTrip asks for an extended attribute path does not have, n times:
// each is one request to the file system serving path (the kernel caches
// no xattrs), answered ENODATA. It is the body of `vfsd bench round-trip`,
// which the mount benchmark's round_trip step runs in a fresh process, as
// a container's program would: the benchmark's own process serves the
// vfsd mount, and a client there would compete with its server for the
// same threads.
func RoundTrip(path string, n int) error { return roundTrip(path, n) }

// runRoundTrip runs `vfsd bench round-trip` on path.
func runRoundTrip(ctx context.Context, path string, n int) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("round_trip: cannot find this binary to run it again: %w", err)
	}
	out, err := exec.CommandContext(ctx, self, "bench", "round-trip", "--path", path, "--n", strconv.Itoa(n)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("bench round-trip: %v: %s", err, out)
	}
	return nil
}
