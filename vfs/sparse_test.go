package vfs_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/vfs"
)

// TestSparseRoundTrip: what SparseWriter writes, SparseReader reads back
// byte for byte, whatever mix of data and zeros, aligned or not.
func TestSparseRoundTrip(t *testing.T) {
	data := func(n int, b byte) []byte { return bytes.Repeat([]byte{b}, n) }
	zeros := func(n int) []byte { return make([]byte, n) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	cases := map[string][]byte{
		"empty":              nil,
		"all zeros":          zeros(1 << 20),
		"data":               data(10000, 'x'),
		"hole in the middle": cat(data(5000, 'a'), zeros(300000), data(7, 'b')),
		"trailing hole":      cat(data(4096, 'a'), zeros(1<<20)),
		"leading hole":       cat(zeros(1<<20), data(3, 'z')),
		"short zero runs":    cat(data(100, 'a'), zeros(100), data(100, 'b'), zeros(4000), data(1, 'c')),
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			f, err := os.Create(filepath.Join(t.TempDir(), "f"))
			require.NoError(t, err)
			defer f.Close()
			w := vfs.NewSparseWriter(f)
			// Odd-sized writes cross chunk boundaries.
			for rest := content; len(rest) > 0; {
				n := min(len(rest), 7777)
				m, err := w.Write(rest[:n])
				require.NoError(t, err)
				require.Equal(t, n, m)
				rest = rest[n:]
			}
			require.NoError(t, w.Finish())
			fi, err := f.Stat()
			require.NoError(t, err)
			require.EqualValues(t, len(content), fi.Size())
			got, err := io.ReadAll(vfs.NewSparseReader(f, int64(len(content))))
			require.NoError(t, err)
			require.True(t, bytes.Equal(content, got), "content differs")
		})
	}
}
