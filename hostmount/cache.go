package hostmount

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/vfsd/vfsd/internal/atomicfile"

	"github.com/vfsd/vfsd/vfs"
)

// Cache remembers, for each host file imported, its identity (device,
// inode, size, modification and change time) and the hash of its content.
// An import that finds a file with the same identity reuses the hash
// without opening the file: re-importing an unchanged tree is a stat walk.
// Any write to a file changes its change time, which the file's owner
// cannot set back.
//
// The cache is a map in memory, saved to a file after each import. Entries
// not seen in the last cacheGenerations saves are dropped.
type Cache struct {
	path string

	mu    sync.Mutex
	m     map[cacheKey]cacheVal
	gen   uint32
	dirty bool
}

type cacheKey struct{ dev, ino uint64 }

type cacheVal struct {
	size, mtimeNs, ctime int64
	hash                 vfs.Hash
	enc                  vfs.Encoding
	gen                  uint32 // save generation it was last seen in
}

const (
	cacheFormat      = "vfsd-import-cache/1\n"
	cacheRecord      = 8 + 8 + 8 + 8 + 8 + vfs.HashSize + 1 + 4 + 4 // ..., encoding, generation, CRC
	cacheGenerations = 16
)

var cacheCRC = crc32.MakeTable(crc32.Castagnoli)

// OpenCache loads the cache saved at path; a missing or damaged file gives
// an empty cache (it is only a cache). An empty path keeps it in memory.
func OpenCache(path string) (*Cache, error) {
	c := &Cache{path: path, m: make(map[cacheKey]cacheVal)}
	if path == "" {
		return c, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open import cache: %w", err)
	}
	defer f.Close()
	if err := c.load(bufio.NewReaderSize(f, 1<<16)); err != nil {
		c.m = make(map[cacheKey]cacheVal) // damaged: start afresh
	}
	return c, nil
}

func (c *Cache) load(r io.Reader) error {
	head := make([]byte, len(cacheFormat)+4)
	if _, err := io.ReadFull(r, head); err != nil || string(head[:len(cacheFormat)]) != cacheFormat {
		return errors.New("not an import cache")
	}
	c.gen = binary.LittleEndian.Uint32(head[len(cacheFormat):])
	rec := make([]byte, cacheRecord)
	for {
		_, err := io.ReadFull(r, rec)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		body := rec[:cacheRecord-4]
		if crc32.Checksum(body, cacheCRC) != binary.LittleEndian.Uint32(rec[cacheRecord-4:]) {
			return errors.New("damaged import cache record")
		}
		var k cacheKey
		var v cacheVal
		k.dev = binary.LittleEndian.Uint64(body[0:])
		k.ino = binary.LittleEndian.Uint64(body[8:])
		v.size = int64(binary.LittleEndian.Uint64(body[16:]))
		v.mtimeNs = int64(binary.LittleEndian.Uint64(body[24:]))
		v.ctime = int64(binary.LittleEndian.Uint64(body[32:]))
		copy(v.hash[:], body[40:])
		v.enc = vfs.Encoding(body[40+vfs.HashSize])
		v.gen = binary.LittleEndian.Uint32(body[41+vfs.HashSize:])
		c.m[k] = v
	}
}

// lookup returns the content hash of a file whose identity is id, if the
// cache knows it unchanged.
func (c *Cache) lookup(id fileID) (vfs.Hash, vfs.Encoding, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[cacheKey{id.dev, id.ino}]
	if !ok || v.size != id.size || v.mtimeNs != id.mtimeNs || v.ctime != id.ctime {
		return vfs.Hash{}, 0, false
	}
	if v.gen != c.gen+1 {
		v.gen = c.gen + 1
		c.m[cacheKey{id.dev, id.ino}] = v
		c.dirty = true
	}
	return v.hash, v.enc, true
}

// store records the content hash of the file whose identity is id.
func (c *Cache) store(id fileID, h vfs.Hash, enc vfs.Encoding) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[cacheKey{id.dev, id.ino}] = cacheVal{size: id.size, mtimeNs: id.mtimeNs, ctime: id.ctime, hash: h, enc: enc, gen: c.gen + 1}
	c.dirty = true
}

// Len is the number of files the cache knows.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// Save writes the cache to its file, atomically, dropping entries not seen
// in the last cacheGenerations saves.
func (c *Cache) Save() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.path == "" || !c.dirty {
		return nil
	}
	c.gen++
	for k, v := range c.m {
		if c.gen-v.gen >= cacheGenerations {
			delete(c.m, k)
		}
	}
	if err := os.MkdirAll(filepath.Dir(c.path), 0o700); err != nil {
		return fmt.Errorf("save import cache: %w", err)
	}
	t, err := atomicfile.New(c.path, 0o600, "")
	if err != nil {
		return fmt.Errorf("save import cache: %w", err)
	}
	defer t.Cleanup()
	w := bufio.NewWriterSize(t, 1<<16)
	head := append([]byte(cacheFormat), 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(head[len(cacheFormat):], c.gen)
	w.Write(head)
	rec := make([]byte, cacheRecord)
	for k, v := range c.m {
		binary.LittleEndian.PutUint64(rec[0:], k.dev)
		binary.LittleEndian.PutUint64(rec[8:], k.ino)
		binary.LittleEndian.PutUint64(rec[16:], uint64(v.size))
		binary.LittleEndian.PutUint64(rec[24:], uint64(v.mtimeNs))
		binary.LittleEndian.PutUint64(rec[32:], uint64(v.ctime))
		copy(rec[40:], v.hash[:])
		rec[40+vfs.HashSize] = byte(v.enc)
		binary.LittleEndian.PutUint32(rec[41+vfs.HashSize:], v.gen)
		binary.LittleEndian.PutUint32(rec[cacheRecord-4:], crc32.Checksum(rec[:cacheRecord-4], cacheCRC))
		w.Write(rec)
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("save import cache: %w", err)
	}
	if err := t.CloseAtomicallyReplace(); err != nil {
		return fmt.Errorf("save import cache: %w", err)
	}
	c.dirty = false
	return nil
}
