//go:build !linux

package bench

import "errors"

func roundTrip(string, int) error {
	return errors.New("bench round-trip needs Linux")
}
