//go:build !linux && !darwin && !freebsd

package vfs

import (
	"errors"
	"os"
)

// errNoData is what seekData returns when only a hole is left past off.
var errNoData = errors.New("no data after offset")

// seekData reports errors.ErrUnsupported: without SEEK_DATA (Windows)
// SparseReader reads every byte, holes included, as on a filesystem
// without hole reporting.
func seekData(f *os.File, off int64) (int64, error) { return 0, errors.ErrUnsupported }

// seekHole reports errors.ErrUnsupported, like seekData.
func seekHole(f *os.File, off int64) (int64, error) { return 0, errors.ErrUnsupported }
