package snapshot

import (
	"context"
	"fmt"
	"slices"

	"github.com/vfsd/vfsd/vfs"
)

// DiffTrees lists what differs from tree a to tree b, as Diff does, but
// only at the paths scope names (a change's node, and everything beneath
// it when Subtree): the trees of a session's history, compared where its
// events changed them, at a cost that follows the change, not the
// workspace. With no scope the whole trees are compared. A file whose
// content is in an upper file on either side (no blob) gets no text.
func (r *Repo) DiffTrees(ctx context.Context, a, b vfs.Tree, scope []vfs.Change, opts DiffOptions) (*Diff, error) {
	sa, sb := side{tree: a, dirs: dirIndex{tree: a}}, side{tree: b, dirs: dirIndex{tree: b}}
	d := &Diff{Entries: []DiffEntry{}}
	if len(scope) == 0 {
		scope = []vfs.Change{{Path: vfs.Root, Subtree: true}}
	}
	// Parents an event created (or removed) along the way are not in its
	// changes: a path's topmost ancestor missing on one side stands for it.
	widened := make([]vfs.Change, 0, len(scope))
	for _, c := range scope {
		top := vfs.Path("")
		c.Path.Ancestors(func(q vfs.Path) bool {
			_, inA := lookup(a, q, d)
			_, inB := lookup(b, q, d)
			if inA != inB {
				top = q
			}
			return true
		})
		if top != "" {
			c = vfs.Change{Path: top, Subtree: true}
		}
		widened = append(widened, c)
	}
	for _, c := range normalizeScope(widened) {
		na, okA := lookup(a, c.Path, d)
		nb, okB := lookup(b, c.Path, d)
		switch {
		case !okA && !okB:
		case !okB:
			subtreeEntries(a, a, c.Path, Deleted, true, d)
		case !okA:
			subtreeEntries(a, b, c.Path, Added, true, d)
		case c.Subtree || na.Kind != nb.Kind || !na.IsDir():
			if c.Path.IsRoot() && na.IsDir() && nb.IsDir() {
				diffDir(sa, sb, vfs.Root, d)
			} else {
				diffNode(sa, sb, c.Path, na, nb, d)
			}
		case metaDiffers(na, nb):
			d.add(entry(c.Path, Modified, na, nb))
		}
	}
	if d.err != nil {
		return nil, fmt.Errorf("diff: %w", d.err)
	}
	// Scopes may overlap (a rename's source beneath another's subtree):
	// one entry per path, in path order.
	slices.SortStableFunc(d.Entries, func(x, y DiffEntry) int { return vfs.ComparePaths(x.Path, y.Path) })
	d.Entries = slices.CompactFunc(d.Entries, func(x, y DiffEntry) bool { return x.Path == y.Path })
	d.Added, d.Modified, d.Deleted = 0, 0, 0
	for _, e := range d.Entries {
		switch e.Change {
		case Added:
			d.Added++
		case Modified:
			d.Modified++
		case Deleted:
			d.Deleted++
		}
	}
	if opts.Text {
		if opts.MaxTextBytes <= 0 {
			opts.MaxTextBytes = 1 << 20
		}
		for i := range d.Entries {
			e := &d.Entries[i]
			if unsealed(e.OldBlob, e.OldSize, e.Change != Added, e) || unsealed(e.NewBlob, e.NewSize, e.Change != Deleted, e) {
				continue
			}
			if err := r.addText(ctx, e, opts.MaxTextBytes); err != nil {
				return nil, fmt.Errorf("diff %s: %w", e.Path, err)
			}
		}
	}
	return d, nil
}

// unsealed reports whether one side of a file entry has content but no
// blob (it is in an upper file).
func unsealed(blob vfs.Hash, size int64, present bool, e *DiffEntry) bool {
	return present && blob.IsZero() && size > 0 && (e.Kind == vfs.KindFile || e.OldKind == vfs.KindFile)
}

// normalizeScope sorts the changes by path, merges duplicates, and drops
// those beneath another's subtree.
func normalizeScope(scope []vfs.Change) []vfs.Change {
	cs := slices.Clone(scope)
	slices.SortFunc(cs, func(x, y vfs.Change) int { return vfs.ComparePaths(x.Path, y.Path) })
	var out []vfs.Change
	var under []vfs.Path // subtree scopes kept so far, innermost last
	for _, c := range cs {
		covered := false
		for _, p := range under {
			if c.Path != p && c.Path.HasPrefix(p) || p.IsRoot() && !c.Path.IsRoot() {
				covered = true
				break
			}
		}
		if covered {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Path == c.Path {
			out[n-1].Subtree = out[n-1].Subtree || c.Subtree
		} else {
			out = append(out, c)
		}
		if c.Subtree {
			under = append(under, c.Path)
		}
	}
	return out
}
