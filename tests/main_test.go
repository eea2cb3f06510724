package tests

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain removes the vfsd binary the daemon tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}
