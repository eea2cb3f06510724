//go:build !linux

package daemon

import (
	"context"
	"errors"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// buildOverlayMeta: the overlay backend is Linux's (PrepareOverlay answers
// unavailable before it gets here).
func buildOverlayMeta(context.Context, *snapshot.Snapshot, string, vfs.Owner) (*OverlayPrep, error) {
	return nil, errors.New("the kernel overlay backend needs Linux")
}
