//go:build unix

package httpapi_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// du returns the disk space the regular files under dir occupy.
func du(t testing.TB, dir string) int64 {
	t.Helper()
	var total int64
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if d.Type().IsRegular() {
			var st syscall.Stat_t
			if err := syscall.Lstat(path, &st); err == nil {
				total += st.Blocks * 512
			}
		}
		return nil
	}))
	return total
}
