package snapshot

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/vfsd/vfsd/vfs"
)

// MemoryStore is a Store that keeps objects in memory, for tests and
// ephemeral sessions. Nothing is durable; Sync does nothing. It is safe for
// concurrent use.
type MemoryStore struct {
	mu      sync.RWMutex
	objects map[Namespace]map[vfs.Hash][]byte
	closed  bool
}

var _ Store = (*MemoryStore)(nil)

// NewMemory returns an empty MemoryStore.
func NewMemory() *MemoryStore {
	m := &MemoryStore{objects: make(map[Namespace]map[vfs.Hash][]byte, len(Namespaces))}
	for _, ns := range Namespaces {
		m.objects[ns] = make(map[vfs.Hash][]byte)
	}
	return m
}

// check fails for a closed store, a done context and an unknown namespace;
// the caller holds m.mu.
func (m *MemoryStore) check(ctx context.Context, op string, ns Namespace) error {
	if m.closed {
		return storeClosedErr(op)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s %s: %w", op, ns, err)
	}
	return checkStoreNamespace(op, ns)
}

// Put stores a copy of r's content in ns and returns its hash and size; see
// Store. A Put whose context ends while reading fails and stores nothing.
func (m *MemoryStore) Put(ctx context.Context, ns Namespace, r io.Reader, _ PutOptions) (vfs.Hash, int64, error) {
	const op = "put"
	m.mu.RLock()
	err := m.check(ctx, op, ns)
	m.mu.RUnlock()
	if err != nil {
		return vfs.Hash{}, 0, err
	}
	data, err := io.ReadAll(&cancelReader{ctx: ctx, r: r}) // a fresh slice: the copy
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			err = cerr
		}
		return vfs.Hash{}, 0, fmt.Errorf("put %s: read content: %w", ns, err)
	}
	h := vfs.HashOf(data)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx, op, ns); err != nil {
		return vfs.Hash{}, 0, err
	}
	if _, ok := m.objects[ns][h]; !ok {
		m.objects[ns][h] = data
	}
	return h, int64(len(data)), nil
}

// Open returns a reader for an object, or an error matching vfs.ErrNotFound.
func (m *MemoryStore) Open(ctx context.Context, ns Namespace, h vfs.Hash) (vfs.Blob, error) {
	const op = "open"
	data, err := m.get(ctx, op, ns, h)
	if err != nil {
		return nil, err
	}
	return memBlob{bytes.NewReader(data)}, nil
}

// Stat returns an object's size, or an error matching vfs.ErrNotFound.
func (m *MemoryStore) Stat(ctx context.Context, ns Namespace, h vfs.Hash) (int64, error) {
	data, err := m.get(ctx, "stat", ns, h)
	if err != nil {
		return 0, err
	}
	return int64(len(data)), nil
}

func (m *MemoryStore) get(ctx context.Context, op string, ns Namespace, h vfs.Hash) ([]byte, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx, op, ns); err != nil {
		return nil, err
	}
	data, ok := m.objects[ns][h]
	if !ok {
		return nil, objectNotFound(op, ns, h)
	}
	return data, nil
}

// Delete removes an object; a missing object is not an error.
func (m *MemoryStore) Delete(ctx context.Context, ns Namespace, h vfs.Hash) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx, "delete", ns); err != nil {
		return err
	}
	delete(m.objects[ns], h)
	return nil
}

// List calls fn for every object in ns until fn returns an error, which
// List returns. It works on a copy of the index taken when it starts, so fn
// may use the store.
func (m *MemoryStore) List(ctx context.Context, ns Namespace, fn func(h vfs.Hash, size int64) error) error {
	type entry struct {
		h    vfs.Hash
		size int64
	}
	m.mu.RLock()
	if err := m.check(ctx, "list", ns); err != nil {
		m.mu.RUnlock()
		return err
	}
	entries := make([]entry, 0, len(m.objects[ns]))
	for h, data := range m.objects[ns] {
		entries = append(entries, entry{h, int64(len(data))})
	}
	m.mu.RUnlock()
	for i, e := range entries {
		if i%1024 == 1023 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("list %s: %w", ns, err)
			}
		}
		if err := fn(e.h, e.size); err != nil {
			return err
		}
	}
	return nil
}

// Verify checks that an object's content hashes to its name; see
// LocalStore.Verify. In memory that can only fail for a missing object.
func (m *MemoryStore) Verify(ctx context.Context, ns Namespace, h vfs.Hash) error {
	data, err := m.get(ctx, "verify", ns, h)
	if err != nil {
		return err
	}
	if got := vfs.HashOf(data); got != h {
		return fmt.Errorf("verify %s object %s: %w (content hashes to %s)", ns, h, ErrCorruptObject, got)
	}
	return nil
}

// Sync does nothing: a MemoryStore is never durable.
func (m *MemoryStore) Sync(ctx context.Context) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return storeClosedErr("sync")
	}
	return nil
}

// Bytes returns the total size of the objects in every namespace.
func (m *MemoryStore) Bytes(ctx context.Context) (int64, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return 0, storeClosedErr("store size")
	}
	var total int64
	for _, objs := range m.objects {
		for _, data := range objs {
			total += int64(len(data))
		}
	}
	return total, nil
}

// Close drops every object. Later calls fail with an error matching
// vfs.ErrClosed, except Close, which returns nil; readers already open stay
// usable.
func (m *MemoryStore) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.objects = nil
	return nil
}

// memBlob reads an object held in memory.
type memBlob struct{ r *bytes.Reader }

func (b memBlob) ReadAt(p []byte, off int64) (int, error) { return b.r.ReadAt(p, off) }
func (b memBlob) Size() int64                             { return b.r.Size() }
func (b memBlob) Close() error                            { return nil }
