//go:build linux

package overlay

import "time"

// Abandon forgets the mount without unmounting it, as a killed daemon does.
func (m *Mount) Abandon() {
	m.cancel()
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.unmountOnce.Do(func() {})
}

// SetLayerGrace sets how recently used a layer is never collected, and
// returns what restores it.
func SetLayerGrace(d time.Duration) func() {
	old := layerGrace
	layerGrace = d
	return func() { layerGrace = old }
}

// MountedLowers is mountedLowers.
var MountedLowers = mountedLowers

// SetAfterRead sets a function an ingest runs after listing the upper
// root ("listed") and between reading the upper directory and applying it
// ("read"), and returns what removes it.
func SetAfterRead(f func(stage string)) func() {
	testHookRead = f
	return func() { testHookRead = nil }
}
