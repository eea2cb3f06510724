//go:build !linux

package bench

import "errors"

// RoundTrip is `vfsd bench round-trip`, which needs Linux.
func RoundTrip(string, int) error {
	return errors.New("bench round-trip needs Linux")
}
