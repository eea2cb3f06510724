package vfs

import (
	"encoding/hex"
	"fmt"
	"hash"

	"github.com/zeebo/blake3"
)

// HashSize is the length in bytes of a content hash.
const HashSize = 32

// Hash is a BLAKE3-256 digest naming immutable content in the blob store.
// The zero Hash means "no blob".
type Hash [HashSize]byte

// EmptyHash is the hash of empty content.
var EmptyHash = HashOf(nil)

// HashOf returns the hash of data.
func HashOf(data []byte) Hash {
	return Hash(blake3.Sum256(data))
}

// NewHasher returns a streaming hasher whose Sum matches HashOf; finish it
// with SumHash.
func NewHasher() hash.Hash { return blake3.New() }

// SumHash returns the Hash accumulated by a hasher from NewHasher.
func SumHash(h hash.Hash) Hash {
	var out Hash
	h.Sum(out[:0])
	return out
}

// ParseHash parses the 64-character lowercase hex form of a hash.
func ParseHash(s string) (Hash, error) {
	var h Hash
	if len(s) != 2*HashSize {
		return h, fmt.Errorf("parse hash %q: want %d hex characters", s, 2*HashSize)
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil {
		return h, fmt.Errorf("parse hash %q: %w", s, err)
	}
	return h, nil
}

// IsZero reports whether h is the zero Hash.
func (h Hash) IsZero() bool { return h == Hash{} }

// String returns the lowercase hex form.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// Short returns the first 12 hex characters, for people.
func (h Hash) Short() string { return h.String()[:12] }

// MarshalText implements encoding.TextMarshaler.
func (h Hash) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (h *Hash) UnmarshalText(b []byte) error {
	v, err := ParseHash(string(b))
	if err != nil {
		return err
	}
	*h = v
	return nil
}
