package vfs

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// nodeList is a directory's worth of entries for the format-3 tests:
// files written moments apart, a subdirectory, a symlink, a device, a
// hard link, extended attributes and extreme values.
func nodeList(t testing.TB) ([]string, []Node) {
	xa, err := XattrsOf(map[string][]byte{"user.a": []byte("v")})
	require.NoError(t, err)
	base := int64(1_790_000_000_123_456_789)
	var names []string
	var nodes []Node
	for i := range 20 {
		names = append(names, fmt.Sprintf("file%04d.ts", i))
		bt := base + int64(i)*37_000
		nodes = append(nodes, Node{Kind: KindFile, Encoding: EncodingUTF8, Mode: 0o644, Uid: 1000, Gid: 1000, Nlink: 1,
			Size: int64(100 + i), Version: 1, Ino: uint64(100 + i), Btime: bt, Mtime: bt, Ctime: bt, Atime: bt,
			Blob: HashOf(fmt.Appendf(nil, "%d", i))})
	}
	names = append(names, "lib", "link", "null", "same-ino", "x", "y", "z")
	nodes = append(nodes,
		Node{Kind: KindDir, Mode: 0o755 | 1<<23, Uid: 1000, Gid: 1000, Ino: 7, Btime: base, Mtime: base + 5, Ctime: base + 5, Atime: base - 9, Blob: HashOf([]byte("m"))},
		Node{Kind: KindSymlink, Mode: 0o777, Uid: 0, Gid: 0, Nlink: 1, Target: "../lib", Ino: 8, Btime: base, Mtime: base, Ctime: base, Atime: base},
		Node{Kind: KindCharDev, Mode: 0o666, Uid: 0, Gid: 0, Nlink: 1, Rdev: 0x103, Ino: 8, Xattrs: xa},
		Node{Kind: KindFile, Mode: 0o600, Uid: NoOwner, Gid: NoOwner, Nlink: 3, Ino: math.MaxUint64, Size: -1, Blob: HashOf(nil), Upper: 4},
		Node{Kind: KindFile, Mode: 0o7777, Nlink: 1, Ino: 0, Btime: math.MinInt64, Mtime: math.MaxInt64, Ctime: math.MinInt64, Atime: 0, Blob: HashOf([]byte("x"))},
		Node{Kind: KindFile, Mode: 0o7777, Nlink: 1, Ino: 0, Btime: math.MaxInt64, Mtime: math.MinInt64, Ctime: 1, Atime: -1, Blob: HashOf([]byte("y"))},
		Node{Kind: KindFile, Mode: 0o644, Nlink: 1, Blob: HashOf([]byte("z"))},
	)
	return names, nodes
}

func TestNodeListRoundTrip(t *testing.T) {
	names, nodes := nodeList(t)
	var enc NodeListEncoder
	var b, v2 []byte
	for i := range nodes {
		b = enc.Append(b, names[i], nodes[i])
		v2 = AppendNode(v2, names[i], nodes[i])
	}
	var dec NodeListDecoder
	rest := b
	for i := range nodes {
		name, n, r, err := dec.Next(rest)
		require.NoError(t, err, "entry %d", i)
		require.Equal(t, names[i], name)
		// Format 2 is the reference: a node decodes to what it decodes to there.
		_, want, _, err := DecodeNode(AppendNode(nil, names[i], nodes[i]))
		require.NoError(t, err)
		require.Equal(t, want, n, "entry %d (%s)", i, name)
		rest = r
	}
	require.Empty(t, rest)
	t.Logf("format 3: %d bytes, format 2: %d bytes, for %d entries", len(b), len(v2), len(nodes))
	require.Less(t, len(b)*10, len(v2)*7, "format 3 is at least 30%% smaller for a directory of files written at once")
}

// TestNodeListCanonical: every other encoding of the same entries is refused.
func TestNodeListCanonical(t *testing.T) {
	n := Node{Kind: KindFile, Mode: 0o644, Nlink: 1, Ino: 5, Btime: 10, Mtime: 10, Ctime: 10, Atime: 10, Blob: HashOf(nil)}
	var enc NodeListEncoder
	first := enc.Append(nil, "abc", n)
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"a shorter shared prefix", append([]byte{1, 2, 'b', 'd'}, first[5:]...)},
		{"an empty suffix", []byte{3, 0}},
		{"a prefix past the previous name", []byte{4, 1, 'x'}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var dec NodeListDecoder
			_, _, rest, err := dec.Next(first)
			require.NoError(t, err)
			require.Empty(t, rest)
			_, _, _, err = dec.Next(tc.b)
			require.ErrorIs(t, err, ErrBadEncoding)
		})
	}
	// A field equal to the previous entry's, written out.
	var dec NodeListDecoder
	b := NodeListEncoder{}
	one := b.Append(nil, "a", n)
	_, _, _, err := dec.Next(one)
	require.NoError(t, err)
	two := b.Append(nil, "b", n) // mode, owner, link count the same; ino the same: all left out
	require.Less(t, len(two), 45)
	_, _, _, err = dec.Next(two)
	require.NoError(t, err)
}

// FuzzDecodeNodeList feeds arbitrary bytes to the format-3 decoder: it
// must never panic, and the entries it accepts must encode back to the
// same bytes.
func FuzzDecodeNodeList(f *testing.F) {
	names, nodes := nodeList(f)
	var enc NodeListEncoder
	var all []byte
	for i := range nodes {
		all = enc.Append(all, names[i], nodes[i])
	}
	f.Add(all)
	var one NodeListEncoder
	f.Add(one.Append(nil, "d", Node{Kind: KindDir, Mode: 0o2755}))
	f.Add([]byte{0, 1, 'a', 1, 0xff, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		var dec NodeListDecoder
		var enc NodeListEncoder
		again := []byte{}
		rest := b
		for len(rest) > 0 {
			name, n, r, err := dec.Next(rest)
			if err != nil {
				break
			}
			again = enc.Append(again, name, n)
			rest = r
		}
		require.Equal(t, b[:len(b)-len(rest)], again, "decode then encode must round-trip")
	})
}
