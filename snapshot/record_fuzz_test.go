package snapshot

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/vfs"
)

// FuzzDecodeRecord feeds arbitrary bytes to the record and manifest
// decoders: they must never panic, and pack offsets must stay in bounds.
func FuzzDecodeRecord(f *testing.F) {
	m := []byte(manifestFormat)
	m = vfs.AppendNode(m, "a", vfs.Node{Kind: vfs.KindFile, Blob: vfs.HashOf([]byte("x")), Size: 1})
	good, err := encodeRecord(Record{Format: recordFormat, Files: 1}, []packEntry{{hash: vfs.HashOf(m), data: m}})
	require.NoError(f, err)
	f.Add(good)
	f.Add(good[:len(good)-3])
	f.Add([]byte(recordFormat + "\n{}\n"))
	f.Add(m)
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = decodeRecord(b, func(h vfs.Hash, off, n int) {
			require.True(t, off >= 0 && n >= 0 && off+n <= len(b), "pack entry out of bounds")
			_ = decodeDir(b[off:off+n], func(string, vfs.Node) error { return nil })
		})
		_ = decodeDir(b, func(name string, n vfs.Node) error {
			require.NotEmpty(t, name)
			require.NotContains(t, name, "/")
			return nil
		})
	})
}
