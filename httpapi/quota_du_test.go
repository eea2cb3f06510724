package httpapi_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// du returns the disk space the regular files under dir occupy (fileSpace
// says how much one takes on this system).
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
			total += fileSpace(path, d)
		}
		return nil
	}))
	return total
}
