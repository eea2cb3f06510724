package coord

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Mem is a Backend in memory, for tests and for a daemon without a remote.
// Inject, when set, is called before every operation with its name ("get",
// "put", "delete", "list") and key; an error it returns is the
// operation's (to test retries).
type Mem struct {
	mu     sync.Mutex
	vals   map[string]Item
	seq    int
	Inject func(op, key string) error
}

// NewMem returns an empty Mem.
func NewMem() *Mem { return &Mem{vals: map[string]Item{}} }

func (m *Mem) inject(op, key string) error {
	if m.Inject != nil {
		return m.Inject(op, key)
	}
	return nil
}

// Get implements Backend.
func (m *Mem) Get(ctx context.Context, key string) (Item, error) {
	if err := m.inject("get", key); err != nil {
		return Item{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	it, ok := m.vals[key]
	if !ok {
		return Item{}, fmt.Errorf("get %s: %w", key, ErrNotFound)
	}
	if len(it.Value) > MaxValueBytes {
		return Item{Version: it.Version}, fmt.Errorf("get %s: %w", key, ErrTooLarge)
	}
	return Item{Value: append([]byte(nil), it.Value...), Version: it.Version}, nil
}

// Put implements Backend.
func (m *Mem) Put(ctx context.Context, key string, value []byte, cond Cond) (string, error) {
	if err := m.inject("put", key); err != nil {
		return "", err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	it, ok := m.vals[key]
	switch {
	case cond.Absent && ok, cond.Match != "" && (!ok || it.Version != cond.Match):
		return "", fmt.Errorf("put %s: %w", key, ErrConflict)
	}
	m.seq++
	v := fmt.Sprintf("v%d", m.seq)
	m.vals[key] = Item{Value: append([]byte(nil), value...), Version: v}
	return v, nil
}

// Delete implements Backend.
func (m *Mem) Delete(ctx context.Context, key string) error {
	if err := m.inject("delete", key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.vals, key)
	return nil
}

// List implements Backend.
func (m *Mem) List(ctx context.Context, prefix string, fn func(string) error) error {
	if err := m.inject("list", prefix); err != nil {
		return err
	}
	m.mu.Lock()
	var keys []string
	for k := range m.vals {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	m.mu.Unlock()
	sort.Strings(keys)
	for _, k := range keys {
		if err := fn(k); err != nil {
			return err
		}
	}
	return nil
}
