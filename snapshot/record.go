package snapshot

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/vfsd/vfsd/vfs"
)

// A snapshot is stored as one object in the Records namespace:
//
//	"vfsd-snapshot/1\n"
//	the Record as one line of JSON, then "\n"
//	a pack of the directory manifests first written by this snapshot, each
//	as [32-byte hash][uvarint length][manifest]
//
// Its ID is the hash of the whole object. Manifests it shares with earlier
// snapshots live in their records; a repository indexes every record's pack
// to find them. One object per snapshot keeps a snapshot to a single file
// creation, however many directories changed.
const recordFormat = "vfsd-snapshot/1"

// packEntry is one manifest in a record's pack.
type packEntry struct {
	hash vfs.Hash
	data []byte
}

// manifestLoc says where a manifest is: in which record, at which offset.
type manifestLoc struct {
	record vfs.Hash
	off    int
	n      int
}

// encodeRecord builds a record object.
func encodeRecord(rec Record, pack []packEntry) ([]byte, error) {
	rec.PackIndex = appendPackIndex(nil, pack)
	js, err := json.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("encode snapshot record: %w", err)
	}
	size := len(recordFormat) + len(js) + 2
	for _, e := range pack {
		size += vfs.HashSize + binary.MaxVarintLen64 + len(e.data)
	}
	b := make([]byte, 0, size)
	b = append(b, recordFormat+"\n"...)
	b = append(b, js...)
	b = append(b, '\n')
	for _, e := range pack {
		b = append(b, e.hash[:]...)
		b = binary.AppendUvarint(b, uint64(len(e.data)))
		b = append(b, e.data...)
	}
	return b, nil
}

var errNotRecord = errors.New("not a " + recordFormat + " record")

// packFormat heads a manifest pack: an object in the Records namespace that
// is not a snapshot but holds manifests that snapshots still need after the
// record that first stored them was deleted (see DeleteSnapshots):
//
//	"vfsd-pack/1\n"
//	[32-byte hash][uvarint length][manifest], repeated
//
// Packs are listed with the records but are never snapshots; garbage
// collection drops a pack once no snapshot needs its manifests.
const packFormat = "vfsd-pack/1"

// isPack reports whether a Records object is a manifest pack.
func isPack(b []byte) bool { return bytes.HasPrefix(b, []byte(packFormat+"\n")) }

// encodePack builds a manifest pack.
func encodePack(pack []packEntry) []byte {
	b := []byte(packFormat + "\n")
	for _, e := range pack {
		b = append(b, e.hash[:]...)
		b = binary.AppendUvarint(b, uint64(len(e.data)))
		b = append(b, e.data...)
	}
	return b
}

// decodePackEntries calls fn for each manifest of the pack that starts at
// off in b.
func decodePackEntries(b []byte, off int, fn func(h vfs.Hash, off, n int)) error {
	for off < len(b) {
		if len(b)-off < vfs.HashSize {
			return fmt.Errorf("%w: truncated pack", errNotRecord)
		}
		var h vfs.Hash
		copy(h[:], b[off:])
		off += vfs.HashSize
		n, k := binary.Uvarint(b[off:])
		if k <= 0 || n > uint64(len(b)-off-k) {
			return fmt.Errorf("%w: bad pack entry", errNotRecord)
		}
		off += k
		if fn != nil {
			fn(h, off, int(n))
		}
		off += int(n)
	}
	return nil
}

// decodeRecord parses a record object, calling fn for each manifest in its
// pack with its offset in b.
func decodeRecord(b []byte, fn func(h vfs.Hash, off, n int)) (Record, error) {
	var rec Record
	if !bytes.HasPrefix(b, []byte(recordFormat+"\n")) {
		return rec, errNotRecord
	}
	rest := b[len(recordFormat)+1:]
	nl := bytes.IndexByte(rest, '\n')
	if nl < 0 {
		return rec, errNotRecord
	}
	if err := json.Unmarshal(rest[:nl], &rec); err != nil || rec.Format != recordFormat {
		return rec, errNotRecord
	}
	rec.PackIndex = nil // the whole pack is decoded below
	off := len(recordFormat) + 1 + nl + 1
	return rec, decodePackEntries(b, off, fn)
}

// indexRecord adds a record's manifests to the repository's index and
// returns the record and how many manifests it holds.
func (r *Repo) indexRecord(id vfs.Hash, b []byte) (Record, int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	count := 0
	add := func(h vfs.Hash, off, n int) {
		count++
		if _, ok := r.index[h]; !ok {
			r.index[h] = manifestLoc{record: id, off: off, n: n}
		}
	}
	if isPack(b) {
		err := decodePackEntries(b, len(packFormat)+1, add)
		if err == nil {
			r.indexed[id] = true
			r.packs[id] = true
			err = errIsPack
		}
		return Record{}, count, err
	}
	rec, err := decodeRecord(b, add)
	if err == nil {
		r.indexed[id] = true
	}
	return rec, count, err
}

