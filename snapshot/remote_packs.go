package snapshot

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/vfsd/vfsd/vfs"
)

// The remote's packs as this daemon knows them (see blobpack.go): which
// packs the remote lists, what their headers say, and where each packed
// blob is. Pushes, fetches and remote garbage collection share it.
//
// Headers are kept in RemoteOptions.StateDir ("packs/NAME"): a header is
// checked against its pack's name whenever it is read, from there or from
// the remote, so the copy on disk needs no other guard, and a restart
// lists the packs again but reads no header it has.

// remotePack is one pack of the remote: as listed, and its header.
type remotePack struct {
	name  vfs.Hash
	size  int64
	mod   time.Time
	tag   etag
	blobs []packBlob
	// bad is set when a blob read from the pack did not match its hash
	// (someone overwrote the pack): lookups prefer any other copy, and
	// pushes do not rely on the pack. Guarded by packIndex.mu.
	bad bool
}

// packLoc is where a packed blob is: its pack and its entry there.
type packLoc struct {
	pack *remotePack
	i    int
}

func (l packLoc) blob() packBlob { return l.pack.blobs[l.i] }

// packIndex is the remote's packs.
type packIndex struct {
	listMu sync.Mutex // one listing at a time

	mu       sync.Mutex
	packs    map[vfs.Hash]*remotePack // by name, those whose headers read right
	locs     map[vfs.Hash]packLoc     // by blob hash, in the newest good pack holding it
	foreign  map[vfs.Hash]ObjectInfo  // listed packs whose header is not one this daemon reads, as listed
	listedAt time.Time                // when the last listing started; zero before the first
}

func newPackIndex() *packIndex {
	return &packIndex{packs: map[vfs.Hash]*remotePack{}, locs: map[vfs.Hash]packLoc{}, foreign: map[vfs.Hash]ObjectInfo{}}
}

// packStore returns the remote as a PackStore, if it keeps packs.
func (l *remoteLink) packStore() (PackStore, bool) {
	ps, ok := l.store.(PackStore)
	return ps, ok
}

// locate returns where blob h is packed, if a pack the remote listed at
// the last listing (or this daemon stored since) holds it.
func (l *remoteLink) locate(h vfs.Hash) (packLoc, bool) {
	x := l.packs
	x.mu.Lock()
	defer x.mu.Unlock()
	loc, ok := x.locs[h]
	return loc, ok
}

// listedSince reports whether a listing of the packs started after t.
func (l *remoteLink) listedSince(t time.Time) bool {
	x := l.packs
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.listedAt.After(t)
}

// neverListedPacks reports whether this daemon has not listed the
// remote's packs yet (and the remote keeps packs).
func (l *remoteLink) neverListedPacks() bool {
	if _, ok := l.packStore(); !ok {
		return false
	}
	x := l.packs
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.listedAt.IsZero()
}

// headerDir keeps the headers read; "" without a StateDir.
func (l *remoteLink) headerDir() string {
	if l.opts.StateDir == "" {
		return ""
	}
	return filepath.Join(l.opts.StateDir, "packs")
}

