package httpapi_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// du returns the disk space the regular files under dir occupy: their sizes, as
// Windows reports no allocated blocks.
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
			if fi, err := d.Info(); err == nil {
				total += fi.Size() // Windows reports no allocated blocks
			}
		}
		return nil
	}))
	return total
}
