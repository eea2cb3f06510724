package vfs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
)

// Node records are encoded compactly and canonically — the same node always
// encodes to the same bytes — for snapshot manifests and tree digests:
//
//	name     uvarint length, bytes
//	kind     byte
//	encoding byte
//	mode     uvarint
//	size     varint
//	version  uvarint
//	ino      uvarint
//	created  varint (Unix ms)
//	updated  varint (Unix ms)
//	flags    byte: 1 blob, 2 upper, 4 target
//	blob     32 bytes, if flagged
//	upper    uvarint, if flagged
//	target   uvarint length, bytes, if flagged
const (
	flagBlob   = 1 << 0
	flagUpper  = 1 << 1
	flagTarget = 1 << 2
)

// ErrBadEncoding is returned when decoding bytes that are not a node record.
var ErrBadEncoding = errors.New("malformed node record")

// AppendNode appends the canonical encoding of a node named name to b.
func AppendNode(b []byte, name string, n Node) []byte {
	b = binary.AppendUvarint(b, uint64(len(name)))
	b = append(b, name...)
	b = append(b, byte(n.Kind), byte(n.Encoding))
	b = binary.AppendUvarint(b, uint64(n.Mode))
	b = binary.AppendVarint(b, n.Size)
	b = binary.AppendUvarint(b, n.Version)
	b = binary.AppendUvarint(b, n.Ino)
	b = binary.AppendVarint(b, n.Created)
	b = binary.AppendVarint(b, n.Updated)
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
	return b
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

// DecodeNode decodes one node record from the front of b and returns the
// rest of b. It accepts only canonical encodings, as AppendNode writes them.
func DecodeNode(b []byte) (name string, n Node, rest []byte, err error) {
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
	flags := d.bytes(1)
	if d.err != nil {
		return "", Node{}, nil, d.err
	}
	if flags[0]&flagBlob != 0 {
		copy(n.Blob[:], d.bytes(HashSize))
	}
	if flags[0]&flagUpper != 0 {
		n.Upper = d.uvarint()
	}
	if flags[0]&flagTarget != 0 {
		n.Target = string(d.bytes(d.uvarint()))
	}
	if d.err != nil {
		return "", Node{}, nil, d.err
	}
	if n.Kind < KindFile || n.Kind > KindSymlink || n.Encoding > EncodingBinary || flags[0]&^(flagBlob|flagUpper|flagTarget) != 0 {
		return "", Node{}, nil, fmt.Errorf("%w: bad kind, encoding or flags", ErrBadEncoding)
	}
	// A flagged field is never empty: the encoding is canonical.
	if (flags[0]&flagBlob != 0 && n.Blob.IsZero()) || (flags[0]&flagUpper != 0 && n.Upper == 0) || (flags[0]&flagTarget != 0 && n.Target == "") {
		return "", Node{}, nil, fmt.Errorf("%w: flagged field is empty", ErrBadEncoding)
	}
	return name, n, d.b, nil
}

// treeFormat heads a tree's canonical encoding.
const treeFormat = "vfsd-tree/1\n"

// Encode returns the canonical encoding of the whole tree: every node in
// path order, and the inode high-water mark. Two trees are the same, byte
// for byte, exactly when their encodings are equal.
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
