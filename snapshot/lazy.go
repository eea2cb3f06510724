package snapshot

import (
	"context"
	"fmt"
	"sync"

	"github.com/vfsd/vfsd/vfs"
)

// Snapshots are loaded lazily (see vfs.NewLazyTree): Get reads the record
// (of a local record only its head: see headrec.go) and nothing else, and the tree reads a directory's manifest when
// something first looks inside it. Opening a session on a snapshot, or a
// remote fork, then costs the same at any size. Records written before
// they stored their node count, and snapshots with hard links (whose names
// are joined across directories at load), are loaded whole.

// lazyLoadable reports whether a snapshot with record rec can be loaded
// lazily: its record has the totals a lazy tree cannot count, and it has
// no hard links.
func lazyLoadable(rec Record) bool { return rec.Nodes > 0 && !rec.HardLinks }

// snapManifests reads the manifests of one snapshot: from the repository's
// cache and index, then (with a remote) from the snapshot's ancestors'
// records, fetched one at a time as needed, as a whole load does.
type snapManifests struct {
	r *Repo

	mu sync.Mutex
	mr *manifestReader // keeps the records it read: most hold many manifests
}

func newSnapManifests(r *Repo, id vfs.Hash, record []byte, parent string) *snapManifests {
	mr := &manifestReader{r: r, records: make(map[vfs.Hash][]byte), parent: parent}
	if record != nil {
		mr.records[id] = record
	}
	return &snapManifests{r: r, mr: mr}
}

// manifest returns manifest h.
func (s *snapManifests) manifest(ctx context.Context, h vfs.Hash) ([]byte, error) {
	if len(s.mr.heads) > 0 {
		if hr := s.mr.heads[0]; hr.bad.Load() {
			return nil, fmt.Errorf("manifest %s: snapshot record %s: %w", h.Short(), hr.id.Short(), ErrCorruptObject)
		}
	}
	if b, ok := s.r.manifests.get(h); ok {
		return b, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mr.manifest(ctx, h)
}

// LoadDir implements vfs.DirLoader.
func (s *snapManifests) LoadDir(ctx context.Context, h vfs.Hash) ([]vfs.DirEntry, error) {
	b, err := s.manifest(ctx, h)
	if err != nil {
		return nil, err
	}
	var out []vfs.DirEntry
	err = decodeDir(b, func(name string, n vfs.Node) error {
		out = append(out, vfs.DirEntry{Name: name, Node: n})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", h.Short(), err)
	}
	return out, nil
}

// dirIndex answers a snapshot's directory manifest hashes: those computed
// when it was written (set), else, for a directory its tree has not read
// (lazy), the hash it was loaded from. A directory it does not know has
// to be encoded from the tree again; that is always correct.
type dirIndex struct {
	set  dirHashes
	tree vfs.Tree
}

// get returns directory d's manifest hash, if known.
func (x dirIndex) get(d vfs.Path) (vfs.Hash, bool, error) {
	if x.set != nil {
		if h, ok := x.set.Get(d); ok {
			return h, true, nil
		}
	}
	if !x.tree.Valid() {
		return vfs.Hash{}, false, nil
	}
	return x.tree.LazyManifest(d)
}

// known is get, for callers to whom an unknown hash only costs time.
func (x dirIndex) known(d vfs.Path) (vfs.Hash, bool) {
	h, ok, err := x.get(d)
	return h, ok && err == nil
}

// walkManifests calls dir for every directory manifest of the tree whose
// root manifest is root, and file for every non-directory, reading the
// manifests through snap's reader. A manifest seen (and seen, unless nil,
// records them) is not entered again: snapshots share most directories.
func (r *Repo) walkManifests(ctx context.Context, snap *Snapshot, seen map[vfs.Hash]struct{}, dir func(vfs.Hash), file func(vfs.Node)) error {
	if seen == nil {
		seen = make(map[vfs.Hash]struct{})
	}
	var walk func(h vfs.Hash) error
	walk = func(h vfs.Hash) error {
		if _, done := seen[h]; done {
			return nil
		}
		seen[h] = struct{}{}
		if err := ctx.Err(); err != nil {
			return err
		}
		if dir != nil {
			dir(h)
		}
		b, err := snap.reader.manifest(ctx, h)
		if err != nil {
			return fmt.Errorf("snapshot %s: manifest %s: %w", shortID(snap.ID), h.Short(), err)
		}
		return decodeDir(b, func(_ string, n vfs.Node) error {
			if n.IsDir() {
				return walk(n.Blob)
			}
			if file != nil {
				file(n)
			}
			return nil
		})
	}
	return walk(snap.Record.Root)
}

// manifestSet returns every manifest hash of snap's tree.
func (r *Repo) manifestSet(ctx context.Context, snap *Snapshot) (map[vfs.Hash]struct{}, error) {
	out := make(map[vfs.Hash]struct{})
	err := r.walkManifests(ctx, snap, out, nil, nil)
	return out, err
}
