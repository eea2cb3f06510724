//go:build linux

package mounttest

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// HostState describes a host tree for an unchanged-or-not comparison in
// the attack tests: every entry's kind and permissions, owner, size,
// mtime, and a file's content or a symlink's target. Directories' times
// are included: nothing may create or remove entries in a victim
// directory either.
func HostState(t testing.TB, root string) string {
	t.Helper()
	var lines []string
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		rel, _ := filepath.Rel(root, p)
		var st unix.Stat_t
		require.NoError(t, unix.Lstat(p, &st))
		line := fmt.Sprintf("%s mode=%o owner=%d:%d size=%d mtime=%d", rel, st.Mode, st.Uid, st.Gid, st.Size,
			unix.TimespecToNsec(st.Mtim))
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			line += fmt.Sprintf(" %q", b)
		case unix.S_IFLNK:
			target, err := os.Readlink(p)
			require.NoError(t, err)
			line += " -> " + target
		}
		lines = append(lines, line)
		return nil
	}))
	return strings.Join(lines, "\n")
}
