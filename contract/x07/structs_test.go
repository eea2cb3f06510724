package x07

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

// The byte layouts, field by field, as the document's tables give them.
func TestCapsLayout(t *testing.T) {
	c := PackCaps(0x01020304, 0x05060708, 10000, 64, FlagOverwrite|FlagAllowHidden)
	b := c.Encode()
	require.Len(t, b, 24, "FsCapsV1 is a fixed-length 24-byte struct")
	want := []struct {
		off  int
		v    uint32
		name string
	}{{0, 1, "version (must be 1)"}, {4, 0x01020304, "max_read_bytes"}, {8, 0x05060708, "max_write_bytes"},
		{12, 10000, "max_entries"}, {16, 64, "max_depth"}, {20, 10, "flags"}}
	for _, w := range want {
		require.Equal(t, w.v, binary.LittleEndian.Uint32(b[w.off:]), "offset %d: %s (u32_le)", w.off, w.name)
	}
	require.Equal(t, []byte{4, 3, 2, 1}, b[4:8], "u32_le: least significant byte first")
	got, err := DecodeCaps(b)
	require.NoError(t, err)
	require.Equal(t, c, got)
}

func TestCapsFlagsAndDefault(t *testing.T) {
	require.Equal(t, uint32(1), FlagAllowSymlinks, "bit 0: ALLOW_SYMLINKS")
	require.Equal(t, uint32(2), FlagAllowHidden, "bit 1: ALLOW_HIDDEN")
	require.Equal(t, uint32(4), FlagCreateParents, "bit 2: CREATE_PARENTS")
	require.Equal(t, uint32(8), FlagOverwrite, "bit 3: OVERWRITE")
	require.Equal(t, uint32(16), FlagAtomicWrite, "bit 4: ATOMIC_WRITE")
	d := DefaultCaps()
	require.Equal(t, FsCapsV1{Version: 1, MaxReadBytes: 16 << 20, MaxWriteBytes: 16 << 20, MaxEntries: 10000, MaxDepth: 64, Flags: 28}, d)
	require.True(t, d.Has(FlagCreateParents|FlagOverwrite|FlagAtomicWrite))
	require.False(t, d.Has(FlagAllowSymlinks))
	require.False(t, d.Has(FlagAllowHidden))
}

func TestDecodeCapsRejects(t *testing.T) {
	for _, b := range [][]byte{nil, make([]byte, 23), make([]byte, 25), make([]byte, 24)} {
		_, err := DecodeCaps(b)
		require.Error(t, err, "%d bytes", len(b))
	}
	v2 := DefaultCaps().Encode()
	v2[0] = 2
	_, err := DecodeCaps(v2)
	require.ErrorContains(t, err, "version")
	// Flag bits the document does not name are kept (the runner ignores them).
	c := PackCaps(0, 0, 0, 0, 0xffffffff)
	got, err := DecodeCaps(c.Encode())
	require.NoError(t, err)
	require.Equal(t, c, got)
}

func TestStatLayout(t *testing.T) {
	s := FsStatV1{Version: 1, Kind: KindFile, SizeBytes: 0xa0b0c0d0, MtimeUnixSecs: 1767323045}
	b := s.Encode()
	require.Len(t, b, 16, "FsStatV1 is a fixed-length 16-byte struct")
	for i, w := range []uint32{1, KindFile, 0xa0b0c0d0, 1767323045} {
		require.Equal(t, w, binary.LittleEndian.Uint32(b[4*i:]), "field %d", i)
	}
	got, err := DecodeStat(b)
	require.NoError(t, err)
	require.Equal(t, s, got)
	for k, name := range []string{"missing", "file", "dir", "symlink", "other"} {
		require.Equal(t, name, KindName(uint32(k)))
	}
	bad := FsStatV1{Version: 1, Kind: 5}.Encode()
	_, err = DecodeStat(bad)
	require.Error(t, err)
	_, err = DecodeStat(b[:15])
	require.Error(t, err)
	require.Equal(t, uint32(0xffffffff), clampU32(1<<40))
	require.Equal(t, uint32(0), clampU32(-5))
}

func TestCodeTable(t *testing.T) {
	want := map[int]string{60001: "FS_ERR_POLICY_DENY", 60002: "FS_ERR_DISABLED", 60003: "FS_ERR_BAD_PATH",
		60004: "FS_ERR_BAD_CAPS", 60010: "FS_ERR_NOT_FOUND", 60011: "FS_ERR_ALREADY_EXISTS", 60012: "FS_ERR_NOT_DIR",
		60013: "FS_ERR_IS_DIR", 60014: "FS_ERR_PERMISSION", 60015: "FS_ERR_IO", 60016: "FS_ERR_TOO_LARGE",
		60017: "FS_ERR_TOO_MANY_ENTRIES", 60018: "FS_ERR_DEPTH_EXCEEDED", 60019: "FS_ERR_SYMLINK_DENIED", 60020: "FS_ERR_UNSUPPORTED"}
	got := map[int]string{}
	for _, c := range Codes() {
		require.True(t, int(c) >= 60000 && int(c) <= 60999, "reserved v1 space")
		got[int(c)] = c.Name()
	}
	require.Equal(t, want, got)
}

// FuzzCaps: any bytes decode to caps only when they are 24 bytes of
// version 1, and such caps encode back to the same bytes.
func FuzzCaps(f *testing.F) {
	f.Add(DefaultCaps().Encode())
	f.Add([]byte{1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeCaps(b)
		if len(b) != CapsSize || binary.LittleEndian.Uint32(b) != 1 {
			require.Error(t, err)
			return
		}
		require.NoError(t, err)
		require.Equal(t, b, c.Encode())
	})
}

// FuzzStat: stat decode/encode round-trips, and encode(decode(x)) = x for
// every FsStatV1 a stat_v1 can produce.
func FuzzStat(f *testing.F) {
	f.Add(uint32(1), uint32(1), uint32(5), uint32(1767323045))
	f.Add(uint32(1), uint32(0), uint32(0), uint32(0))
	f.Fuzz(func(t *testing.T, version, kind, size, mtime uint32) {
		s := FsStatV1{Version: version, Kind: kind, SizeBytes: size, MtimeUnixSecs: mtime}
		got, err := DecodeStat(s.Encode())
		if version != 1 || kind > KindOther {
			require.Error(t, err)
			return
		}
		require.NoError(t, err)
		require.Equal(t, s, got)
	})
}
