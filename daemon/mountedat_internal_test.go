package daemon

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMountedAt(t *testing.T) {
	mounted, known := mountedAt("/proc")
	if !known {
		t.Skip("no /proc/self/mountinfo here")
	}
	require.True(t, mounted)
	mounted, _ = mountedAt(t.TempDir())
	require.False(t, mounted)
}
