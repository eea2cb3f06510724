// Package coord is the fleet's control plane: who owns a session (an owner
// record with an epoch and a lease, moved by compare-and-swap), named refs
// to snapshots, the daemons of the fleet (membership with a heartbeat) and
// an index of the snapshots they pushed. It needs no service of its own:
// everything is a small object in a Backend, a key-value store with
// compare-and-swap — the snapshots' S3 bucket, through its conditional
// writes (If-None-Match: *, If-Match: ETag; see package s3store), or an
// in-memory one for tests. docs/fleets.md describes the protocol.
//
// The model is SlateDB's: one writer per database, made so by a manifest
// that holds the writer's epoch and is only ever replaced by a conditional
// write on the version read. Here the owner record is the manifest: it
// holds the owner's epoch and the session's head (its latest pushed
// snapshot), and every change to it — a renewal, a head move, a hand-off, a
// takeover — is a write conditional on the version the writer last saw. An
// owner whose write is refused reads the record again and, finding another
// daemon or a higher epoch there, is fenced: it stops writing.
package coord

import (
	"context"
	"errors"
)

// Backend is a key-value store with compare-and-swap: what the fleet's
// records need of a store. Keys are relative slash-separated paths
// (the Fleet validates every part); values are small. Every backend passes
// the conformance suite in coordtest.
//
// A version is an opaque string that changes on every write of a key
// whose value changes (S3: the ETag, an MD5 of the content; etcd: the mod
// revision). The Fleet never writes the same value twice to a key (every
// record carries a sequence number), so a version never comes back.
type Backend interface {
	// Get returns a key's value and version; ErrNotFound when it is
	// absent. A value over MaxValueBytes is not read: Get returns its
	// version (when the backend knows it) with an error matching
	// ErrTooLarge, so that a caller may still replace it conditionally.
	Get(ctx context.Context, key string) (Item, error)
	// Put writes value under key if cond holds, returning the new
	// version; ErrConflict when it does not (S3's 412 Precondition
	// Failed, and 409 ConditionalRequestConflict when another
	// conditional write of the key was in flight).
	Put(ctx context.Context, key string, value []byte, cond Cond) (string, error)
	// Delete removes a key; a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// List calls fn for each key under prefix, in lexical order, until fn
	// returns an error (which List returns).
	List(ctx context.Context, prefix string, fn func(key string) error) error
}

// Cond is the condition of a Put. The zero Cond writes unconditionally.
type Cond struct {
	// Absent: only if the key does not exist (If-None-Match: *).
	Absent bool
	// Match: only if the key's version is this one (If-Match).
	Match string
}

// Item is a key's value and version.
type Item struct {
	Value   []byte
	Version string
}

// MaxValueBytes bounds a value a Backend reads: every object of the fleet
// is far smaller, and a bucket's other tenants may write anything.
const MaxValueBytes = 64 << 10

// Errors of a Backend.
var (
	ErrNotFound = errors.New("no such key")
	ErrConflict = errors.New("the key changed meanwhile (precondition failed)")
	ErrTooLarge = errors.New("value larger than the fleet reads")
)
