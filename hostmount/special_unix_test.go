//go:build unix

package hostmount

import (
	"os"
	"path/filepath"
	"syscall"

	"github.com/stretchr/testify/require"
)

// special makes a fifo under the root.
func (e *env) special(rel string) {
	p := e.host(rel)
	require.NoError(e.t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(e.t, syscall.Mkfifo(p, 0o644))
}
