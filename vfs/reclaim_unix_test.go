//go:build unix

package vfs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReclaimUpper recovers upper files as a crash in a snapshot's seal
// may leave them: a file of the session's own is truncated in place to
// its committed size; a read-only one is made writable again; one that
// is also a blob (a second name of its inode) is replaced by a copy, so
// that the blob keeps its bytes.
func TestReclaimUpper(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mode     os.FileMode
		linked   bool
		size     int64
		wantSame bool // truncated in place: the same inode
	}{
		{name: "own file", mode: 0o600, size: 5, wantSame: true},
		{name: "made read-only by the seal", mode: 0o444, size: 5, wantSame: true},
		{name: "linked as a blob", mode: 0o444, linked: true, size: 5},
		{name: "linked as a blob, committed size longer", mode: 0o444, linked: true, size: 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "1f")
			blob := filepath.Join(dir, "blob")
			const content = "0123456789"
			require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
			require.NoError(t, os.Chmod(path, tc.mode))
			if tc.linked {
				require.NoError(t, os.Link(path, blob))
			}
			before, err := os.Stat(path)
			require.NoError(t, err)

			require.NoError(t, reclaimUpper(path, tc.size))

			after, err := os.Stat(path)
			require.NoError(t, err)
			require.Equal(t, tc.wantSame, os.SameFile(before, after))
			require.Equal(t, os.FileMode(0o600), after.Mode().Perm()&0o600, "writable by the session")
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			want := content[:min(int(tc.size), len(content))]
			for len(want) < int(tc.size) {
				want += "\x00"
			}
			require.Equal(t, want, string(got))
			if tc.linked {
				b, err := os.ReadFile(blob)
				require.NoError(t, err)
				require.Equal(t, content, string(b), "the blob keeps its bytes")
			}
			left, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Len(t, left, map[bool]int{true: 2, false: 1}[tc.linked], "no temporary file is left")
		})
	}
}
