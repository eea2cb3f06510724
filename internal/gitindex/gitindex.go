// Package gitindex reads the entries of a git index file (.git/index):
// which paths are staged, with which mode and object — and nothing of the
// stat data git caches beside them. `git status` rewrites the index to
// refresh that cache; comparing entries tells such a rewrite from a real
// change (git add, git rm, a merge's stages).
package gitindex

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// Entry is one index entry, without its stat data.
type Entry struct {
	Path  string
	Mode  uint32
	OID   string // the object's ID, hex
	Stage int    // 0, or 1-3 during a merge
	// Flags are the entry's other flags that git keeps: assume-valid, and
	// (version 3 and up) skip-worktree and intent-to-add.
	Flags uint32
}

// maxEntries bounds what Parse accepts: far more than any real index.
const maxEntries = 16 << 20

// Parse reads an index of version 2, 3 or 4. oidLen is the object ID
// length in bytes: 20 (SHA-1) or 32 (SHA-256); 0 tries both.
func Parse(b []byte, oidLen int) ([]Entry, error) {
	if oidLen == 0 {
		es, err := Parse(b, 20)
		if err == nil {
			return es, nil
		}
		if es, err2 := Parse(b, 32); err2 == nil {
			return es, nil
		}
		return nil, err
	}
	if len(b) < 12 || string(b[:4]) != "DIRC" {
		return nil, errors.New("git index: no DIRC header")
	}
	version := binary.BigEndian.Uint32(b[4:8])
	if version < 2 || version > 4 {
		return nil, fmt.Errorf("git index: version %d", version)
	}
	n := binary.BigEndian.Uint32(b[8:12])
	if n > maxEntries {
		return nil, fmt.Errorf("git index: %d entries", n)
	}
	const statLen = 40 // ctime, mtime (sec, nsec), dev, ino, mode, uid, gid, size
	out := make([]Entry, 0, min(int(n), len(b)/62))
	off, prev := 12, ""
	for range n {
		start := off
		if off+statLen+oidLen+2 > len(b) {
			return nil, errors.New("git index: truncated entry")
		}
		mode := binary.BigEndian.Uint32(b[off+24 : off+28])
		off += statLen
		oid := fmt.Sprintf("%x", b[off:off+oidLen])
		off += oidLen
		flags := uint32(binary.BigEndian.Uint16(b[off : off+2]))
		off += 2
		if flags&0x4000 != 0 { // extended
			if version < 3 || off+2 > len(b) {
				return nil, errors.New("git index: bad extended flags")
			}
			flags |= uint32(binary.BigEndian.Uint16(b[off:off+2])) << 16
			off += 2
		}
		var path string
		if version == 4 {
			strip, k := binary.Uvarint(b[off:])
			if k <= 0 || strip > uint64(len(prev)) {
				return nil, errors.New("git index: bad path prefix")
			}
			off += k
			end := bytes.IndexByte(b[off:], 0)
			if end < 0 {
				return nil, errors.New("git index: unterminated path")
			}
			path = prev[:len(prev)-int(strip)] + string(b[off:off+end])
			off += end + 1
		} else {
			nameLen := int(flags & 0xfff)
			end := bytes.IndexByte(b[off:], 0)
			if end < 0 || (nameLen < 0xfff && end != nameLen) {
				return nil, errors.New("git index: bad path")
			}
			path = string(b[off : off+end])
			off += end
			// Padded with 1-8 NULs to a multiple of 8 bytes.
			off = start + (off-start+8)&^7
			if off > len(b) {
				return nil, errors.New("git index: truncated padding")
			}
		}
		prev = path
		out = append(out, Entry{Path: path, Mode: mode, OID: oid, Stage: int(flags>>12) & 3,
			Flags: flags &^ 0x3fff &^ 0x4000})
	}
	return out, nil
}

// SameEntries reports whether two index files stage exactly the same
// entries: they differ, if at all, only in cached stat data and in the
// extensions git derives (cache tree, untracked cache, ...).
func SameEntries(a, b []byte) (bool, error) {
	ea, err := Parse(a, 0)
	if err != nil {
		return false, err
	}
	eb, err := Parse(b, 0)
	if err != nil {
		return false, err
	}
	return slices.Equal(ea, eb), nil
}
