package snapshot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/vfsd/vfsd/vfs"
)

// Blob packs: how a push sends many small blobs in few requests.
//
// A remote answers at its request rate, not its bandwidth, when each small
// file is one object: 50,000 files of 4 KiB are 50,000 PUTs to push and
// 50,000 GETs to read. So a push gathers the small blobs a snapshot needs
// into pack objects of some megabytes (restic, kopia and borg do the same),
// and a reader fetches a window of a pack with one ranged GET.
//
// A pack is, in this order:
//
//	"vfsdpk1\n"                       8 bytes, the format
//	header length                     4 bytes, big-endian
//	header: uvarint count, then count entries of
//	        [32-byte blob hash][uvarint blob length]
//	the blobs' bytes, in the header's order, back to back
//
// Its name is the BLAKE3 hash of everything before the blobs' bytes (the
// magic, the length and the header): the header names every blob by its
// hash, so the name stands for the whole content, and a reader checks the
// header it fetched against the name before it believes any offset in it.
// Each blob read out of a pack is hashed and compared with its name, as any
// object read from the remote is: a pack someone else overwrote in the
// bucket yields no wrong byte, only blobs that fail their check.
//
// A header is checked whole before use: at least one entry, no blob twice,
// no empty blob (the empty blob is never stored), nothing after the last
// entry, no blob over packMaxBlob (a window is read into memory), blobs
// that end exactly where the object does, and bounded
// (maxPackEntries, maxPackHeader), so that a planted header cannot make a
// reader allocate without bound.

// packMagic opens every pack.
const packMagic = "vfsdpk1\n"

// packPrefixLen is the magic and the header length before the header.
const packPrefixLen = len(packMagic) + 4

// Bounds of packs.
const (
	// packTargetBytes is how much blob data a push gathers in one pack.
	packTargetBytes = 16 << 20
	// packMaxBlob is the largest blob a push packs; larger ones go as
	// objects of their own (one request is then small against the bytes).
	packMaxBlob = 1 << 20
	// maxPackEntries bounds a pack's blobs, and so its header.
	maxPackEntries = 1 << 16
	// maxPackHeader bounds the header a reader accepts:
	// maxPackEntries entries of at most 32 + 10 bytes, and the count.
	maxPackHeader = maxPackEntries*(vfs.HashSize+binary.MaxVarintLen64) + binary.MaxVarintLen64
)

// ErrBadPack is matched by the errors of a pack header that is not one
// this daemon wrote or can read.
var ErrBadPack = errors.New("not a valid blob pack")

// packBlob is one blob of a pack: its hash, its length and where its bytes
// start in the pack.
type packBlob struct {
	hash vfs.Hash
	off  int64
	size int64
}

// packHeader is a pack's decoded header.
type packHeader struct {
	name  vfs.Hash
	blobs []packBlob // in pack order
	size  int64      // the whole pack's length
}

// encodePackHeader returns the bytes a pack of blobs (hash and length, in
// order) starts with, and the pack's name. It panics on a list that does
// not make a canonical header: its callers build the list.
func encodePackHeader(blobs []packBlob) ([]byte, vfs.Hash) {
	if len(blobs) == 0 || len(blobs) > maxPackEntries {
		panic(fmt.Sprintf("pack of %d blobs", len(blobs)))
	}
	h := make([]byte, packPrefixLen, packPrefixLen+binary.MaxVarintLen64+len(blobs)*(vfs.HashSize+3))
	copy(h, packMagic)
	h = binary.AppendUvarint(h, uint64(len(blobs)))
	for _, b := range blobs {
		if b.size <= 0 {
			panic("pack of an empty blob")
		}
		h = append(h, b.hash[:]...)
		h = binary.AppendUvarint(h, uint64(b.size))
	}
	binary.BigEndian.PutUint32(h[len(packMagic):], uint32(len(h)-packPrefixLen))
	return h, vfs.HashOf(h)
}

// packHeaderLen returns, from a pack's first packPrefixLen bytes, how long
// its whole head (magic, length and header) is.
func packHeaderLen(prefix []byte) (int, error) {
	if len(prefix) < packPrefixLen || string(prefix[:len(packMagic)]) != packMagic {
		if len(prefix) >= len(packMagic) && bytes.HasPrefix(prefix, []byte("vfsdpk")) {
			return 0, fmt.Errorf("%w: format %q is not one this daemon reads (a newer vfsd wrote it)", ErrBadPack, prefix[:len(packMagic)-1])
		}
		return 0, fmt.Errorf("%w: no pack magic", ErrBadPack)
	}
	n := binary.BigEndian.Uint32(prefix[len(packMagic):])
	if n > maxPackHeader {
		return 0, fmt.Errorf("%w: a header of %d bytes, over %d", ErrBadPack, n, maxPackHeader)
	}
	return packPrefixLen + int(n), nil
}

// decodePackHeader checks head, a pack's bytes up to its blobs, against
// the pack's name and its length in the remote, and returns where each
// blob is.
func decodePackHeader(name vfs.Hash, head []byte, size int64) (*packHeader, error) {
	n, err := packHeaderLen(head)
	if err != nil {
		return nil, err
	}
	if n != len(head) {
		return nil, fmt.Errorf("%w: header is %d bytes, %d given", ErrBadPack, n-packPrefixLen, len(head)-packPrefixLen)
	}
	if vfs.HashOf(head) != name {
		return nil, fmt.Errorf("%w: its header does not hash to its name", ErrBadPack)
	}
	b := head[packPrefixLen:]
	count, k := binary.Uvarint(b)
	if k <= 0 || count == 0 || count > maxPackEntries {
		return nil, fmt.Errorf("%w: bad blob count", ErrBadPack)
	}
	b = b[k:]
	ph := &packHeader{name: name, blobs: make([]packBlob, 0, min(int(count), len(b)/(vfs.HashSize+1)+1))}
	seen := make(map[vfs.Hash]struct{}, cap(ph.blobs))
	off := int64(n)
	for range count {
		if len(b) < vfs.HashSize+1 {
			return nil, fmt.Errorf("%w: header ends inside an entry", ErrBadPack)
		}
		var e packBlob
		copy(e.hash[:], b)
		b = b[vfs.HashSize:]
		l, k := binary.Uvarint(b)
		if k <= 0 || l == 0 || l > packMaxBlob || l > uint64(size) {
			return nil, fmt.Errorf("%w: bad blob length", ErrBadPack)
		}
		b = b[k:]
		if _, dup := seen[e.hash]; dup {
			return nil, fmt.Errorf("%w: blob %s listed twice", ErrBadPack, e.hash.Short())
		}
		seen[e.hash] = struct{}{}
		e.off, e.size = off, int64(l)
		off += e.size
		if off > size {
			return nil, fmt.Errorf("%w: its blobs run past its length (%d bytes)", ErrBadPack, size)
		}
		ph.blobs = append(ph.blobs, e)
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the last entry", ErrBadPack, len(b))
	}
	if off != size {
		return nil, fmt.Errorf("%w: its blobs end at %d, the object at %d", ErrBadPack, off, size)
	}
	ph.size = size
	return ph, nil
}