// refreshPacks lists the remote's packs and reads the headers of those it
// does not know yet (from StateDir, else from the remote, Parallel at a
// time). Packs no longer listed are forgotten. A listing that started
// after since makes this one unnecessary: it returns at once.
func (l *remoteLink) refreshPacks(ctx context.Context, since time.Time) error {
	ps, ok := l.packStore()
	if !ok {
		return nil
	}
	x := l.packs
	x.listMu.Lock()
	defer x.listMu.Unlock()
	if !since.IsZero() && l.listedSince(since) {
		return nil
	}
	start := time.Now()
	var listed []ObjectInfo
	if err := ps.ListPacks(ctx, func(o ObjectInfo) error {
		listed = append(listed, o)
		return nil
	}); err != nil {
		return fmt.Errorf("list the packs of %v: %w", l.store, err)
	}
	x.mu.Lock()
	var toRead []ObjectInfo
	for _, o := range listed {
		if p, ok := x.packs[o.Hash]; ok && p.size == o.Size {
			continue
		}
		if f, ok := x.foreign[o.Hash]; ok && f.Size == o.Size && f.ETag == o.ETag {
			continue
		}
		toRead = append(toRead, o)
	}
	x.mu.Unlock()
	read, foreign, err := l.readHeaders(ctx, ps, toRead)
	if err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	old, oldForeign := x.packs, x.foreign
	x.packs = make(map[vfs.Hash]*remotePack, len(listed))
	x.foreign = make(map[vfs.Hash]ObjectInfo)
	for _, o := range listed {
		switch p := read[o.Hash]; {
		case p != nil:
			x.packs[o.Hash] = p
		case foreign[o.Hash]:
			x.foreign[o.Hash] = o
		default:
			if p := old[o.Hash]; p != nil && p.size == o.Size {
				p.mod, p.tag = o.Modified, etagOf(o.ETag)
				x.packs[o.Hash] = p
			} else if f, ok := oldForeign[o.Hash]; ok && f.Size == o.Size && f.ETag == o.ETag {
				x.foreign[o.Hash] = o
			}
			// Otherwise deleted since the listing.
		}
	}
	// Stored by this daemon after the listing began: keep.
	for name, p := range old {
		if _, ok := x.packs[name]; !ok && p.mod.After(start) {
			x.packs[name] = p
		}
	}
	x.locs = make(map[vfs.Hash]packLoc, len(x.locs))
	for _, p := range x.packs {
		x.indexLocked(p)
	}
	x.listedAt = start
	return nil
}

// indexLocked points the lookups of p's blobs at p where p is a better
// copy than the one known: not bad, and newer. x.mu is held.
func (x *packIndex) indexLocked(p *remotePack) {
	for i, b := range p.blobs {
		cur, ok := x.locs[b.hash]
		if !ok || cur.pack.bad && !p.bad || !p.bad && p.mod.After(cur.pack.mod) {
			x.locs[b.hash] = packLoc{p, i}
		}
	}
}

// addPack records a pack this daemon has just stored.
func (l *remoteLink) addPack(p *remotePack, head []byte) {
	x := l.packs
	x.mu.Lock()
	x.packs[p.name] = p
	x.indexLocked(p)
	x.mu.Unlock()
	l.saveHeader(p.name, head)
}

// dropPack forgets a pack (deleted, or gone from the remote).
func (l *remoteLink) dropPack(name vfs.Hash) {
	x := l.packs
	x.mu.Lock()
	defer x.mu.Unlock()
	p := x.packs[name]
	if p == nil {
		return
	}
	delete(x.packs, name)
	for _, b := range p.blobs {
		if cur, ok := x.locs[b.hash]; ok && cur.pack == p {
			delete(x.locs, b.hash)
		}
	}
	// Another pack may hold what p held (a repack, by this daemon or
	// another): a read that finds no pack lists them again.
	if d := l.headerDir(); d != "" {
		_ = os.Remove(filepath.Join(d, name.String()))
	}
}

// markBad records that pack p holds a wrong blob: lookups go to any
// other pack holding the same blobs.
func (l *remoteLink) markBad(p *remotePack) {
	x := l.packs
	x.mu.Lock()
	defer x.mu.Unlock()
	if p.bad {
		return
	}
	p.bad = true
	for _, q := range x.packs {
		if q != p && !q.bad {
			x.indexLocked(q)
		}
	}
	l.log.Warn("remote: a pack holds a blob that does not match its hash (someone overwrote it in the bucket); its blobs are read from other copies, and a push of a snapshot needing them packs them again",
		"pack", p.name.String())
}

