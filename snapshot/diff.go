package snapshot

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

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
// deleted (their contents are listed too), when their mode changed, or
// when they replace, or are replaced by, another kind of node.
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
	// OldTarget and NewTarget are a symlink's target before and after.
	OldTarget string `json:"old_target,omitempty"`
	NewTarget string `json:"new_target,omitempty"`
	// Text is the unified diff of a text file, or of a symlink's target
	// (its content, as git shows a link), when asked for.
	Text string `json:"text,omitempty"`
	// Binary is set when a text diff was asked for but the content is not
	// text (or is larger than the limit).
	Binary bool `json:"binary,omitempty"`
	// parts are Text split by side for WriteUnified: one part, or two
	// (the old node removed, the new one added) when the kind changed.
	parts []string
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
		if na.Mode != nb.Mode {
			d.add(entry(p, Modified, na, nb))
		}
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
		e.OldSize, e.OldMode, e.OldBlob, e.OldTarget = before.Size, uint32(before.Mode), before.Blob, before.Target
	}
	if kind != Deleted {
		e.NewSize, e.NewMode, e.NewBlob, e.NewTarget = after.Size, uint32(after.Mode), after.Blob, after.Target
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

// addText fills in an entry's unified diff when its sides have content:
// a file's bytes, a symlink's target (as git shows a link). A side that
// is missing or a directory is empty; a kind change is the old node's
// removal followed by the new one's addition.
func (r *Repo) addText(ctx context.Context, e *DiffEntry, limit int64) error {
	oldKind := e.Kind
	if e.OldKind != 0 {
		oldKind = e.OldKind
	}
	hasOld := e.Change != Added && oldKind != vfs.KindDir
	hasNew := e.Change != Deleted && e.Kind != vfs.KindDir
	if !hasOld && !hasNew {
		return nil
	}
	content := func(kind vfs.Kind, size int64, blob vfs.Hash, target string) ([]byte, error) {
		switch {
		case kind == vfs.KindSymlink:
			return []byte(target), nil
		case size > limit:
			e.Binary = true
			return nil, nil
		}
		return r.readObject(ctx, Blobs, blob)
	}
	var old, new []byte
	var err error
	if hasOld {
		if old, err = content(oldKind, e.OldSize, e.OldBlob, e.OldTarget); err != nil {
			return err
		}
	}
	if hasNew {
		if new, err = content(e.Kind, e.NewSize, e.NewBlob, e.NewTarget); err != nil {
			return err
		}
	}
	if e.Binary || vfs.DetectEncoding(old) != vfs.EncodingUTF8 || vfs.DetectEncoding(new) != vfs.EncodingUTF8 {
		e.Binary = true
		return nil
	}
	a, b := "a/"+string(e.Path), "b/"+string(e.Path)
	switch {
	case e.OldKind != 0 && hasOld && hasNew:
		e.parts = []string{textdiff.Unified(a, textdiff.NoFile, string(old), ""), textdiff.Unified(textdiff.NoFile, b, "", string(new))}
	case e.OldKind != 0 && hasOld:
		e.parts = []string{textdiff.Unified(a, textdiff.NoFile, string(old), ""), ""}
	case e.OldKind != 0:
		e.parts = []string{"", textdiff.Unified(textdiff.NoFile, b, "", string(new))}
	default:
		if !hasOld {
			a = textdiff.NoFile
		}
		if !hasNew {
			b = textdiff.NoFile
		}
		e.parts = []string{textdiff.Unified(a, b, string(old), string(new))}
	}
	e.Text = strings.Join(e.parts, "")
	return nil
}

// gitMode renders a node's mode as git's diff headers do: 100644 for a
// file with mode 0644, 120000 for a symlink, 040755 for a directory (which
// git never shows; vfsd does, as a mode matters when it is applied). The
// exact permission bits are shown, so a 0777 file is 100777.
func gitMode(kind vfs.Kind, mode uint32) string {
	switch kind {
	case vfs.KindSymlink:
		return "120000"
	case vfs.KindDir:
		return fmt.Sprintf("04%04o", mode&0o7777)
	}
	return fmt.Sprintf("10%04o", mode&0o7777)
}

// WriteUnified writes d as git writes a diff: per path a "diff --git"
// line, the mode lines ("new file mode 100755", "old mode 100644" / "new
// mode 100777", "deleted file mode ..."; "new directory mode 040755" and
// the like for directories), then the unified diff of the content — a
// symlink's being its target — or "Binary files ... differ". Every path is
// quoted as git quotes it (textdiff.QuotePath), so no name can forge a
// line. Entries need the diff's Text (DiffOptions.Text) for their hunks.
func (d *Diff) WriteUnified(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for i := range d.Entries {
		writeEntry(bw, &d.Entries[i])
	}
	return bw.Flush()
}

// writeEntry writes one entry of WriteUnified.
func writeEntry(w *bufio.Writer, e *DiffEntry) {
	a, b := textdiff.QuotePath("a/"+string(e.Path)), textdiff.QuotePath("b/"+string(e.Path))
	noun := func(k vfs.Kind) string {
		if k == vfs.KindDir {
			return "directory"
		}
		return "file"
	}
	body := func(part string, oldSide, newSide bool) {
		switch {
		case part != "":
			w.WriteString(part)
			if !strings.HasSuffix(part, "\n") {
				w.WriteByte('\n')
			}
		case e.Binary:
			from, to := a, b
			if !oldSide {
				from = textdiff.NoFile
			}
			if !newSide {
				to = textdiff.NoFile
			}
			fmt.Fprintf(w, "Binary files %s and %s differ\n", from, to)
		}
	}
	part := func(i int) string {
		if i < len(e.parts) {
			return e.parts[i]
		}
		return ""
	}
	header := func() { fmt.Fprintf(w, "diff --git %s %s\n", a, b) }
	switch {
	case e.Change == Added:
		header()
		fmt.Fprintf(w, "new %s mode %s\n", noun(e.Kind), gitMode(e.Kind, e.NewMode))
		body(part(0), false, e.Kind != vfs.KindDir)
	case e.Change == Deleted:
		header()
		fmt.Fprintf(w, "deleted %s mode %s\n", noun(e.Kind), gitMode(e.Kind, e.OldMode))
		body(part(0), e.Kind != vfs.KindDir, false)
	case e.OldKind != 0 && e.OldKind != e.Kind:
		// As git shows a type change: the old node deleted, the new added.
		header()
		fmt.Fprintf(w, "deleted %s mode %s\n", noun(e.OldKind), gitMode(e.OldKind, e.OldMode))
		if e.OldKind != vfs.KindDir {
			body(part(0), true, false)
		}
		header()
		fmt.Fprintf(w, "new %s mode %s\n", noun(e.Kind), gitMode(e.Kind, e.NewMode))
		if e.Kind != vfs.KindDir {
			body(part(1), false, true)
		}
	default:
		header()
		if om, nm := gitMode(e.Kind, e.OldMode), gitMode(e.Kind, e.NewMode); om != nm {
			fmt.Fprintf(w, "old mode %s\nnew mode %s\n", om, nm)
		}
		if e.Kind != vfs.KindDir {
			body(part(0), true, true)
		}
	}
}
