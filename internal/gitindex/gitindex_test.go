package gitindex

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAgainstGit builds real indexes with git (each version) and checks
// Parse against `git ls-files -s`, and that a stat refresh by git status
// keeps the entries while git add changes them.
func TestAgainstGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed (.ci/run installs it)")
	}
	for _, version := range []string{"2", "3", "4"} {
		t.Run("v"+version, func(t *testing.T) {
			dir := t.TempDir()
			git := func(args ...string) string {
				cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "index.version=" + version}, args...)...)
				cmd.Dir = dir
				out, err := cmd.CombinedOutput()
				require.NoError(t, err, "git %v: %s", args, out)
				return string(out)
			}
			git("init", "-q")
			for _, name := range []string{"a.txt", "dir/b.go", "dir/sub/c é.md", "z"} {
				require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(name), 0o644))
			}
			require.NoError(t, os.Chmod(filepath.Join(dir, "z"), 0o755))
			git("add", "-A")
			if version == "3" {
				git("update-index", "--skip-worktree", "a.txt")
			}
			git("commit", "-qm", "one")
			index := filepath.Join(dir, ".git", "index")
			before, err := os.ReadFile(index)
			require.NoError(t, err)
			es, err := Parse(before, 0)
			require.NoError(t, err)
			require.Len(t, es, 4)
			require.Equal(t, "dir/sub/c é.md", es[2].Path)
			require.EqualValues(t, 0o100755, es[3].Mode)

			// Touch every file: git status refreshes the cached stat data.
			later := time.Now().Add(time.Hour)
			for _, e := range es {
				require.NoError(t, os.Chtimes(filepath.Join(dir, e.Path), later, later))
			}
			git("status", "--porcelain")
			after, err := os.ReadFile(index)
			require.NoError(t, err)
			require.NotEqual(t, before, after, "git status rewrote the index")
			same, err := SameEntries(before, after)
			require.NoError(t, err)
			require.True(t, same, "only the stat cache changed")

			// A real change: a new file staged.
			require.NoError(t, os.WriteFile(filepath.Join(dir, "new.txt"), []byte("n"), 0o644))
			git("add", "new.txt")
			added, err := os.ReadFile(index)
			require.NoError(t, err)
			same, err = SameEntries(before, added)
			require.NoError(t, err)
			require.False(t, same)
		})
	}
}

func TestParseRefusesGarbage(t *testing.T) {
	for _, b := range [][]byte{nil, []byte("DIRC"), []byte("DIRC\x00\x00\x00\x09\x00\x00\x00\x01"),
		[]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x01short"), []byte("XXXX\x00\x00\x00\x02\x00\x00\x00\x00")} {
		_, err := Parse(b, 0)
		require.Error(t, err, "%q", b)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = Parse(b, 0) // never panics, never loops
	})
}