// packHeadProbe is how much of a pack a first read of its header asks
// for: the whole header of a pack of some 7,000 blobs (a full pack of
// 2 KiB files), so that one request reads most headers.
const packHeadProbe = 256 << 10

// readHeaders reads the headers of packs, Parallel at a time: from
// StateDir when kept there, else from the remote (and kept). A pack whose
// header is not one this daemon reads is returned in foreign.
func (l *remoteLink) readHeaders(ctx context.Context, ps PackStore, packs []ObjectInfo) (map[vfs.Hash]*remotePack, map[vfs.Hash]bool, error) {
	read := make(map[vfs.Hash]*remotePack, len(packs))
	foreign := map[vfs.Hash]bool{}
	if len(packs) == 0 {
		return read, foreign, nil
	}
	var mu sync.Mutex
	var first error
	work := make(chan ObjectInfo)
	var wg sync.WaitGroup
	for range min(l.opts.Parallel, len(packs)) {
		wg.Go(func() {
			for o := range work {
				p, err := l.readHeader(ctx, ps, o)
				mu.Lock()
				switch {
				case err == nil:
					read[o.Hash] = p
				case errors.Is(err, ErrBadPack):
					foreign[o.Hash] = true
					l.log.Warn("remote: an object under the packs' prefix is no pack this daemon reads; not used", "pack", o.Hash.String(), "why", err)
				case errors.Is(err, vfs.ErrNotFound):
					// Deleted since the listing (a garbage collection).
				case first == nil:
					first = err
				}
				mu.Unlock()
			}
		})
	}
	for _, o := range packs {
		select {
		case work <- o:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return read, foreign, first
}

// readHeader reads and checks one pack's header.
func (l *remoteLink) readHeader(ctx context.Context, ps PackStore, o ObjectInfo) (*remotePack, error) {
	p := &remotePack{name: o.Hash, size: o.Size, mod: o.Modified, tag: etagOf(o.ETag)}
	if d := l.headerDir(); d != "" {
		if head, err := os.ReadFile(filepath.Join(d, o.Hash.String())); err == nil {
			if ph, err := decodePackHeader(o.Hash, head, o.Size); err == nil {
				p.blobs = ph.blobs
				return p, nil
			}
		}
	}
	if o.Size < int64(packPrefixLen) {
		return nil, fmt.Errorf("%w: %d bytes", ErrBadPack, o.Size)
	}
	head, _, err := ps.ReadPack(ctx, o.Hash, 0, min(o.Size, packHeadProbe))
	if err != nil {
		return nil, fmt.Errorf("read the header of pack %s: %w", o.Hash.Short(), err)
	}
	n, err := packHeaderLen(head)
	if err != nil {
		return nil, err
	}
	if int64(n) > o.Size {
		return nil, fmt.Errorf("%w: a header longer than the pack", ErrBadPack)
	}
	if n > len(head) {
		rest, _, err := ps.ReadPack(ctx, o.Hash, int64(len(head)), int64(n-len(head)))
		if err != nil {
			return nil, fmt.Errorf("read the header of pack %s: %w", o.Hash.Short(), err)
		}
		head = append(head, rest...)
	}
	head = head[:n]
	ph, err := decodePackHeader(o.Hash, head, o.Size)
	if err != nil {
		return nil, err
	}
	p.blobs = ph.blobs
	l.saveHeader(o.Hash, head)
	return p, nil
}

// saveHeader keeps a checked header in StateDir; failing that, it is read
// from the remote again after a restart. It is not synced: a header lost
// or torn by a crash does not match its name when read, and is read from
// the remote again.
func (l *remoteLink) saveHeader(name vfs.Hash, head []byte) {
	d := l.headerDir()
	if d == "" {
		return
	}
	if err := os.MkdirAll(d, 0o700); err != nil {
		return
	}
	f, err := os.CreateTemp(d, ".header-*")
	if err != nil {
		return
	}
	_, err = f.Write(head)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(d, name.String()))
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
}
