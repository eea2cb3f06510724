package snapshot

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/benbjohnson/immutable"

	"github.com/vfsd/vfsd/vfs"
)

// A snapshot's tree is stored as a Merkle tree of directory manifests, as
// git stores trees: each directory is one blob listing its children (name
// and node, in name order, encoded with vfs.AppendNode), where a child
// directory's node carries the hash of that directory's manifest in its Blob
// field. Unchanged directories keep their hash, so a snapshot re-writes only
// the directories on the paths to what changed, and a diff skips every
// subtree whose hashes match.
//
// Format 3 (written now) encodes the entries with vfs.NodeListEncoder: each
// against the one before it (a shared name prefix, the owner, mode and link
// count when they repeat, times and inode numbers as differences), about
// half of format 2's bytes for a directory written at once; the nodes are
// the same. Formats 2 (vfs.AppendNode per entry: owners, all mode bits,
// nanosecond times, link counts, devices and extended attributes) and 1
// (older stores, vfs.DecodeNodeV1) are still read; a snapshot writes format
// 3 for the directories it changes and keeps the others' manifests as they
// are. A hard-linked node appears in full under each of its names, with its
// Ino and Nlink; loading joins the names again.
const manifestFormat = "vfsd-dir/3\n"

// manifestFormatV2 and manifestFormatV1 head the manifests of stores
// written before format 3.
const (
	manifestFormatV2 = "vfsd-dir/2\n"
	manifestFormatV1 = "vfsd-dir/1\n"
)

// dirHashes maps every directory of a snapshot to its manifest's hash.
type dirHashes = *immutable.SortedMap[vfs.Path, vfs.Hash]

type pathComparer struct{}

func (pathComparer) Compare(a, b vfs.Path) int { return vfs.ComparePaths(a, b) }

func newDirHashes() dirHashes { return immutable.NewSortedMap[vfs.Path, vfs.Hash](pathComparer{}) }

// encodeDir returns the manifest of directory d of t. Child directories'
// hashes come from hashOf.
func encodeDir(t vfs.Tree, d vfs.Path, hashOf func(vfs.Path) (vfs.Hash, error)) ([]byte, error) {
	b := make([]byte, 0, 4096)
	b = append(b, manifestFormat...)
	var err error
	var enc vfs.NodeListEncoder
	cerr := t.ChildrenErr(d, func(name string, n vfs.Node) bool {
		switch {
		case n.IsDir():
			n.Blob, err = hashOf(d.Join(name))
		case n.IsFile() && (n.Upper != 0 || n.Blob.IsZero()):
			err = fmt.Errorf("manifest of %s: file %s has no blob", d, d.Join(name))
		}
		if err != nil {
			return false
		}
		b = enc.Append(b, name, n)
		return true
	})
	if cerr != nil {
		return nil, fmt.Errorf("manifest of %s: %w", d, cerr)
	}
	return b, err
}

// decodeDir parses a manifest into its entries.
func decodeDir(b []byte, fn func(name string, n vfs.Node) error) error {
	decode := vfs.DecodeNode
	switch {
	case bytes.HasPrefix(b, []byte(manifestFormat)):
		b = b[len(manifestFormat):]
		var dec vfs.NodeListDecoder
		decode = dec.Next
	case bytes.HasPrefix(b, []byte(manifestFormatV2)):
		b = b[len(manifestFormatV2):]
	case bytes.HasPrefix(b, []byte(manifestFormatV1)):
		b = b[len(manifestFormatV1):]
		decode = vfs.DecodeNodeV1
	default:
		return errors.New("not a directory manifest")
	}
	for len(b) > 0 {
		name, n, rest, err := decode(b)
		if err != nil {
			return err
		}
		if name == "" || bytes.ContainsAny([]byte(name), "/\x00") || name == "." || name == ".." {
			return fmt.Errorf("manifest entry has an invalid name %q", name)
		}
		if err := fn(name, n); err != nil {
			return err
		}
		b = rest
	}
	return nil
}

// manifestWriter computes directory manifests and, unless dry, collects the
// new ones into a pack for the snapshot record.
//
// A directory whose manifest the reference snapshot has is patched, not
// rebuilt: its old entries are kept, and only the children on the paths to
// what changed are looked up in the tree again. A directory costs a decode
// and an encode of its entries plus one lookup per changed child, however
// many children it has. New directories, and every directory of a moved
// subtree, are built from the tree.
type manifestWriter struct {
	r    *Repo
	tree vfs.Tree
	prev dirIndex  // the reference snapshot's hashes
	dirs dirHashes // hashes known so far; updated as directories are hashed
	// refresh lists, per directory to patch, the children to look up again.
	refresh map[vfs.Path]map[string]bool
	// rebuild lists directories to build from the tree.
	rebuild map[vfs.Path]bool
	dry     bool
	pack    []packEntry
	inPack  map[vfs.Hash]bool
}

