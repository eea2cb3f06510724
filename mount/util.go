//go:build linux

package mount

import (
	"errors"
	"io"
)

func isEOF(err error) bool { return errors.Is(err, io.EOF) }
