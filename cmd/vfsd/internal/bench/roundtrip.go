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
