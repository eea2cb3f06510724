//go:build !linux

package bench

import (
	"context"
	"errors"
	"io"
)

// VolumesCSIOptions configure the CSI part of `vfsd bench volumes`.
type VolumesCSIOptions struct {
	Sizes    []int
	Forks    int
	Repeats  int
	Backends []string
	Dir      string
	NoCopies bool
	Log      io.Writer
}

// VolumesCSI needs Linux: the CSI driver mounts volumes.
func VolumesCSI(ctx context.Context, opts VolumesCSIOptions, out io.Writer) error {
	return errors.New("bench volumes: the CSI driver mounts volumes on Linux only")
}
