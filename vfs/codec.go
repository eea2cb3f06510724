package vfs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
)

// Node records are encoded compactly and canonically — the same node always
// encodes to the same bytes — for snapshot manifests and tree digests.
// Format 2 (AppendNode, DecodeNode):
//
//	name     uvarint length, bytes
//	kind     byte
//	encoding byte
//	mode     uvarint: the twelve Unix permission bits (0o7777)
//	uid      uvarint (NoOwner: not recorded)
//	gid      uvarint
//	nlink    uvarint: 0 for directories (a tree computes theirs), else >= 1
//	size     varint
//	version  uvarint
//	ino      uvarint
//	btime    varint (Unix ns)
//	mtime    varint (Unix ns)
//	ctime    varint (Unix ns)
//	atime    varint (Unix ns)
//	flags    byte: 1 blob, 2 upper, 4 target, 8 rdev, 16 xattrs
//	blob     32 bytes, if flagged
//	upper    uvarint, if flagged
//	target   uvarint length, bytes, if flagged
//	rdev     uvarint, if flagged
//	xattrs   uvarint count, then per attribute in name order: uvarint
//	         length, name, uvarint length, value; if flagged
//
// Format 1 (DecodeNodeV1), written before owners, links and nanosecond
// times: name, kind, encoding, mode (0o777 at most), size, version, ino,
// created and updated (varint Unix ms), flags (blob, upper, target) and the
// flagged fields. Its nodes decode with owner NoOwner and all times from
// created (birth) and updated (the others).
const (
	flagBlob   = 1 << 0
	flagUpper  = 1 << 1
	flagTarget = 1 << 2
	flagRdev   = 1 << 3
	flagXattrs = 1 << 4

	flagsV1 = flagBlob | flagUpper | flagTarget
	flagsV2 = flagsV1 | flagRdev | flagXattrs
)

// ErrBadEncoding is returned when decoding bytes that are not a node record.
var ErrBadEncoding = errors.New("malformed node record")

// AppendNode appends the canonical encoding (format 2) of a node named
// name to b.
func AppendNode(b []byte, name string, n Node) []byte {
	b = binary.AppendUvarint(b, uint64(len(name)))
	b = append(b, name...)
	b = append(b, byte(n.Kind), byte(n.Encoding))
	b = binary.AppendUvarint(b, uint64(unixPerm(n.Mode)))
	b = binary.AppendUvarint(b, uint64(n.Uid))
	b = binary.AppendUvarint(b, uint64(n.Gid))
	nlink := uint64(n.Nlink)
	if n.IsDir() {
		nlink = 0
	} else if nlink == 0 {
		nlink = 1
	}
	b = binary.AppendUvarint(b, nlink)
	b = binary.AppendVarint(b, n.Size)
	b = binary.AppendUvarint(b, n.Version)
	b = binary.AppendUvarint(b, n.Ino)
	b = binary.AppendVarint(b, n.Btime)
	b = binary.AppendVarint(b, n.Mtime)
	b = binary.AppendVarint(b, n.Ctime)
	b = binary.AppendVarint(b, n.Atime)
	return appendFlagged(b, n, flagsV2)
}

// appendFlagged appends the flags byte naming n's optional fields that are
// set, of those allowed, and then those fields in flag order.
func appendFlagged(b []byte, n Node, allowed byte) []byte {
	var flags byte
	if !n.Blob.IsZero() {
		flags |= flagBlob
	}
	if n.Upper != 0 {
		flags |= flagUpper
	}
	if n.Target != "" {
		flags |= flagTarget
	}
	if n.Rdev != 0 {
		flags |= flagRdev
	}
	if !n.Xattrs.IsEmpty() {
		flags |= flagXattrs
	}
	flags &= allowed
	b = append(b, flags)
	if flags&flagBlob != 0 {
		b = append(b, n.Blob[:]...)
	}
	if flags&flagUpper != 0 {
		b = binary.AppendUvarint(b, n.Upper)
	}
	if flags&flagTarget != 0 {
		b = binary.AppendUvarint(b, uint64(len(n.Target)))
		b = append(b, n.Target...)
	}
	if flags&flagRdev != 0 {
		b = binary.AppendUvarint(b, n.Rdev)
	}
	if flags&flagXattrs != 0 {
		b = appendXattrs(b, n.Xattrs)
	}
	return b
}