// stale reports whether d's manifest must be recomputed.
func (w *manifestWriter) stale(d vfs.Path) bool {
	_, patch := w.refresh[d]
	return patch || w.rebuild[d]
}

// hash returns directory d's manifest hash, computing (and collecting) it
// if it is stale or unknown.
func (w *manifestWriter) hash(ctx context.Context, d vfs.Path) (vfs.Hash, error) {
	if !w.stale(d) {
		if h, ok := w.dirs.Get(d); ok {
			return h, nil
		}
		// A directory the tree has not read is its manifest, unchanged.
		h, ok, err := w.tree.LazyManifest(d)
		if err != nil {
			return vfs.Hash{}, err
		}
		if ok {
			w.dirs = w.dirs.Set(d, h)
			return h, nil
		}
	}
	if err := ctx.Err(); err != nil {
		return vfs.Hash{}, err
	}
	hashOf := func(child vfs.Path) (vfs.Hash, error) { return w.hash(ctx, child) }
	var b []byte
	var err error
	old, ok := w.prev.known(d)
	if names := w.refresh[d]; ok && !w.rebuild[d] {
		if oldBytes, rerr := w.r.cachedManifest(ctx, old); rerr == nil {
			b, err = patchDir(w.tree, d, oldBytes, names, hashOf)
		}
	}
	if b == nil && err == nil {
		b, err = encodeDir(w.tree, d, hashOf)
	}
	if err != nil {
		return vfs.Hash{}, err
	}
	h := vfs.HashOf(b)
	if !w.dry && !w.inPack[h] && !w.r.hasManifest(h) {
		if w.inPack == nil {
			w.inPack = make(map[vfs.Hash]bool)
		}
		w.inPack[h] = true
		w.pack = append(w.pack, packEntry{hash: h, data: b})
	}
	w.dirs = w.dirs.Set(d, h)
	delete(w.refresh, d)
	delete(w.rebuild, d)
	return h, nil
}

// update brings prev's directory hashes up to date with the tree, given
// what changed since prev, re-hashing only the directories on the paths to
// the changes. It returns the new hashes.
//
// Directories the tree has not read (lazily loaded, unchanged) keep the
// hash they were loaded from, without being read.
func (w *manifestWriter) update(ctx context.Context, prev dirIndex, changes []vfs.Change) (dirIndex, error) {
	w.prev, w.dirs = prev, prev.set
	if w.dirs == nil {
		w.dirs = newDirHashes()
	}
	w.refresh = make(map[vfs.Path]map[string]bool)
	w.rebuild = make(map[vfs.Path]bool)
	var lookupErr error
	isDir := func(p vfs.Path) bool {
		n, ok, err := w.tree.Lookup(p)
		if err != nil && lookupErr == nil {
			lookupErr = err
		}
		return ok && n.IsDir()
	}
	for _, c := range changes {
		// Forget directories that are gone, and, beneath a subtree that
		// changed, every hash: its directories are rebuilt, or are lazy
		// and keep the hash they were loaded from.
		if c.Subtree {
			var gone []vfs.Path
			it := w.dirs.Iterator()
			it.Seek(c.Path)
			for !it.Done() {
				d, _, _ := it.Next()
				if !d.HasPrefix(c.Path) {
					break
				}
				gone = append(gone, d)
			}
			for _, d := range gone {
				w.dirs = w.dirs.Delete(d)
			}
		} else if _, ok := w.dirs.Get(c.Path); ok && !isDir(c.Path) {
			w.dirs = w.dirs.Delete(c.Path)
		}
		// A moved subtree is rebuilt whole; a new directory is built.
		if isDir(c.Path) {
			if c.Subtree {
				err := w.tree.Walk(c.Path, func(p vfs.Path, n vfs.Node) error {
					if !n.IsDir() {
						return nil
					}
					if _, lazy, err := w.tree.LazyManifest(p); err != nil || lazy {
						return cmp.Or(err, vfs.SkipDir)
					}
					w.rebuild[p] = true
					return nil
				})
				if err != nil {
					return dirIndex{}, err
				}
			} else if _, known := w.dirs.Get(c.Path); !known {
				w.rebuild[c.Path] = true
			}
		}
		// Every ancestor looks up again its child on the path to c.
		child := c.Path
		c.Path.Ancestors(func(a vfs.Path) bool {
			if isDir(a) {
				names := w.refresh[a]
				if names == nil {
					names = make(map[string]bool)
					w.refresh[a] = names
				}
				names[child.Base()] = true
			}
			child = a
			return true
		})
	}
	if lookupErr != nil {
		return dirIndex{}, lookupErr
	}
	if _, err := w.hash(ctx, vfs.Root); err != nil {
		return dirIndex{}, err
	}
	return dirIndex{set: w.dirs, tree: w.tree}, nil
}

