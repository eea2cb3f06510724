package snapshot

import (
	"bytes"
	"encoding/json"
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
	f.Add([]byte(`{"format":"vfsd-snapshot/1","label":"\\","pack_index":"QUFB"}`))
	f.Add([]byte(`{"format":"vfsd-snapshot/1","pack_index":"AAAA","pack_index":"QUFB"}`))
	f.Add([]byte(`{"format":"vfsd-snapshot/1","root_node":{"mode":1,"pack_index":"QUFB"}}`))
	f.Add([]byte(`{"format":"vfsd-snapshot/1","pack_index":"QU\nFB"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		entries := map[vfs.Hash][2]int{}
		whole, wholeErr := decodeRecord(b, func(h vfs.Hash, off, n int) {
			require.True(t, off >= 0 && n >= 0 && off+n <= len(b), "pack entry out of bounds")
			_ = decodeDir(b[off:off+n], func(string, vfs.Node) error { return nil })
			entries[h] = [2]int{off, n}
		})
		// The head decoder (Get of a local record) agrees with the whole
		// one on every prefix: the same Record once the head is complete,
		// errShortHead before, never a different answer.
		head, packOff, headErr := decodeRecordHead(b)
		if headErr == nil {
			// The pack index never points outside the pack, and where the
			// pack decodes, it points where the pack says (or is unusable).
			table := decodePackIndex(head.PackIndex, int64(packOff), int64(len(b)))
			if table != nil {
				table.each(int64(len(b)), func(s packSlot) bool {
					require.True(t, s.off >= int64(packOff) && s.n >= 0 && s.off+int64(s.n) <= int64(len(b)), "pack index out of bounds")
					return true
				})
			}
			if wholeErr == nil && table != nil {
				for h, at := range entries {
					if s, ok := table.find(h); ok && s.off == int64(at[0]) {
						require.Equal(t, at[1], s.n)
					}
				}
			}
			head.PackIndex = nil // decodeRecord moves it out
		}
		if wholeErr == nil {
			require.NoError(t, headErr)
			require.Equal(t, whole, head)
		}
		if headErr == nil {
			require.True(t, packOff > 0 && packOff <= len(b))
			for _, k := range []int{0, 1, len(recordFormat), packOff - 1, packOff} {
				if k < 0 || k > len(b) {
					continue
				}
				h2, off2, err2 := decodeRecordHead(b[:k])
				if k == packOff {
					require.NoError(t, err2)
					h2.PackIndex = nil
					require.Equal(t, head, h2)
					require.Equal(t, packOff, off2)
				} else {
					require.ErrorIs(t, err2, errShortHead, "a prefix of a good head is short, not bad")
				}
			}
		}
		// The Record line decoder that takes the pack index out first
		// answers what json.Unmarshal answers, on any line.
		if line, _, ok := bytes.Cut(b, []byte("\n")); ok || len(b) > 0 {
			var fast, slow Record
			fastErr := unmarshalRecordLine(line, &fast)
			slowErr := json.Unmarshal(line, &slow)
			require.Equal(t, slowErr == nil, fastErr == nil, "line %q: %v vs %v", line, fastErr, slowErr)
			if slowErr == nil {
				if len(slow.PackIndex) == 0 {
					slow.PackIndex = nil
				}
				if len(fast.PackIndex) == 0 {
					fast.PackIndex = nil
				}
				require.Equal(t, slow, fast, "line %q", line)
			}
		}
		_ = decodeDir(b, func(name string, n vfs.Node) error {
			require.NotEmpty(t, name)
			require.NotContains(t, name, "/")
			return nil
		})
	})
}
