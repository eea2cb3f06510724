package textdiff

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestUnified(t *testing.T) {
	require.Empty(t, Unified("a", "b", "same\n", "same\n"))
	d := Unified("a/f.txt", "b/f.txt", "one\ntwo\nthree\n", "one\n2\nthree\n")
	require.Equal(t, "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n", d)
	added, removed := Counts(d)
	require.Equal(t, 1, added)
	require.Equal(t, 1, removed)
	d = Unified(NoFile, "b/new", "", "x")
	require.Contains(t, d, "+x\n\\ No newline at end of file")
}