// errIsPack is indexRecord's answer for a manifest pack: indexed, but not
// a snapshot.
var errIsPack = errors.New("a manifest pack, not a snapshot")

// unindexLocked forgets record id and every index entry that points into
// it. r.mu is held.
func (r *Repo) unindexLocked(id vfs.Hash) {
	for h, loc := range r.index {
		if loc.record == id {
			delete(r.index, h)
		}
	}
	delete(r.indexed, id)
	delete(r.packs, id)
	delete(r.snaps, id.String())
	delete(r.heads, id)
}

// hasManifest reports whether a manifest is stored in some indexed record.
func (r *Repo) hasManifest(h vfs.Hash) bool {
	_, ok := r.indexLoc(h)
	return ok
}

// indexAll indexes every record not indexed yet.
func (r *Repo) indexAll(ctx context.Context) error {
	var todo []vfs.Hash
	if err := r.store.List(ctx, Records, func(h vfs.Hash, _ int64) error {
		r.mu.Lock()
		done := r.indexed[h]
		r.mu.Unlock()
		if !done {
			todo = append(todo, h)
		}
		return nil
	}); err != nil {
		return err
	}
	for _, h := range todo {
		b, err := r.readObject(ctx, Records, h)
		if err != nil {
			return err
		}
		if _, _, err := r.indexRecord(h, b); err != nil && !errors.Is(err, errIsPack) {
			return fmt.Errorf("record %s: %w", h.Short(), err)
		}
	}
	return nil
}

// indexRemote fetches and indexes every record of the remote not indexed
// yet: the last resort for a manifest no ancestor holds.
func (r *Repo) indexRemote(ctx context.Context) error {
	var todo []vfs.Hash
	if err := r.remote.store.List(ctx, Records, func(h vfs.Hash, _ int64) error {
		r.mu.Lock()
		done := r.indexed[h]
		r.mu.Unlock()
		if !done {
			todo = append(todo, h)
		}
		return nil
	}); err != nil {
		return r.remote.errRemote(Records, vfs.Hash{}, err)
	}
	for _, h := range todo {
		b, err := r.readObject(ctx, Records, h)
		if err != nil {
			return err
		}
		if _, _, err := r.indexRecord(h, b); err != nil && !errors.Is(err, errIsPack) {
			return fmt.Errorf("record %s: %w", h.Short(), err)
		}
	}
	return nil
}

// manifestReader reads manifests for one tree load, keeping each record it
// reads from.
type manifestReader struct {
	r       *Repo
	records map[vfs.Hash][]byte
	scanned bool
	// heads are the records of the snapshot and of the ancestors read so
	// far that were opened by their head (headrec.go), nearest first:
	// their packs are scanned for a manifest before the next ancestor is
	// read.
	heads []*headRecord
	// byHead opens ancestors by their head when they are local (the
	// lazy open-and-read path; loads, GC and pushes read records whole).
	byHead bool
	// parent is the next ancestor record to index when a manifest is
	// missing; "" when there is none left.
	parent string
}

// useRecord indexes ancestor record ph, read whole into b, and moves on
// to its parent.
func (m *manifestReader) useRecord(ph vfs.Hash, b []byte) error {
	rec, _, err := m.r.indexRecord(ph, b)
	if err != nil && !errors.Is(err, errIsPack) {
		return fmt.Errorf("record %s: %w", ph.Short(), err)
	}
	m.records[ph] = b
	m.parent = rec.Parent
	return nil
}

// indexLoc returns where the index says manifest h is, if it knows.
func (r *Repo) indexLoc(h vfs.Hash) (manifestLoc, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	loc, ok := r.index[h]
	return loc, ok
}

// scanHead looks for manifest h in head-opened record hr.
func (m *manifestReader) scanHead(ctx context.Context, hr *headRecord, h vfs.Hash) (manifestLoc, bool, error) {
	found, err := m.r.scanTo(ctx, hr, h)
	if err != nil {
		return manifestLoc{}, false, fmt.Errorf("manifest %s: %w", h.Short(), err)
	}
	if !found {
		return manifestLoc{}, false, nil
	}
	loc, ok := m.r.indexLoc(h)
	return loc, ok, nil
}

