package snapshot

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/vfs"
)

// testPack returns the header of a pack of the given blob contents and the
// pack's length.
func testPack(contents ...string) ([]byte, vfs.Hash, int64) {
	blobs := make([]packBlob, len(contents))
	var data int64
	for i, c := range contents {
		blobs[i] = packBlob{hash: vfs.HashOf([]byte(c)), size: int64(len(c))}
		data += int64(len(c))
	}
	head, name := encodePackHeader(blobs)
	return head, name, int64(len(head)) + data
}

func TestPackHeaderRoundTrip(t *testing.T) {
	head, name, size := testPack("alpha", "beta", "gamma gamma")
	ph, err := decodePackHeader(name, head, size)
	require.NoError(t, err)
	require.Equal(t, size, ph.size)
	off := int64(len(head))
	for i, c := range []string{"alpha", "beta", "gamma gamma"} {
		require.Equal(t, vfs.HashOf([]byte(c)), ph.blobs[i].hash)
		require.Equal(t, off, ph.blobs[i].off, "blob %d starts where the one before ends", i)
		require.Equal(t, int64(len(c)), ph.blobs[i].size)
		off += int64(len(c))
	}
	n, err := packHeaderLen(head[:packPrefixLen])
	require.NoError(t, err)
	require.Equal(t, len(head), n)
}

func TestPackHeaderRefused(t *testing.T) {
	head, name, size := testPack("alpha", "beta")
	withCount := func(count uint64, entries ...[]byte) []byte {
		b := []byte(packMagic + "\x00\x00\x00\x00")
		b = binary.AppendUvarint(b, count)
		for _, e := range entries {
			b = append(b, e...)
		}
		binary.BigEndian.PutUint32(b[len(packMagic):], uint32(len(b)-packPrefixLen))
		return b
	}
	entry := func(c string) []byte {
		h := vfs.HashOf([]byte(c))
		return binary.AppendUvarint(h[:], uint64(len(c)))
	}
	for _, tc := range []struct {
		what string
		head []byte
		size int64
		want string
	}{
		{"another name", head, size, "does not hash to its name"},
		{"a longer object", head, size + 1, "the object at"},
		{"a shorter object", head, size - 1, "past its length"},
		{"no magic", append([]byte("junkjunk"), head[8:]...), size, "no pack magic"},
		{"a newer format", append([]byte("vfsdpk2\n"), head[8:]...), size, "newer vfsd"},
		{"no blob", withCount(0), 0, "bad blob count"},
		{"a blob twice", withCount(2, entry("alpha"), entry("alpha")), 0, "listed twice"},
		{"an empty blob", withCount(1, entry("")), 0, "bad blob length"},
		{"bytes after the entries", append(withCount(1, entry("alpha")), 0), 0, "after the last entry"},
		{"fewer entries than counted", withCount(2, entry("alpha")), 0, "ends inside an entry"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			h := tc.head
			n := name
			if tc.what != "another name" && tc.what != "a longer object" && tc.what != "a shorter object" {
				// Fix the length field and name the header by its hash, so
				// that only the fault under test is wrong.
				if len(h) >= packPrefixLen && string(h[:len(packMagic)]) == packMagic {
					binary.BigEndian.PutUint32(h[len(packMagic):], uint32(len(h)-packPrefixLen))
				}
				n = vfs.HashOf(h)
			} else if tc.what == "another name" {
				n = vfs.HashOf([]byte("another"))
			}
			size := tc.size
			if size == 0 {
				size = int64(len(h)) + 5
			}
			_, err := decodePackHeader(n, h, size)
			require.ErrorIs(t, err, ErrBadPack)
			require.ErrorContains(t, err, tc.want)
		})
	}
	// A length field over the bound is refused before anything is read.
	big := []byte(packMagic + "\xff\xff\xff\xff")
	_, err := packHeaderLen(big)
	require.ErrorIs(t, err, ErrBadPack)
}

// FuzzDecodePackHeader: whatever a bucket's tenant writes under the packs'
// prefix, decoding its header never panics, and a header that decodes
// describes blobs that tile the pack exactly, each named once and no
// larger than a pack holds.
func FuzzDecodePackHeader(f *testing.F) {
	for _, c := range [][]string{{"a"}, {"alpha", "beta"}, {"x", "yy", "zzz", "wwww"}} {
		head, _, size := testPack(c...)
		f.Add(head, size)
	}
	f.Add([]byte(packMagic+"\x00\x00\x00\x01\x00"), int64(13))
	f.Fuzz(func(t *testing.T, head []byte, size int64) {
		ph, err := decodePackHeader(vfs.HashOf(head), head, size)
		if err != nil {
			return
		}
		off := int64(len(head))
		seen := map[vfs.Hash]bool{}
		for _, b := range ph.blobs {
			if b.off != off || b.size <= 0 || b.size > packMaxBlob || seen[b.hash] {
				t.Fatal(fmt.Sprintf("blob %+v at %d", b, off))
			}
			seen[b.hash] = true
			off += b.size
		}
		if off != size || len(ph.blobs) == 0 {
			t.Fatalf("blobs end at %d, pack is %d", off, size)
		}
		again, name := encodePackHeader(ph.blobs)
		if _, err := decodePackHeader(name, again, size); err != nil {
			t.Fatalf("re-encoded header refused: %v", err)
		}
	})
}
