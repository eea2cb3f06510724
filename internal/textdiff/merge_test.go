package textdiff

import (
	stdctx "context"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// gitMerge runs git merge-file, the oracle, on the three texts.
func gitMerge(t *testing.T, base, ours, theirs string) (string, int) {
	t.Helper()
	dir := t.TempDir()
	for name, s := range map[string]string{"base": base, "ours": ours, "theirs": theirs} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644))
	}
	ctx, cancel := stdctx.WithTimeout(stdctx.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "merge-file", "-p", "-L", "ours", "-L", "base", "-L", "theirs", "ours", "base", "theirs")
	cmd.Dir = dir
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() > 0 {
		return string(out), ee.ExitCode()
	}
	require.NoError(t, err)
	return string(out), 0
}

func lines(s ...string) string { return strings.Join(s, "\n") + "\n" }

var mergeCases = []struct{ name, base, ours, theirs string }{
	{"clean, apart", lines("a", "b", "c", "d", "e", "f", "g"), lines("A", "b", "c", "d", "e", "f", "g"), lines("a", "b", "c", "d", "e", "f", "G")},
	{"only ours", lines("a", "b"), lines("a", "x", "b"), lines("a", "b")},
	{"only theirs", lines("a", "b"), lines("a", "b"), lines("a", "b", "c")},
	{"same change", lines("a", "b", "c"), lines("a", "B", "c"), lines("a", "B", "c")},
	{"conflict", lines("a", "b", "c"), lines("a", "ours", "c"), lines("a", "theirs", "c")},
	{"touching lines conflict", lines("a", "b", "c", "d"), lines("a", "B", "c", "d"), lines("a", "b", "C", "d")},
	{"both insert at one place", lines("a", "b"), lines("a", "x", "b"), lines("a", "y", "b")},
	{"narrowed to what differs", lines("a", "b", "c", "d", "e"), lines("a", "1", "2", "3", "e"), lines("a", "1", "X", "3", "e")},
	{"joined across few lines", lines("a", "b", "c", "d", "e", "f", "g"), lines("a", "1", "c", "d", "2", "f", "g"), lines("a", "9", "c", "d", "8", "f", "g")},
	{"delete vs modify", lines("a", "b", "c"), lines("a", "c"), lines("a", "B", "c")},
	{"no final newline", "a\nb\nc", "a\nB\nc", "a\nb\nC"},
	{"no final newline conflict", "a\nb", "a\nx", "a\ny"},
	{"empty base", "", lines("x"), lines("y")},
	{"both empty change", lines("a"), "", ""},
	{"far apart conflicts stay two", lines("a", "b", "c", "d", "e", "f", "g", "h", "i"), lines("1", "b", "c", "d", "e", "f", "g", "h", "2"), lines("3", "b", "c", "d", "e", "f", "g", "h", "4")},
	{"braces only between", lines("x", "{", "}", "{", "}", "y"), lines("X", "{", "}", "{", "}", "Y"), lines("Z", "{", "}", "{", "}", "W")},
}

func TestMergeMatchesGitMergeFile(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: it is the oracle of this test")
	}
	for _, tc := range mergeCases {
		t.Run(tc.name, func(t *testing.T) {
			want, n := gitMerge(t, tc.base, tc.ours, tc.theirs)
			got := Merge(tc.base, tc.ours, tc.theirs, "ours", "theirs")
			require.Equal(t, want, got.Text)
			require.Equal(t, n, got.Conflicts)
		})
	}
}

// TestMergeRandomEditsMatchGit merges random line edits of a base whose
// lines are all distinct (so every diff is unambiguous) and checks the
// result is git's.
func TestMergeRandomEditsMatchGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: it is the oracle of this test")
	}
	r := rand.New(rand.NewPCG(1, 2))
	edit := func(base []string, tag string) string {
		var out []string
		for i, l := range base {
			switch r.IntN(8) {
			case 0: // delete
			case 1:
				out = append(out, tag+l)
			case 2:
				out = append(out, l, tag+"new"+l)
			default:
				out = append(out, l)
			}
			_ = i
		}
		return strings.Join(out, "")
	}
	for round := range 60 {
		var base []string
		for i := range 5 + r.IntN(20) {
			base = append(base, "line"+string(rune('A'+i))+"\n")
		}
		b, o, th := strings.Join(base, ""), edit(base, "o"), edit(base, "t")
		want, n := gitMerge(t, b, o, th)
		got := Merge(b, o, th, "ours", "theirs")
		require.Equal(t, want, got.Text, "round %d\nbase:\n%s\nours:\n%s\ntheirs:\n%s", round, b, o, th)
		require.Equal(t, n, got.Conflicts, "round %d", round)
	}
}