// patchDir returns the manifest of directory d: its old manifest with the
// named children looked up in the tree again (updated, added, or dropped
// when gone) and every other entry kept as it was.
func patchDir(t vfs.Tree, d vfs.Path, old []byte, names map[string]bool, hashOf func(vfs.Path) (vfs.Hash, error)) ([]byte, error) {
	sorted := make([]string, 0, len(names))
	for name := range names {
		sorted = append(sorted, name)
	}
	slices.Sort(sorted)
	b := make([]byte, 0, len(old)+len(sorted)*96)
	b = append(b, manifestFormat...)
	var enc vfs.NodeListEncoder
	// fresh appends the tree's current entry for name, if it has one.
	fresh := func(name string) error {
		child := d.Join(name)
		n, ok, err := t.Lookup(child)
		if err != nil || !ok {
			return err
		}
		switch {
		case n.IsDir():
			h, err := hashOf(child)
			if err != nil {
				return err
			}
			n.Blob = h
		case n.IsFile() && (n.Upper != 0 || n.Blob.IsZero()):
			return fmt.Errorf("manifest of %s: file %s has no blob", d, child)
		}
		b = enc.Append(b, name, n)
		return nil
	}
	i := 0
	err := decodeDir(old, func(name string, n vfs.Node) error {
		for ; i < len(sorted) && sorted[i] < name; i++ {
			if err := fresh(sorted[i]); err != nil {
				return err
			}
		}
		if i < len(sorted) && sorted[i] == name {
			i++
			return fresh(name)
		}
		b = enc.Append(b, name, n)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for ; i < len(sorted); i++ {
		if err := fresh(sorted[i]); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// loadTree reads a snapshot's tree from its manifests, starting at the root
// manifest root and the root directory's own node.
// parent, the record's parent snapshot, is where manifests missing from the
// index are looked for first when they must come from the remote.
func (r *Repo) loadTree(ctx context.Context, rootNode vfs.Node, root vfs.Hash, maxIno uint64, parent string) (vfs.Tree, dirHashes, error) {
	rootNode.Blob = vfs.Hash{}
	mr := &manifestReader{r: r, records: make(map[vfs.Hash][]byte), parent: parent}
	tb := vfs.NewTreeBuilder(rootNode)
	tb.SetMaxIno(maxIno)
	dirs := immutable.NewSortedMapBuilder[vfs.Path, vfs.Hash](pathComparer{})
	var load func(d vfs.Path, h vfs.Hash) error
	load = func(d vfs.Path, h vfs.Hash) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		dirs.Set(d, h)
		b, err := mr.manifest(ctx, h)
		if err != nil {
			return fmt.Errorf("manifest of %s: %w", d, err)
		}
		return decodeDir(b, func(name string, n vfs.Node) error {
			p := d.Join(name)
			if n.IsDir() {
				sub := n.Blob
				n.Blob = vfs.Hash{}
				tb.Set(p, n)
				return load(p, sub)
			}
			tb.Set(p, n)
			return nil
		})
	}
	if err := load(vfs.Root, root); err != nil {
		return vfs.Tree{}, nil, err
	}
	return tb.Tree(), dirs.Map(), nil
}

// readObject reads a whole stored object.
func (r *Repo) readObject(ctx context.Context, ns Namespace, h vfs.Hash) ([]byte, error) {
	b, err := r.openObject(ctx, ns, h)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	buf := make([]byte, b.Size())
	if _, err := io.ReadFull(io.NewSectionReader(b, 0, b.Size()), buf); err != nil {
		return nil, err
	}
	if vfs.HashOf(buf) != h {
		return nil, fmt.Errorf("object %s: %w", h.Short(), ErrCorruptObject)
	}
	return buf, nil
}
