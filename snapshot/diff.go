package snapshot

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
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
// deleted (their contents are listed too), when their mode, owner or
// extended attributes changed, or when they replace, or are replaced by,
// another kind of node. A file, symlink or special file is modified when
// its content, target, mode, owner, extended attributes or device number
// changed; times alone are not a change.
type DiffEntry struct {
	Path    vfs.Path   `json:"path"`
	Change  ChangeKind `json:"change"`
	Kind    vfs.Kind   `json:"kind"`               // the node's kind (before, if deleted)
	OldKind vfs.Kind   `json:"old_kind,omitempty"` // set when the kind changed
	OldSize int64      `json:"old_size,omitempty"`
	NewSize int64      `json:"new_size,omitempty"`
	// OldMode and NewMode are the twelve Unix permission bits (setuid
	// 0o4000, setgid 0o2000, sticky 0o1000 and rwx), as chmod(2) takes them.
	OldMode uint32   `json:"old_mode,omitempty"`
	NewMode uint32   `json:"new_mode,omitempty"`
	OldBlob vfs.Hash `json:"old_blob,omitzero"`
	NewBlob vfs.Hash `json:"new_blob,omitzero"`
	// OldOwner and NewOwner are the owner before and after: set on a
	// modified entry whose owner changed (both), an added one (new) and a
	// deleted one (old), when recorded.
	OldOwner *vfs.Owner `json:"old_owner,omitempty"`
	NewOwner *vfs.Owner `json:"new_owner,omitempty"`
	// Xattrs are the extended attributes added, removed or changed, by
	// name (an added node lists those it has).
	Xattrs []XattrChange `json:"xattrs,omitempty"`
	// OldRdev and NewRdev are a device's number before and after.
	OldRdev uint64 `json:"old_rdev,omitempty"`
	NewRdev uint64 `json:"new_rdev,omitempty"`
	// LinkTo is set on an added name of a hard-linked node: another name
	// of the same node that exists before this one (in the old tree, or
	// earlier in path order in the new one), which it is a hard link to.
	LinkTo vfs.Path `json:"link_to,omitempty"`
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

// XattrChange is one extended attribute that differs: Change is added,
// modified or deleted.
type XattrChange struct {
	Name   string     `json:"name"`
	Change ChangeKind `json:"change"`
}

// Diff is the difference between two trees, in path order.
type Diff struct {
	Entries  []DiffEntry `json:"entries"`
	Added    int         `json:"added"`
	Modified int         `json:"modified"`
	Deleted  int         `json:"deleted"`

	err error // the first tree that could not be read (a lazy directory)
}

// fail keeps the first error that makes the diff incomplete.
func (d *Diff) fail(err error) {
	if err != nil && d.err == nil {
		d.err = err
	}
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
	dirs dirIndex
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
	if d.err != nil {
		return nil, fmt.Errorf("diff: %w", d.err)
	}
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

// children lists dir's children; a failure to read them (a lazily loaded
// directory) is kept in d.
func children(t vfs.Tree, dir vfs.Path, d *Diff) []child {
	var out []child
	err := t.ChildrenErr(dir, func(name string, n vfs.Node) bool {
		out = append(out, child{name, n})
		return true
	})
	d.fail(err)
	return out
}

// lookup is t.Lookup(p); a failure to read (a lazily loaded directory on
// the way) is kept in d, so the diff fails rather than calling p absent.
func lookup(t vfs.Tree, p vfs.Path, d *Diff) (vfs.Node, bool) {
	n, ok, err := t.Lookup(p)
	d.fail(err)
	return n, ok && err == nil
}

// diffDir appends the differences beneath directory dir.
func diffDir(a, b side, dir vfs.Path, d *Diff) {
	ha, okA := a.dirs.known(dir)
	hb, okB := b.dirs.known(dir)
	if okA && okB && ha == hb {
		return
	}
	ca, cb := children(a.tree, dir, d), children(b.tree, dir, d)
	for i, j := 0, 0; i < len(ca) || j < len(cb); {
		switch {
		case j == len(cb) || (i < len(ca) && ca[i].name < cb[j].name):
			subtreeEntries(a.tree, a.tree, dir.Join(ca[i].name), Deleted, true, d)
			i++
		case i == len(ca) || cb[j].name < ca[i].name:
			subtreeEntries(a.tree, b.tree, dir.Join(cb[j].name), Added, true, d)
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
			subtreeEntries(a.tree, a.tree, p, Deleted, false, d)
		}
		if nb.IsDir() {
			subtreeEntries(a.tree, b.tree, p, Added, false, d)
		}
	case na.IsDir():
		if metaDiffers(na, nb) {
			d.add(entry(p, Modified, na, nb))
		}
		diffDir(a, b, p, d)
	case na.Blob != nb.Blob || na.Target != nb.Target || na.Rdev != nb.Rdev || metaDiffers(na, nb):
		d.add(entry(p, Modified, na, nb))
	}
}

// metaDiffers reports whether a node's mode, owner or extended attributes
// differ. An owner not recorded (vfs.NoOwner, data older than owners)
// matches any.
func metaDiffers(a, b vfs.Node) bool {
	return a.Mode != b.Mode || ownerDiffers(a.Uid, b.Uid) || ownerDiffers(a.Gid, b.Gid) || a.Xattrs != b.Xattrs
}

func ownerDiffers(a, b uint32) bool { return a != b && a != vfs.NoOwner && b != vfs.NoOwner }

// ownerOf returns n's owner, or nil when it is not recorded.
func ownerOf(n vfs.Node) *vfs.Owner {
	if !n.HasOwner() {
		return nil
	}
	return &vfs.Owner{Uid: n.Uid, Gid: n.Gid}
}

// permOf returns n's twelve Unix permission bits.
func permOf(n vfs.Node) uint32 { return n.UnixMode() & 0o7777 }

// xattrChanges lists the attributes that differ from a to b, by name.
func xattrChanges(a, b vfs.Xattrs) []XattrChange {
	if a == b {
		return nil
	}
	am, bm := a.Map(), b.Map()
	var out []XattrChange
	for _, name := range a.Names() {
		if v, ok := bm[name]; !ok {
			out = append(out, XattrChange{Name: name, Change: Deleted})
		} else if string(v) != string(am[name]) {
			out = append(out, XattrChange{Name: name, Change: Modified})
		}
	}
	for _, name := range b.Names() {
		if _, ok := am[name]; !ok {
			out = append(out, XattrChange{Name: name, Change: Added})
		}
	}
	slices.SortFunc(out, func(x, y XattrChange) int { return strings.Compare(x.Name, y.Name) })
	return out
}

// subtreeEntries reports everything beneath p, and p itself when self is
// set, as added or deleted.
func subtreeEntries(a, t vfs.Tree, p vfs.Path, kind ChangeKind, self bool, d *Diff) {
	err := t.Walk(p, func(q vfs.Path, n vfs.Node) error {
		if q == p && !self {
			return nil
		}
		if kind == Added {
			e := entry(q, Added, vfs.Node{}, n)
			if n.Nlink > 1 && !n.IsDir() {
				e.LinkTo = linkTarget(a, t, q, n, d)
			}
			d.add(e)
		} else {
			d.add(entry(q, Deleted, n, vfs.Node{}))
		}
		return nil
	})
	d.fail(err)
}

// linkTarget returns the name node n (added at p in t) is a hard link to:
// the first other name of its inode that old holds as the same node, else
// the first other name before p in path order; "" when p is its first.
func linkTarget(old, t vfs.Tree, p vfs.Path, n vfs.Node, d *Diff) vfs.Path {
	names := t.LinkNames(n.Ino)
	for _, q := range names {
		if on, ok := lookup(old, q, d); ok && q != p && on.Ino == n.Ino && on.Kind == n.Kind {
			return q
		}
	}
	for _, q := range names {
		if q != p && vfs.ComparePaths(q, p) < 0 {
			return q
		}
	}
	return ""
}

func entry(p vfs.Path, kind ChangeKind, before, after vfs.Node) DiffEntry {
	e := DiffEntry{Path: p, Change: kind, Kind: after.Kind}
	if kind == Deleted {
		e.Kind = before.Kind
	}
	if kind != Added {
		e.OldSize, e.OldMode, e.OldBlob, e.OldTarget, e.OldRdev = before.Size, permOf(before), before.Blob, before.Target, before.Rdev
	}
	if kind != Deleted {
		e.NewSize, e.NewMode, e.NewBlob, e.NewTarget, e.NewRdev = after.Size, permOf(after), after.Blob, after.Target, after.Rdev
	}
	switch kind {
	case Added:
		e.NewOwner = ownerOf(after)
		e.Xattrs = xattrChanges(vfs.Xattrs{}, after.Xattrs)
	case Deleted:
		e.OldOwner = ownerOf(before)
	default:
		if ownerDiffers(before.Uid, after.Uid) || ownerDiffers(before.Gid, after.Gid) {
			e.OldOwner, e.NewOwner = ownerOf(before), ownerOf(after)
		}
		if before.Kind == after.Kind {
			e.Xattrs = xattrChanges(before.Xattrs, after.Xattrs)
		}
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
	hasOld := e.Change != Added && oldKind != vfs.KindDir && !oldKind.IsSpecial()
	hasNew := e.Change != Deleted && e.Kind != vfs.KindDir && !e.Kind.IsSpecial()
	if !hasOld && !hasNew {
		return nil
	}
	if e.Change == Modified && e.OldKind == 0 && e.OldBlob == e.NewBlob && e.OldTarget == e.NewTarget {
		return nil // only metadata changed
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
// exact permission bits are shown, setuid, setgid and sticky included, so
// a 0777 file is 100777 and a setuid one 104755 (which git cannot express;
// the line says it all the same). Fifos, sockets and devices show their
// stat(2) type: 010644, 140755, 020620, 060660.
func gitMode(kind vfs.Kind, mode uint32) string {
	mode &= 0o7777
	switch kind {
	case vfs.KindSymlink:
		return "120000"
	case vfs.KindDir:
		return fmt.Sprintf("04%04o", mode)
	case vfs.KindFifo:
		return fmt.Sprintf("01%04o", mode)
	case vfs.KindCharDev:
		return fmt.Sprintf("02%04o", mode)
	case vfs.KindBlockDev:
		return fmt.Sprintf("06%04o", mode)
	case vfs.KindSocket:
		return fmt.Sprintf("14%04o", mode)
	}
	return fmt.Sprintf("10%04o", mode)
}

// WriteUnified writes d as git writes a diff: per path a "diff --git"
// line, the mode lines ("new file mode 100755", "old mode 100644" / "new
// mode 104755", "deleted file mode ..."; "new directory mode 040755" and
// the like for directories), then vfsd's extended header lines — "hard
// link to PATH" (an added name of an existing node), "owner 0:0 ->
// 1000:1000", "xattr NAME added|changed|removed", "device MAJOR:MINOR"
// (an added device) or "old device"/"new device" — then the unified diff
// of the content — a symlink's being its target — or "Binary files ...
// differ". Every path and attribute name is quoted as git quotes paths
// (textdiff.QuotePath), so no name can forge a line. Entries need the
// diff's Text (DiffOptions.Text) for their hunks.
func (d *Diff) WriteUnified(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for i := range d.Entries {
		writeEntry(bw, &d.Entries[i])
	}
	return bw.Flush()
}

// writeExtended writes an entry's extended header lines (see WriteUnified).
func writeExtended(w *bufio.Writer, e *DiffEntry) {
	dev := devString
	isDev := func(k vfs.Kind) bool { return k == vfs.KindCharDev || k == vfs.KindBlockDev }
	switch e.Change {
	case Added:
		if e.LinkTo != "" {
			fmt.Fprintf(w, "hard link to %s\n", textdiff.QuotePath(string(e.LinkTo)))
		}
		if isDev(e.Kind) {
			fmt.Fprintf(w, "device %s\n", dev(e.NewRdev))
		}
	case Modified:
		if e.OldOwner != nil && e.NewOwner != nil {
			fmt.Fprintf(w, "owner %d:%d -> %d:%d\n", e.OldOwner.Uid, e.OldOwner.Gid, e.NewOwner.Uid, e.NewOwner.Gid)
		}
		if e.OldKind == 0 && isDev(e.Kind) && e.OldRdev != e.NewRdev {
			fmt.Fprintf(w, "old device %s\nnew device %s\n", dev(e.OldRdev), dev(e.NewRdev))
		}
	}
	for _, x := range e.Xattrs {
		verb := map[ChangeKind]string{Added: "added", Modified: "changed", Deleted: "removed"}[x.Change]
		fmt.Fprintf(w, "xattr %s %s\n", textdiff.QuotePath(x.Name), verb)
	}
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
		writeExtended(w, e)
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
		writeExtended(w, e)
		if e.Kind != vfs.KindDir {
			body(part(1), false, true)
		}
	default:
		header()
		if om, nm := gitMode(e.Kind, e.OldMode), gitMode(e.Kind, e.NewMode); om != nm {
			fmt.Fprintf(w, "old mode %s\nnew mode %s\n", om, nm)
		}
		writeExtended(w, e)
		if e.Kind != vfs.KindDir {
			body(part(0), true, true)
		}
	}
}
