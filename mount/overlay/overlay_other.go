//go:build !linux

package overlay

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// ErrUnsupported is what New and Available return where the kernel
// overlay backend is not built: it needs Linux 6.5 or later.
var ErrUnsupported = errors.New("the overlay backend needs Linux 6.5 or later; use the FUSE backend or the tools/API")

// Mount is a session served by the kernel's overlayfs (Linux only; New
// fails here).
type Mount struct{ dir string }

// Available says why the overlay backend cannot mount here.
func Available() error { return fmt.Errorf("%s: %w", runtime.GOOS, ErrUnsupported) }

// New fails with ErrUnsupported.
func New(ctx context.Context, repo *snapshot.Repo, s *vfs.Session, dir string, opts Options) (*Mount, error) {
	return nil, Available()
}

// Dir returns the mount point.
func (m *Mount) Dir() string { return m.dir }

// Kind returns "overlay".
func (m *Mount) Kind() string { return Kind }

// Sync does nothing: nothing is mounted.
func (m *Mount) Sync(ctx context.Context) error { return ctx.Err() }

// Unmount does nothing: nothing is mounted.
func (m *Mount) Unmount() error { return nil }

// Base returns "": nothing is mounted.
func (m *Mount) Base() string { return "" }

// Meta reports nothing: nothing is mounted.
func (m *Mount) Meta() MetaReport { return MetaReport{} }

// LastIngest reports nothing: nothing is mounted.
func (m *Mount) LastIngest() IngestReport { return IngestReport{} }