// appendNodeV1 appends a node in format 1, as older stores hold it (for
// tests and fuzzing of DecodeNodeV1).
func appendNodeV1(b []byte, name string, n Node) []byte {
	b = binary.AppendUvarint(b, uint64(len(name)))
	b = append(b, name...)
	b = append(b, byte(n.Kind), byte(n.Encoding))
	b = binary.AppendUvarint(b, uint64(n.Mode&fs.ModePerm))
	b = binary.AppendVarint(b, n.Size)
	b = binary.AppendUvarint(b, n.Version)
	b = binary.AppendUvarint(b, n.Ino)
	b = binary.AppendVarint(b, n.Created)
	b = binary.AppendVarint(b, n.Updated)
	return appendFlagged(b, n, flagsV1)
}

// nodeDecoder reads node records off a byte slice, remembering the first
// error.
type nodeDecoder struct {
	b   []byte
	err error
}

// uvarint reads an unsigned varint, refusing overlong encodings: every
// value has exactly one encoding.
func (d *nodeDecoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 || n != len(binary.AppendUvarint(nil, v)) {
		d.err = ErrBadEncoding
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *nodeDecoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 || n != len(binary.AppendVarint(nil, v)) {
		d.err = ErrBadEncoding
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *nodeDecoder) bytes(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = ErrBadEncoding
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

// flagged reads the flags byte and then the optional fields it names, of
// those the format knows (known), into n; it returns the flags as read, for
// the caller to refuse unknown ones.
func (d *nodeDecoder) flagged(n *Node, known byte) byte {
	b := d.bytes(1)
	if d.err != nil {
		return 0
	}
	flags := b[0]
	if flags&known&flagBlob != 0 {
		copy(n.Blob[:], d.bytes(HashSize))
	}
	if flags&known&flagUpper != 0 {
		n.Upper = d.uvarint()
	}
	if flags&known&flagTarget != 0 {
		n.Target = string(d.bytes(d.uvarint()))
	}
	if flags&known&flagRdev != 0 {
		n.Rdev = d.uvarint()
	}
	if flags&known&flagXattrs != 0 {
		n.Xattrs = decodeXattrs(d)
	}
	return flags
}

// emptyFlagged reports whether a field flags names is empty in n: never so
// in a canonical encoding.
func emptyFlagged(n Node, flags byte) bool {
	return (flags&flagBlob != 0 && n.Blob.IsZero()) || (flags&flagUpper != 0 && n.Upper == 0) ||
		(flags&flagTarget != 0 && n.Target == "") || (flags&flagRdev != 0 && n.Rdev == 0)
}

// DecodeNode decodes one node record (format 2) from the front of b and
// returns the rest of b. It accepts only canonical encodings, as AppendNode
// writes them.
func DecodeNode(b []byte) (name string, n Node, rest []byte, err error) {
	d := &nodeDecoder{b: b}
	name = string(d.bytes(d.uvarint()))
	head := d.bytes(2)
	if d.err == nil {
		n.Kind, n.Encoding = Kind(head[0]), Encoding(head[1])
	}
	mode := d.uvarint()
	if mode > 0o7777 {
		return "", Node{}, nil, fmt.Errorf("%w: mode %#o has more than permission bits", ErrBadEncoding, mode)
	}
	n.Mode = ModeFromUnix(uint32(mode))
	uid, gid, nlink := d.uvarint(), d.uvarint(), d.uvarint()
	if uid > uint64(NoOwner) || gid > uint64(NoOwner) || nlink > uint64(^uint32(0)) {
		return "", Node{}, nil, fmt.Errorf("%w: owner or link count out of range", ErrBadEncoding)
	}
	n.Uid, n.Gid, n.Nlink = uint32(uid), uint32(gid), uint32(nlink)
	n.Size = d.varint()
	n.Version = d.uvarint()
	n.Ino = d.uvarint()
	n.Btime, n.Mtime, n.Ctime, n.Atime = d.varint(), d.varint(), d.varint(), d.varint()
	n.Created, n.Updated = floorDiv(n.Btime, 1e6), floorDiv(n.Mtime, 1e6)
	if err := d.finishV2(&n); err != nil {
		return "", Node{}, nil, err
	}
	return name, n, d.b, nil
}

// finishV2 reads the flags byte and the flagged fields of a node of
// format 2 or 3 into n and checks the node as those formats allow it:
// a known kind, encoding and flags, a link count that fits the kind, no
// flagged field empty.
func (d *nodeDecoder) finishV2(n *Node) error {
	flags := d.flagged(n, flagsV2)
	if d.err != nil {
		return d.err
	}
	if n.Kind < KindFile || n.Kind > maxKind || n.Encoding > EncodingBinary || flags&^flagsV2 != 0 {
		return fmt.Errorf("%w: bad kind, encoding or flags", ErrBadEncoding)
	}
	if (n.IsDir() && n.Nlink != 0) || (!n.IsDir() && n.Nlink == 0) {
		return fmt.Errorf("%w: bad link count", ErrBadEncoding)
	}
	if emptyFlagged(*n, flags) {
		return fmt.Errorf("%w: flagged field is empty", ErrBadEncoding)
	}
	return nil
}

// DecodeNodeV1 decodes one node record in format 1 (stores written before
// owners, links and nanosecond times) from the front of b and returns the
// rest of b. The node's owner is NoOwner, its link count 1 (directories:
// 0, for the tree to compute), its birth time Created and its other times
// Updated. It accepts only canonical format-1 encodings.
func DecodeNodeV1(b []byte) (name string, n Node, rest []byte, err error) {
	d := &nodeDecoder{b: b}
	name = string(d.bytes(d.uvarint()))
	head := d.bytes(2)
	if d.err == nil {
		n.Kind, n.Encoding = Kind(head[0]), Encoding(head[1])
	}
	mode := d.uvarint()
	if mode > uint64(fs.ModePerm) {
		return "", Node{}, nil, fmt.Errorf("%w: mode %#o has more than permission bits", ErrBadEncoding, mode)
	}
	n.Mode = fs.FileMode(mode)
	n.Size = d.varint()
	n.Version = d.uvarint()
	n.Ino = d.uvarint()
	n.Created = d.varint()
	n.Updated = d.varint()
	flags := d.flagged(&n, flagsV1)
	if d.err != nil {
		return "", Node{}, nil, d.err
	}
	if n.Kind < KindFile || n.Kind > KindSymlink || n.Encoding > EncodingBinary || flags&^flagsV1 != 0 {
		return "", Node{}, nil, fmt.Errorf("%w: bad kind, encoding or flags", ErrBadEncoding)
	}
	if emptyFlagged(n, flags) {
		return "", Node{}, nil, fmt.Errorf("%w: flagged field is empty", ErrBadEncoding)
	}
	n = legacyNode(n)
	return name, n, d.b, nil
}

// legacyNode completes a node of format 1: owner not recorded, nanosecond
// times from the millisecond ones.
func legacyNode(n Node) Node {
	n.Uid, n.Gid = NoOwner, NoOwner
	n.Btime = n.Created * 1e6
	n.Mtime = n.Updated * 1e6
	n.Ctime, n.Atime = n.Mtime, n.Mtime
	if !n.IsDir() {
		n.Nlink = 1
	}
	return n
}

// treeFormat heads a tree's canonical encoding.
const treeFormat = "vfsd-tree/2\n"

// Encode returns the canonical encoding of the whole tree: every node in
// path order, and the inode high-water mark. Two trees are the same, byte
// for byte, exactly when their encodings are equal. A lazily loaded tree
// is read whole; a directory whose manifest cannot be read is left out,
// so code that must know uses Expand (or Walk) first and gets the error.
func (t Tree) Encode() []byte {
	b := binary.AppendUvarint([]byte(treeFormat), t.maxIno)
	_ = t.Walk(Root, func(p Path, n Node) error {
		b = AppendNode(b, string(p), n)
		return nil
	})
	return b
}

// Digest returns the hash of the tree's canonical encoding.
func (t Tree) Digest() Hash { return HashOf(t.Encode()) }
