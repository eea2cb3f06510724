//go:build linux

package overlay_test

import (
	"testing"

	"github.com/vfsd/vfsd/mount"
	"github.com/vfsd/vfsd/mount/mounttest"
	"github.com/vfsd/vfsd/vfs"
)

// TestConformance runs the backends' shared suite against the overlay.
func TestConformance(t *testing.T) {
	requireOverlay(t)
	mounttest.Run(t, func(t *testing.T) (*vfs.Session, mount.Backend) {
		e := newEnv(t)
		return e.s, e.mount(t)
	}, nil)
}
