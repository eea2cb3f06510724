//go:build linux

package beneath

// WithoutXattrAt makes the *XattrsAt calls take their fallback (the kernel
// without the *xattrat system calls) and returns what restores them.
func WithoutXattrAt() func() {
	old := noXattrAt.Load()
	noXattrAt.Store(true)
	return func() { noXattrAt.Store(old) }
}