func (m *manifestReader) manifest(ctx context.Context, h vfs.Hash) ([]byte, error) {
	var err error
	loc, ok := m.r.indexLoc(h)
	for i := 0; !ok && i < len(m.heads); i++ {
		if loc, ok, err = m.scanHead(ctx, m.heads[i], h); err != nil {
			return nil, err
		}
	}
	// The manifest is most likely in an ancestor's record (a snapshot
	// writes only the manifests that changed): index those, nearest
	// first, before resorting to every record — so that loading a
	// snapshot reads its ancestry, not the whole store, however many
	// snapshots it holds. With a remote, an ancestor not fetched yet is.
	for !ok && m.parent != "" {
		ph, err := vfs.ParseHash(m.parent)
		if err != nil {
			break
		}
		if m.byHead {
			// Opened by its head too, if local and large.
			rec, hr, local, whole, err := m.r.openHead(ctx, ph)
			if err != nil {
				return nil, fmt.Errorf("manifest %s: ancestor %s: %w", h.Short(), ph.Short(), err)
			}
			if local {
				hr = m.r.keepHead(hr)
				m.heads = append(m.heads, hr)
				m.parent = rec.Parent
				if loc, ok, err = m.scanHead(ctx, hr, h); err != nil {
					return nil, err
				}
				continue
			}
			if whole != nil {
				if err := m.useRecord(ph, whole); err != nil {
					return nil, err
				}
				loc, ok = m.r.indexLoc(h)
				continue
			}
		}
		b, err := m.r.readObject(ctx, Records, ph)
		if errors.Is(err, vfs.ErrNotFound) {
			// The ancestor was deleted (its manifests moved to a pack):
			// the remote's records are searched below.
			m.parent = ""
			break
		}
		if err != nil {
			return nil, fmt.Errorf("manifest %s: ancestor %s: %w", h.Short(), ph.Short(), err)
		}
		if err := m.useRecord(ph, b); err != nil {
			return nil, err
		}
		loc, ok = m.r.indexLoc(h)
	}
	if !ok && !m.scanned {
		m.scanned = true
		if err := m.r.indexAll(ctx); err != nil {
			return nil, err
		}
		loc, ok = m.r.indexLoc(h)
	}
	if !ok && m.r.remote != nil {
		if err := m.r.indexRemote(ctx); err != nil {
			return nil, err
		}
		loc, ok = m.r.indexLoc(h)
	}
	if !ok {
		return nil, &vfs.Error{Op: "manifest", Path: h.String(), Code: vfs.CodeNotFound, Msg: "no record holds this manifest"}
	}
	m.r.mu.Lock()
	bad, hr := m.r.corrupt[loc.record], m.r.heads[loc.record]
	m.r.mu.Unlock()
	if bad {
		return nil, fmt.Errorf("manifest %s: record %s: %w", h.Short(), loc.record.Short(), ErrCorruptObject)
	}
	b, ok := m.records[loc.record]
	if !ok && hr != nil {
		// A record opened by its head: read this manifest alone.
		data, err := m.r.readManifestAt(ctx, loc, h)
		if errors.Is(err, ErrCorruptObject) {
			m.r.markCorrupt(loc.record, "manifest "+h.Short()+" does not match its hash")
		}
		if err != nil {
			return nil, err
		}
		m.r.manifests.add(h, data)
		return data, nil
	}
	if !ok {
		var err error
		if b, err = m.r.readObject(ctx, Records, loc.record); err != nil {
			return nil, err
		}
		m.records[loc.record] = b
	}
	data := b[loc.off : loc.off+loc.n]
	if vfs.HashOf(data) != h {
		return nil, fmt.Errorf("manifest %s: %w", h.Short(), ErrCorruptObject)
	}
	m.r.manifests.add(h, data)
	return data, nil
}

// manifestCacheBytes bounds the manifests a repository keeps in memory.
const manifestCacheBytes = 64 << 20

// manifestCache keeps the manifests a repository wrote or read most
// recently, so that the next snapshot of a session patches its directories
// without reading them back from the store. Oldest entries go first.
type manifestCache struct {
	mu    sync.Mutex
	m     map[vfs.Hash][]byte
	order []vfs.Hash
	bytes int
}

func (c *manifestCache) get(h vfs.Hash) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.m[h]
	return b, ok
}

func (c *manifestCache) add(h vfs.Hash, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[vfs.Hash][]byte)
	}
	if _, ok := c.m[h]; ok || len(b) > manifestCacheBytes/4 {
		return
	}
	c.m[h] = b
	c.order = append(c.order, h)
	c.bytes += len(b)
	for c.bytes > manifestCacheBytes && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		c.bytes -= len(c.m[old])
		delete(c.m, old)
	}
}

// cachedManifest returns a manifest from the cache, or from the store
// through the index (and caches it).
func (r *Repo) cachedManifest(ctx context.Context, h vfs.Hash) ([]byte, error) {
	if b, ok := r.manifests.get(h); ok {
		return b, nil
	}
	mr := &manifestReader{r: r, records: make(map[vfs.Hash][]byte)}
	return mr.manifest(ctx, h)
}

// isPack reports whether Records object h is known to be a manifest pack.
func (r *Repo) isPack(h vfs.Hash) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.packs[h]
}
