//go:build linux

package overlay

// Abandon forgets the mount without unmounting it, as a killed daemon does.
func (m *Mount) Abandon() {
	m.cancel()
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.unmountOnce.Do(func() {})
}
