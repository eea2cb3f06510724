//go:build !linux

package mount

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/vfsd/vfsd/vfs"
)

// ErrUnsupported is what New returns where FUSE mounts are not built: they
// need Linux. Sessions are still served through the tools and the API.
var ErrUnsupported = errors.New("FUSE mounts need Linux; use the tools/API")

// Mount is a session served at a directory (Linux only; New fails here).
type Mount struct{ dir, origin string }

// New fails with ErrUnsupported: this build has no FUSE mounts.
func New(s *vfs.Session, dir string, opts Options) (*Mount, error) {
	return nil, fmt.Errorf("mount %s on %s: %w", dir, runtime.GOOS, ErrUnsupported)
}

// Dir returns the mount point.
func (m *Mount) Dir() string { return m.dir }

// Origin returns the directory as the caller named it.
func (m *Mount) Origin() string { return m.origin }

// Wait returns at once: there is no server.
func (m *Mount) Wait() {}

// Unmount does nothing: there is nothing mounted.
func (m *Mount) Unmount() error { return nil }

// Flush does nothing: there is no mount.
func (m *Mount) Flush() error { return nil }
