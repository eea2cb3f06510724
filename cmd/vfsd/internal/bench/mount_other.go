//go:build !linux

package bench

import (
	"context"
	"errors"
	"io"
)

// Mount fails outside Linux: the mount benchmark times FUSE mounts, which
// need Linux.
func Mount(ctx context.Context, opts MountOptions, w io.Writer) error {
	return errors.New("vfsd bench mount: FUSE mounts need Linux; use the tools/API")
}
