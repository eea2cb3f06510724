package hostmount

import (
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/vfs"
)

// FuzzPatterns feeds arbitrary include and exclude patterns to a mount: an
// accepted pattern is relative and never climbs, a refused one is refused
// with invalid_pattern, and matching never panics.
func FuzzPatterns(f *testing.F) {
	for _, s := range []string{"**/*.go", "a/**", "../x", "/etc/**", "[", "{a,b}/*", `\*`, "**", "a/../b", "x[!y]z"} {
		f.Add(s, "dir/file.go")
	}
	host := "/srv/root/p"
	if runtime.GOOS == "windows" {
		host = `C:\srv\root\p`
	}
	f.Fuzz(func(t *testing.T, pat, rel string) {
		mp, err := validate(Mount{HostPath: host, Include: []string{pat}, Exclude: []string{pat}})
		if err != nil {
			require.Equal(t, vfs.CodeInvalidPattern, vfs.CodeOf(err), "%v", err)
			return
		}
		require.False(t, strings.HasPrefix(pat, "/"))
		require.NotContains(t, strings.Split(pat, "/"), "..")
		mp.included(rel)
		mp.excluded(rel, true)
		mp.excluded(rel, false)
	})
}
