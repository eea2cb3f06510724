package snapshot

import (
	"context"
	"fmt"

	"github.com/vfsd/vfsd/internal/textdiff"
	"github.com/vfsd/vfsd/vfs"
)

// ChangeKind says how a path differs between two trees.
type ChangeKind string

// Change kinds.
const (
	Added    ChangeKind = "added"
	Modified ChangeKind = "modified"
	Deleted  ChangeKind = "deleted"
)

// DiffEntry is one path that differs. Directories appear only when added or
// deleted (their contents are listed too) or when they replace, or are
// replaced by, another kind of node.
type DiffEntry struct {
	Path    vfs.Path   `json:"path"`
	Change  ChangeKind `json:"change"`
	Kind    vfs.Kind   `json:"kind"`               // the node's kind (before, if deleted)
	OldKind vfs.Kind   `json:"old_kind,omitempty"` // set when the kind changed
	OldSize int64      `json:"old_size,omitempty"`
	NewSize int64      `json:"new_size,omitempty"`
	OldMode uint32     `json:"old_mode,omitempty"`
	NewMode uint32     `json:"new_mode,omitempty"`
	OldBlob vfs.Hash   `json:"old_blob,omitzero"`
	NewBlob vfs.Hash   `json:"new_blob,omitzero"`
	// Text is the unified diff of a text file, when asked for.
	Text string `json:"text,omitempty"`
	// Binary is set when a text diff was asked for but the content is not
	// text (or is larger than the limit).
	Binary bool `json:"binary,omitempty"`
}

// Diff is the difference between two trees, in path order.
type Diff struct {
	Entries  []DiffEntry `json:"entries"`
	Added    int         `json:"added"`
	Modified int         `json:"modified"`
	Deleted  int         `json:"deleted"`
}

// DiffOptions tune Diff.
type DiffOptions struct {
	// Text adds unified diffs of text files.
	Text bool
	// MaxTextBytes bounds the size of a file given a text diff; 1 MiB when 0.
	MaxTextBytes int64
}

// side is one tree being compared.
type side struct {
	tree vfs.Tree
	dirs dirHashes
}

// resolve turns a Source into a tree with directory hashes. A live session
// is frozen (its pending handle writes sealed into blobs) and its hashes are
// computed without storing anything; release undoes the pins.
func (r *Repo) resolve(ctx context.Context, src Source) (side, func(), error) {
	if src.Session != nil {
		f, err := src.Session.Freeze(ctx)
		if err != nil {
			return side{}, nil, err
		}
		_, dirs, err := r.frozenManifests(ctx, f, true)
		if err != nil {
			f.Release()
			return side{}, nil, err
		}
		return side{tree: f.Tree, dirs: dirs}, f.Release, nil
	}
	snap, err := r.Get(ctx, src.Snapshot)
	if err != nil {
		return side{}, nil, err
	}
	return side{tree: snap.Tree, dirs: snap.dirs}, func() {}, nil
}

// Diff lists what differs from a to b, by content: a file rewritten with
// the same bytes is not a change. Subtrees whose manifests have the same
// hash are skipped, so diffing two snapshots costs what differs between
// them.
func (r *Repo) Diff(ctx context.Context, a, b Source, opts DiffOptions) (*Diff, error) {
	sa, releaseA, err := r.resolve(ctx, a)
	if err != nil {
		return nil, fmt.Errorf("diff: %w", err)
	}
	defer releaseA()
	sb, releaseB, err := r.resolve(ctx, b)
	if err != nil {
		return nil, fmt.Errorf("diff: %w", err)
	}
	defer releaseB()
	d := &Diff{Entries: []DiffEntry{}}
	diffDir(sa, sb, vfs.Root, d)
	if opts.Text {
		if opts.MaxTextBytes <= 0 {
			opts.MaxTextBytes = 1 << 20
		}
		for i := range d.Entries {
			if err := r.addText(ctx, &d.Entries[i], opts.MaxTextBytes); err != nil {
				return nil, fmt.Errorf("diff %s: %w", d.Entries[i].Path, err)
			}
		}
	}
	return d, nil
}

type child struct {
	name string
	node vfs.Node
}

func children(t vfs.Tree, dir vfs.Path) []child {
	var out []child
	t.Children(dir, func(name string, n vfs.Node) bool {
		out = append(out, child{name, n})
		return true
	})
	return out
}

