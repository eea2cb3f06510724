// Package vfstest provides helpers for testing code built on package vfs:
// an in-memory blob store that tracks pins, and a quick way to start a
// session in a temporary directory.
package vfstest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vfsd/vfsd/vfs"
)

// Blobs is an in-memory vfs.BlobStore that counts pins, so tests can check
// that every Put is eventually unpinned.
type Blobs struct {
	mu    sync.RWMutex
	blobs map[vfs.Hash][]byte
	pins  atomic.Int64
	puts  atomic.Int64
}

// NewBlobs returns an empty store.
func NewBlobs() *Blobs { return &Blobs{blobs: make(map[vfs.Hash][]byte)} }

// Put implements vfs.BlobStore.
func (b *Blobs) Put(ctx context.Context, r io.Reader, _ bool) (vfs.Hash, int64, func(), error) {
	if err := ctx.Err(); err != nil {
		return vfs.Hash{}, 0, nil, err
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return vfs.Hash{}, 0, nil, fmt.Errorf("read content: %w", err)
	}
	h := vfs.HashOf(data)
	b.mu.Lock()
	if _, ok := b.blobs[h]; !ok {
		b.blobs[h] = data
	}
	b.mu.Unlock()
	b.puts.Add(1)
	b.pins.Add(1)
	var once sync.Once
	return h, int64(len(data)), func() { once.Do(func() { b.pins.Add(-1) }) }, nil
}

// Sync implements vfs.BlobStore; memory needs no syncing.
func (b *Blobs) Sync(ctx context.Context) error { return nil }

// Open implements vfs.BlobStore.
func (b *Blobs) Open(ctx context.Context, h vfs.Hash) (vfs.Blob, error) {
	b.mu.RLock()
	data, ok := b.blobs[h]
	b.mu.RUnlock()
	if !ok {
		return nil, &vfs.Error{Op: "open blob", Path: h.String(), Code: vfs.CodeNotFound, Msg: "no such blob"}
	}
	return &memBlob{bytes.NewReader(data)}, nil
}

// Get returns a blob's content.
func (b *Blobs) Get(h vfs.Hash) ([]byte, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	data, ok := b.blobs[h]
	return data, ok
}

// Len returns the number of distinct blobs stored.
func (b *Blobs) Len() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.blobs)
}

// Pins returns how many Puts are not yet unpinned.
func (b *Blobs) Pins() int64 { return b.pins.Load() }

// Puts returns how many Puts were made.
func (b *Blobs) Puts() int64 { return b.puts.Load() }

type memBlob struct{ *bytes.Reader }

func (m *memBlob) Close() error { return nil }

// Clock is a settable clock for deterministic timestamps.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock set to a fixed instant.
func NewClock() *Clock { return &Clock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

// Now returns the clock's time and advances it by one millisecond, so every
// event gets a distinct timestamp.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(time.Millisecond)
	return c.now
}

// Options returns session options for a new session in a fresh temporary
// directory of t, over blobs, with a deterministic clock.
func Options(t testing.TB, blobs vfs.BlobStore) vfs.Options {
	return vfs.Options{
		ID:    "test",
		Dir:   filepath.Join(t.TempDir(), "session"),
		Blobs: blobs,
		Clock: NewClock().Now,
	}
}

// NewSession creates an empty session for a test and closes it at cleanup.
func NewSession(t testing.TB) (*vfs.Session, *Blobs) {
	t.Helper()
	blobs := NewBlobs()
	opts := Options(t, blobs)
	s, err := vfs.Create(context.Background(), opts, vfs.Tree{}, "")
	if err != nil {
		t.Fatalf("create session: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, blobs
}

// HostSymlinks reports why the host cannot make symlinks in a temporary
// directory of t, or "" if it can: Windows creates them only with
// Developer Mode or SeCreateSymbolicLinkPrivilege, and Wine 8's
// CreateSymbolicLink reports success without creating anything. Tests of
// symlinks on the host skip with this reason.
func HostSymlinks(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	link := filepath.Join(dir, "link")
	if err := os.Symlink("target", link); err != nil {
		return fmt.Sprintf("this system cannot create symlinks (%v); on Windows enable Developer Mode", err)
	}
	if got, err := os.Readlink(link); err != nil || got != "target" {
		return fmt.Sprintf("symlinks created here do not read back (readlink: %q, %v); Wine's CreateSymbolicLink does nothing", got, err)
	}
	return ""
}
