package x07

import (
	"encoding/binary"
	"fmt"
)

// CapsSize and StatSize are the fixed lengths of FsCapsV1 and FsStatV1.
const (
	CapsSize = 24
	StatSize = 16
)

// The FsCapsV1 flag bits ("Flags (u32)").
const (
	FlagAllowSymlinks  uint32 = 1 << 0 // bit 0: ALLOW_SYMLINKS
	FlagAllowHidden    uint32 = 1 << 1 // bit 1: ALLOW_HIDDEN
	FlagCreateParents  uint32 = 1 << 2 // bit 2: CREATE_PARENTS (mkdirs/write)
	FlagOverwrite      uint32 = 1 << 3 // bit 3: OVERWRITE (write)
	FlagAtomicWrite    uint32 = 1 << 4 // bit 4: ATOMIC_WRITE (write via temp + rename)
	defaultCapsFlags          = FlagCreateParents | FlagOverwrite | FlagAtomicWrite
	structVersion      uint32 = 1
	defaultMaxRead     uint32 = 16 << 20 // std.os.fs.spec.caps_default_v1 and the runner's policy default
	defaultMaxWrite    uint32 = 16 << 20
	defaultMaxEntries  uint32 = 10_000
	defaultMaxWalkDeep uint32 = 64
)

// FsCapsV1 is the caps struct every operation takes: 24 bytes, six u32_le
// fields in this order. A zero max means "use policy/default".
type FsCapsV1 struct {
	Version       uint32 `json:"version"`         // offset 0, must be 1
	MaxReadBytes  uint32 `json:"max_read_bytes"`  // offset 4
	MaxWriteBytes uint32 `json:"max_write_bytes"` // offset 8
	MaxEntries    uint32 `json:"max_entries"`     // offset 12 (for list/walk)
	MaxDepth      uint32 `json:"max_depth"`       // offset 16 (for walk)
	Flags         uint32 `json:"flags"`           // offset 20
}

// DefaultCaps is std.os.fs.spec.caps_default_v1: 16 MiB reads and
// writes, 10,000 entries, depth 64, CREATE_PARENTS|OVERWRITE|ATOMIC_WRITE.
func DefaultCaps() FsCapsV1 {
	return PackCaps(defaultMaxRead, defaultMaxWrite, defaultMaxEntries, defaultMaxWalkDeep, defaultCapsFlags)
}

// PackCaps is std.os.fs.spec.caps_pack_v1: version 1 and the given fields.
func PackCaps(maxRead, maxWrite, maxEntries, maxDepth, flags uint32) FsCapsV1 {
	return FsCapsV1{Version: structVersion, MaxReadBytes: maxRead, MaxWriteBytes: maxWrite,
		MaxEntries: maxEntries, MaxDepth: maxDepth, Flags: flags}
}

// Has reports whether every bit of flag is set.
func (c FsCapsV1) Has(flag uint32) bool { return c.Flags&flag == flag }

// Encode returns the 24-byte little-endian form.
func (c FsCapsV1) Encode() []byte {
	b := make([]byte, CapsSize)
	for i, v := range []uint32{c.Version, c.MaxReadBytes, c.MaxWriteBytes, c.MaxEntries, c.MaxDepth, c.Flags} {
		binary.LittleEndian.PutUint32(b[4*i:], v)
	}
	return b
}

// DecodeCaps parses an FsCapsV1: exactly 24 bytes with version 1 (the
// error is FS_ERR_BAD_CAPS otherwise). Flag bits the document does not
// name are kept and ignored.
func DecodeCaps(b []byte) (FsCapsV1, error) {
	if len(b) != CapsSize {
		return FsCapsV1{}, fmt.Errorf("caps are %d bytes; FsCapsV1 is exactly %d (six u32_le fields)", len(b), CapsSize)
	}
	u := func(i int) uint32 { return binary.LittleEndian.Uint32(b[4*i:]) }
	c := FsCapsV1{Version: u(0), MaxReadBytes: u(1), MaxWriteBytes: u(2), MaxEntries: u(3), MaxDepth: u(4), Flags: u(5)}
	if c.Version != structVersion {
		return FsCapsV1{}, fmt.Errorf("caps version is %d; FsCapsV1 must be version 1", c.Version)
	}
	return c, nil
}

// The FsStatV1 kind values.
const (
	KindMissing uint32 = 0 // missing / does not exist
	KindFile    uint32 = 1
	KindDir     uint32 = 2
	KindSymlink uint32 = 3
	KindOther   uint32 = 4
)

// FsStatV1 is stat_v1's payload: 16 bytes, four u32_le fields in this
// order.
type FsStatV1 struct {
	Version       uint32 `json:"version"`          // offset 0, must be 1
	Kind          uint32 `json:"kind"`             // offset 4
	SizeBytes     uint32 `json:"size_bytes_u32"`   // offset 8, 0 for non-files
	MtimeUnixSecs uint32 `json:"mtime_unix_s_u32"` // offset 12, 0 if unknown
}

// Encode returns the 16-byte little-endian form.
func (s FsStatV1) Encode() []byte {
	b := make([]byte, StatSize)
	for i, v := range []uint32{s.Version, s.Kind, s.SizeBytes, s.MtimeUnixSecs} {
		binary.LittleEndian.PutUint32(b[4*i:], v)
	}
	return b
}

// DecodeStat parses an FsStatV1: exactly 16 bytes, version 1, a known
// kind.
func DecodeStat(b []byte) (FsStatV1, error) {
	if len(b) != StatSize {
		return FsStatV1{}, fmt.Errorf("stat is %d bytes; FsStatV1 is exactly %d (four u32_le fields)", len(b), StatSize)
	}
	u := func(i int) uint32 { return binary.LittleEndian.Uint32(b[4*i:]) }
	s := FsStatV1{Version: u(0), Kind: u(1), SizeBytes: u(2), MtimeUnixSecs: u(3)}
	if s.Version != structVersion {
		return FsStatV1{}, fmt.Errorf("stat version is %d; FsStatV1 must be version 1", s.Version)
	}
	if s.Kind > KindOther {
		return FsStatV1{}, fmt.Errorf("stat kind is %d; FsStatV1 kinds are 0 (missing) to 4 (other)", s.Kind)
	}
	return s, nil
}

// KindName names a kind value ("missing", "file", "dir", "symlink",
// "other").
func KindName(k uint32) string {
	switch k {
	case KindMissing:
		return "missing"
	case KindFile:
		return "file"
	case KindDir:
		return "dir"
	case KindSymlink:
		return "symlink"
	}
	return "other"
}

// clampU32 turns a non-negative int64 into a u32, saturating.
func clampU32(v int64) uint32 {
	switch {
	case v <= 0:
		return 0
	case v > 0xffffffff:
		return 0xffffffff
	}
	return uint32(v)
}