// diffDir appends the differences beneath directory dir.
func diffDir(a, b side, dir vfs.Path, d *Diff) {
	ha, okA := a.dirs.Get(dir)
	hb, okB := b.dirs.Get(dir)
	if okA && okB && ha == hb {
		return
	}
	ca, cb := children(a.tree, dir), children(b.tree, dir)
	for i, j := 0, 0; i < len(ca) || j < len(cb); {
		switch {
		case j == len(cb) || (i < len(ca) && ca[i].name < cb[j].name):
			subtreeEntries(a.tree, dir.Join(ca[i].name), Deleted, true, d)
			i++
		case i == len(ca) || cb[j].name < ca[i].name:
			subtreeEntries(b.tree, dir.Join(cb[j].name), Added, true, d)
			j++
		default:
			diffNode(a, b, dir.Join(ca[i].name), ca[i].node, cb[j].node, d)
			i++
			j++
		}
	}
}

// diffNode compares a path present on both sides.
func diffNode(a, b side, p vfs.Path, na, nb vfs.Node, d *Diff) {
	switch {
	case na.Kind != nb.Kind:
		e := entry(p, Modified, na, nb)
		e.OldKind = na.Kind
		d.add(e)
		if na.IsDir() {
			subtreeEntries(a.tree, p, Deleted, false, d)
		}
		if nb.IsDir() {
			subtreeEntries(b.tree, p, Added, false, d)
		}
	case na.IsDir():
		diffDir(a, b, p, d)
	case na.Blob != nb.Blob || na.Mode != nb.Mode || na.Target != nb.Target:
		d.add(entry(p, Modified, na, nb))
	}
}

// subtreeEntries reports everything beneath p, and p itself when self is
// set, as added or deleted.
func subtreeEntries(t vfs.Tree, p vfs.Path, kind ChangeKind, self bool, d *Diff) {
	_ = t.Walk(p, func(q vfs.Path, n vfs.Node) error {
		if q == p && !self {
			return nil
		}
		if kind == Added {
			d.add(entry(q, Added, vfs.Node{}, n))
		} else {
			d.add(entry(q, Deleted, n, vfs.Node{}))
		}
		return nil
	})
}

func entry(p vfs.Path, kind ChangeKind, before, after vfs.Node) DiffEntry {
	e := DiffEntry{Path: p, Change: kind, Kind: after.Kind}
	if kind == Deleted {
		e.Kind = before.Kind
	}
	if kind != Added {
		e.OldSize, e.OldMode, e.OldBlob = before.Size, uint32(before.Mode), before.Blob
	}
	if kind != Deleted {
		e.NewSize, e.NewMode, e.NewBlob = after.Size, uint32(after.Mode), after.Blob
	}
	return e
}

func (d *Diff) add(e DiffEntry) {
	d.Entries = append(d.Entries, e)
	switch e.Change {
	case Added:
		d.Added++
	case Modified:
		d.Modified++
	case Deleted:
		d.Deleted++
	}
}

// addText fills in an entry's unified diff when both sides are text files.
func (r *Repo) addText(ctx context.Context, e *DiffEntry, limit int64) error {
	oldKind := e.Kind
	if e.OldKind != 0 {
		oldKind = e.OldKind
	}
	oldIsFile := e.Change != Added && oldKind == vfs.KindFile
	newIsFile := e.Change != Deleted && e.Kind == vfs.KindFile
	if !oldIsFile && !newIsFile {
		return nil
	}
	if e.OldSize > limit || e.NewSize > limit {
		e.Binary = true
		return nil
	}
	var old, new []byte
	var err error
	if oldIsFile {
		if old, err = r.readObject(ctx, Blobs, e.OldBlob); err != nil {
			return err
		}
	}
	if newIsFile {
		if new, err = r.readObject(ctx, Blobs, e.NewBlob); err != nil {
			return err
		}
	}
	if vfs.DetectEncoding(old) != vfs.EncodingUTF8 || vfs.DetectEncoding(new) != vfs.EncodingUTF8 {
		e.Binary = true
		return nil
	}
	oldName, newName := "a/"+string(e.Path), "b/"+string(e.Path)
	if !oldIsFile {
		oldName = textdiff.NoFile
	}
	if !newIsFile {
		newName = textdiff.NoFile
	}
	e.Text = textdiff.Unified(oldName, newName, string(old), string(new))
	return nil
}
