package mount

import "context"

// Backend is a session served at a host directory by one kind of mount:
// the FUSE Mount of this package, or the kernel overlay of mount/overlay.
// The daemon holds its mounts as Backends, and one conformance suite
// (mount/mounttest) runs the same POSIX checks against each.
type Backend interface {
	// Dir returns the mount point.
	Dir() string
	// Kind names the backend: "fuse" or "overlay".
	Kind() string
	// Sync makes the session hold everything the mount has acknowledged
	// to programs; snapshots, diffs, applies and tool calls call it first.
	Sync(ctx context.Context) error
	// Unmount unmounts (lazily if busy), after a last Sync. Safe to call
	// more than once.
	Unmount() error
}

// KindFUSE is what a FUSE Mount's Kind returns.
const KindFUSE = "fuse"

var _ Backend = (*Mount)(nil)

// Kind returns "fuse".
func (m *Mount) Kind() string { return KindFUSE }

// Sync makes the session hold everything the mount acknowledged. Every
// FUSE write is a session mutation when the kernel sends it, so there is
// nothing to do while the kernel caches no dirty pages of its own; with
// Options.Writeback it does, and Sync sends them (Flush).
func (m *Mount) Sync(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return m.Flush()
}
