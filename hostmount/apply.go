package hostmount

// Apply: the diff, the checks and the report are the same everywhere; the
// host access (parentDir, conflict, write) is per platform: openat2 and
// friends on Linux (apply_linux.go), os.Root elsewhere (apply_root.go).

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// Apply writes what changed in session s since the import snapshot base
// back to the host folders mounts came from. Each change is checked first:
// the host path must still be what the import saw (same content, same
// kind, or absent) — otherwise someone changed the host since, and the
// change is reported as a conflict and left alone. Everything else is
// applied: files by a temporary file renamed into place, directories and
// symlinks created, removals last, deepest first. All host access is
// beneath the allowed root's descriptor and never follows a symlink, so a
// symlink planted on the host cannot redirect a write.
//
// Once it starts writing, Apply never fails half-way: a change the host
// refuses (a directory that is not empty, permission denied, no space, a
// path that changed kind) is a conflict with the host's reason, and the
// rest is still applied. A real apply then records the new import base
// (ApplyReport.Import). An error means nothing was written.
func (im *Importer) Apply(ctx context.Context, repo *snapshot.Repo, base string, s *vfs.Session, mounts []Mount, opts ApplyOptions) (*ApplyReport, error) {
	var plans []*mountPlan
	for _, m := range mounts {
		mp, err := validate(m)
		if err != nil {
			return nil, err
		}
		plans = append(plans, mp)
	}
	baseSnap, err := repo.Get(ctx, base)
	if err != nil {
		return nil, fmt.Errorf("apply: base snapshot: %w", err)
	}
	target := snapshot.Source{Session: s, Snapshot: opts.Snapshot}
	var tree vfs.Tree
	switch {
	case opts.Snapshot != "":
		target.Session = nil
	case !opts.DryRun:
		// What is written comes from one snapshot, so a tool call racing
		// the apply is either wholly in it or left for the next apply.
		snap, err := repo.Snapshot(ctx, s, "apply")
		if err != nil {
			return nil, fmt.Errorf("apply: snapshot the session: %w", err)
		}
		target = snapshot.Source{Snapshot: snap.ID}
	}
	if target.Snapshot != "" {
		snap, err := repo.Get(ctx, target.Snapshot)
		if err != nil {
			return nil, fmt.Errorf("apply: session snapshot: %w", err)
		}
		tree = snap.Tree
	}
	diff, err := repo.Diff(ctx, snapshot.Source{Snapshot: base}, target, snapshot.DiffOptions{})
	if err != nil {
		return nil, fmt.Errorf("apply: %w", err)
	}
	a := &applier{im: im, ctx: ctx, blobs: repo.Blobs(), tree: tree, base: baseSnap.Tree,
		report: &ApplyReport{DryRun: opts.DryRun, Applied: []ApplyChange{}, Conflicts: []ApplyChange{}}, dry: opts.DryRun,
		keepSetID: opts.KeepSetID}
	if err := a.readable(diff.Entries); err != nil {
		return nil, fmt.Errorf("apply: nothing was written: %w", err)
	}
	var removals []snapshot.DiffEntry
	for _, e := range diff.Entries {
		if e.Change == snapshot.Deleted {
			removals = append(removals, e)
			continue
		}
		a.one(plans, e)
	}
	slices.Reverse(removals) // contents before their directories
	for _, e := range removals {
		a.one(plans, e)
	}
	if opts.DryRun {
		return a.report, nil
	}
	a.report.Import, err = a.advance(repo, base, target.Snapshot)
	if err != nil {
		return a.report, fmt.Errorf("apply: the changes listed as applied were written, but the new import base could not be recorded (the next apply will report them as conflicts): %w", err)
	}
	return a.report, nil
}

// readable reads, before anything is written, every node the apply will
// look up: the trees may be loaded lazily, and a directory that cannot be
// read (code vfs.CodeIO) must fail the apply whole, never pass for a file
// the base or the session lacks.
func (a *applier) readable(entries []snapshot.DiffEntry) error {
	for _, e := range entries {
		if _, _, err := a.base.Lookup(e.Path); err != nil {
			return fmt.Errorf("the import base: %w", err)
		}
		if a.tree.Valid() && e.Change != snapshot.Deleted {
			if _, _, err := a.tree.Lookup(e.Path); err != nil {
				return fmt.Errorf("the session's snapshot: %w", err)
			}
		}
	}
	return nil
}

// applier carries one Apply.
type applier struct {
	im     *Importer
	ctx    context.Context
	blobs  vfs.BlobStore
	tree   vfs.Tree // the session snapshot being applied (not for a dry run)
	base   vfs.Tree
	report *ApplyReport
	dry    bool
	// keepSetID is ApplyOptions.KeepSetID (see written); stripped says a
	// node was written otherwise than the session has it.
	keepSetID, stripped bool
	// planned are the host directories a dry run would have created by
	// now, so their contents are checked as the real run would see them.
	planned map[string]bool
	// done are the entries the import base takes on: those applied and
	// those outside every mount, in diff order.
	done []snapshot.DiffEntry
}

// hostOf maps a session path to the last mount that covers it: its root,
// its path beneath the root (slash-separated) and its host path.
func (a *applier) hostOf(plans []*mountPlan, p vfs.Path) (root, string, string, bool, error) {
	for i := len(plans) - 1; i >= 0; i-- {
		mp := plans[i]
		if !p.HasPrefix(mp.mountPath) || p == mp.mountPath {
			continue
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(string(p), string(mp.mountPath)), "/")
		hp := hostJoin(mp.hostPath, rel)
		r, rootRel, err := findRoot(a.im.roots, hp)
		if err != nil {
			return root{}, "", hp, true, err
		}
		return r, filepath.ToSlash(rootRel), hp, true, nil
	}
	return root{}, "", "", false, nil
}

// one checks and applies one diff entry, recording it in the report as
// applied, conflicting or outside.
func (a *applier) one(plans []*mountPlan, e snapshot.DiffEntry) {
	r, rel, hp, ok, err := a.hostOf(plans, e.Path)
	c := ApplyChange{Path: e.Path.String(), HostPath: hp, Action: actionOf(e)}
	conflict := func(msg string) { c.Conflict = msg; a.report.Conflicts = append(a.report.Conflicts, c) }
	switch {
	case !ok:
		a.report.Outside = append(a.report.Outside, e.Path.String())
		a.done = append(a.done, e)
		return
	case err != nil:
		conflict("the host path is not beneath an allowed root: " + err.Error())
		return
	case a.ctx.Err() != nil:
		conflict("not applied: the apply was cancelled (" + a.ctx.Err().Error() + "); apply again")
		return
	case a.im.private.holds(hostJoin(r.path, rel)):
		conflict("is the daemon's own data (its data directory, socket or token file), which is never written")
		return
	case e.OldKind != 0 && e.OldKind != e.Kind:
		conflict(fmt.Sprintf("changed from %s to %s; apply that by hand", e.OldKind, e.Kind))
		return
	case e.Change == snapshot.Modified && e.Kind.IsSpecial() && e.OldRdev != e.NewRdev:
		conflict("the device number changed; apply that by hand")
		return
	case e.Change == snapshot.Added && (e.Kind == vfs.KindCharDev || e.Kind == vfs.KindBlockDev) && !isRoot:
		conflict("a device: only a daemon running as root can create one; create it by hand")
		return
	case e.Kind.IsSpecial() && !hostSpecials:
		conflict(fmt.Sprintf("a %s: special files are imported and applied on Linux only; create it by hand", e.Kind))
		return
	}
	dir, name := path.Split(rel)
	if a.dry && a.planned[hostJoin(r.path, dir)] {
		// The parent is one this run creates: the name cannot exist yet.
		if _, existed, err := a.base.Lookup(e.Path); err == nil && !existed {
			a.plan(r, rel, e)
			a.report.Applied = append(a.report.Applied, c)
			return
		}
	}
	parent, err := openParent(r, cleanRel(dir))
	if err != nil {
		conflict("the host's parent directory is missing or not a plain directory: " + err.Error())
		return
	}
	defer closeParent(parent)
	before, existed, err := a.base.Lookup(e.Path)
	if err != nil {
		// Read before anything was written (see readable); failing now
		// is a store gone bad half-way: this change only is left out.
		conflict("the import base cannot be read (" + err.Error() + "); check the store, then apply again")
		return
	}
	if msg := a.conflict(parent, name, before, existed); msg != "" {
		if a.hostHas(parent, name, e) {
			// The host changed, but to exactly what the session has:
			// nothing to write, and nothing in conflict.
			c.Note = "the host already has it"
			a.report.Applied = append(a.report.Applied, c)
			a.done = append(a.done, e)
			return
		}
		conflict(msg + "; bring the host's changes into the session with vfsd session rebase, then apply again")
		return
	}
	if a.dry {
		a.plan(r, rel, e)
		c.Note = a.linkNote(plans, r, e)
		if e.Kind == vfs.KindFile && !a.keepSetID {
			kept := e.NewMode &^ setIDBits
			if before.Kind == vfs.KindFile && before.Blob == e.NewBlob && before.Size == e.NewSize {
				kept |= e.NewMode & before.UnixMode() & setIDBits
			}
			if kept != e.NewMode {
				c.Note = joinNotes(c.Note, "set-ID bits not applied (vfsd apply --keep-setid applies them)")
			}
		}
	} else if err := a.write(plans, r, parent, name, e, before, existed, &c); errors.Is(err, errHostChanged) {
		conflict("changed on the host while being applied; left as the host has it")
		return
	} else if errors.Is(err, errHostMeta) {
		conflict(err.Error() + "; left as the host has it: apply it by hand, or import again")
		return
	} else if errors.Is(err, vfs.ErrIO) {
		conflict("the session's snapshot cannot be read (" + err.Error() + "); check the store, then apply again")
		return
	} else if err != nil {
		conflict(refusal(e, err))
		return
	}
	a.report.Applied = append(a.report.Applied, c)
	a.done = append(a.done, e)
}

// What a host error that stopped one change was, as errClassOf (per
// platform) tells it.
const (
	errOther = iota
	errNotEmpty
	errDenied
	errFull
	errReadOnly
	errExists
	errKind
)

// refusal explains a host error that stopped one change.
func refusal(e snapshot.DiffEntry, err error) string {
	var why string
	switch class := errClassOf(err); {
	case class == errNotEmpty || class == errExists && actionOf(e) == "rmdir":
		why = "the host directory is not empty: files were added to it on the host since the import; remove them (or keep the directory), then apply again"
	case class == errDenied:
		why = "the host refused it (permission denied); fix the host's permissions, then apply again"
	case class == errFull:
		why = "the host file system is full; free space, then apply again"
	case class == errReadOnly:
		why = "the host file system is read-only"
	case class == errExists:
		why = "created on the host while being applied; left as the host has it"
	case class == errKind:
		why = "the host path changed kind while being applied; left as the host has it"
	default:
		why = "the host refused it; left as the host has it"
	}
	return fmt.Sprintf("%s (%v)", why, err)
}

// advance records the import base after a real apply: base with exactly
// the entries done, as written — the target snapshot itself when nothing
// conflicted and everything was written as the session has it, base
// itself when nothing was done.
func (a *applier) advance(repo *snapshot.Repo, base, target string) (string, error) {
	switch {
	case len(a.done) == 0:
		return base, nil
	case len(a.report.Conflicts) == 0 && !a.stripped:
		return target, nil
	}
	rootNode, _, _ := a.base.Lookup(vfs.Root) // the root is never beneath a lazy directory
	tb := vfs.NewTreeBuilder(rootNode)
	used := map[uint64]bool{rootNode.Ino: true}
	linked := map[uint64]bool{} // inodes used only by names of one hard-linked node
	maxIno := max(a.base.MaxIno(), a.tree.MaxIno())
	put := func(p vfs.Path, n vfs.Node) {
		isLink := !n.IsDir() && n.Nlink > 1
		if old, ok := tb.Get(p); ok && old.IsDir() && n.IsDir() {
			n.Ino = old.Ino
		} else {
			if ok {
				tb.DeleteSubtree(p)
			}
			// Another name of the same hard-linked node keeps its inode,
			// so the builder joins them again.
			if n.Ino == 0 || used[n.Ino] && !(isLink && linked[n.Ino]) {
				maxIno++
				n.Ino = maxIno
			}
		}
		if !used[n.Ino] && isLink {
			linked[n.Ino] = true
		}
		used[n.Ino] = true
		tb.Set(p, n)
	}
	// The base may be loaded lazily: a directory that cannot be read
	// fails the advance rather than leaving a gap in the new base.
	if err := a.base.Walk(vfs.Root, func(p vfs.Path, n vfs.Node) error {
		if !p.IsRoot() {
			put(p, n)
		}
		return nil
	}); err != nil {
		return "", fmt.Errorf("read the mount's base: %w", err)
	}
	for _, e := range a.done {
		if e.Change == snapshot.Deleted {
			tb.DeleteSubtree(e.Path)
			continue
		}
		n, ok, err := a.tree.Lookup(e.Path)
		if err != nil {
			return "", fmt.Errorf("read the session's snapshot: %w", err)
		}
		if !ok {
			continue
		}
		if before, _, err := a.base.Lookup(e.Path); err == nil {
			n, _ = a.written(before, n) // the base is what the host has
		}
		// A parent the base lacks (the host gained it, or its own
		// entry conflicted) is taken as the session has it: the host
		// has a directory there, or the write beneath it would have
		// failed.
		var missing []vfs.Path
		e.Path.Ancestors(func(d vfs.Path) bool {
			if cur, ok := tb.Get(d); ok && cur.IsDir() {
				return false
			}
			missing = append(missing, d)
			return true
		})
		for _, d := range slices.Backward(missing) {
			dn, ok, err := a.tree.Lookup(d)
			if err != nil {
				return "", fmt.Errorf("read the session's snapshot: %w", err)
			}
			if !ok || !dn.IsDir() {
				dn = vfs.Node{Kind: vfs.KindDir, Mode: vfs.DefaultDirMode, Version: 1}
			}
			put(d, dn)
		}
		put(e.Path, n)
	}
	tb.SetMaxIno(maxIno)
	// Recorded even when the caller gave up half-way: what was written
	// must not be reported as a conflict next time.
	snap, err := repo.CommitTree(context.WithoutCancel(a.ctx), tb.Tree(), "apply")
	if err != nil {
		return "", err
	}
	return snap.ID, nil
}

// setIDBits are the set-user-ID and set-group-ID bits: a program run from
// such a file runs as its owner or group.
const setIDBits = 0o6000

// xattrCapability holds a file's capabilities, which a program run from it
// gains.
const xattrCapability = "security.capability"

// written is the session's node n as apply writes it where the import saw
// before, and a note when that differs. Unless KeepSetID, a regular file
// keeps only the set-ID bits and file capability before had, and only
// while its content is the same: a set-user-ID-root program that a
// command in the session made, or a host program whose content it
// replaced, does not reach the host as one.
func (a *applier) written(before, n vfs.Node) (vfs.Node, string) {
	if a.keepSetID || n.Kind != vfs.KindFile {
		return n, ""
	}
	same := before.Kind == vfs.KindFile && before.Blob == n.Blob && before.Size == n.Size
	var note []string
	keep := uint32(0)
	if same {
		keep = before.UnixMode() & setIDBits
	}
	if drop := n.UnixMode() & setIDBits &^ keep; drop != 0 {
		if drop&0o4000 != 0 {
			n.Mode &^= fs.ModeSetuid
		}
		if drop&0o2000 != 0 {
			n.Mode &^= fs.ModeSetgid
		}
		note = append(note, "set-ID bits")
	}
	if v, ok := n.Xattrs.Get(xattrCapability); ok {
		if bv, bok := before.Xattrs.Get(xattrCapability); !same || !bok || string(bv) != string(v) {
			if x, err := n.Xattrs.Without(xattrCapability); err == nil {
				n.Xattrs = x
				note = append(note, "file capability (security.capability)")
			}
		}
	}
	if len(note) == 0 {
		return n, ""
	}
	a.stripped = true
	return n, strings.Join(note, " and ") + " not applied (vfsd apply --keep-setid applies them)"
}

// joinNotes joins two notes of one change.
func joinNotes(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// plan remembers a directory a dry run would create.
func (a *applier) plan(r root, rel string, e snapshot.DiffEntry) {
	if actionOf(e) == "mkdir" && e.Change == snapshot.Added {
		if a.planned == nil {
			a.planned = map[string]bool{}
		}
		a.planned[hostJoin(r.path, rel)] = true
	}
}

func actionOf(e snapshot.DiffEntry) string {
	metaOnly := e.Change == snapshot.Modified && e.OldKind == 0 &&
		(e.Kind == vfs.KindDir || e.OldBlob == e.NewBlob && e.OldTarget == e.NewTarget && e.OldRdev == e.NewRdev)
	switch {
	case e.Change == snapshot.Deleted && e.Kind == vfs.KindDir:
		return "rmdir"
	case e.Change == snapshot.Deleted:
		return "delete"
	case metaOnly && e.OldOwner == nil && len(e.Xattrs) == 0:
		return "chmod" // only the mode changed
	case metaOnly:
		return "metadata"
	case e.Kind == vfs.KindDir:
		return "mkdir"
	case e.Kind == vfs.KindSymlink:
		return "symlink"
	case e.Kind.IsSpecial():
		return "mknod"
	case e.Change == snapshot.Added && e.LinkTo != "":
		return "link"
	}
	return "write"
}

func cleanRel(dir string) string {
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		return "."
	}
	return dir
}

// linkNote returns why an added hard link e cannot be a host hard link
// whatever the host holds — its other name is outside every mount, or
// beneath another allowed root — or "".
func (a *applier) linkNote(plans []*mountPlan, r root, e snapshot.DiffEntry) string {
	if actionOf(e) != "link" {
		return ""
	}
	r2, _, _, ok, err := a.hostOf(plans, e.LinkTo)
	switch {
	case !ok || err != nil:
		return fmt.Sprintf("written as a copy: its other name %s is outside the mounts", e.LinkTo)
	case r2.path != r.path:
		return fmt.Sprintf("written as a copy: its other name %s is beneath another allowed root", e.LinkTo)
	case !hostHardLinks:
		return "written as a copy: hard links are applied back as links on Linux only"
	}
	return ""
}

// errHostMeta reports a mode or owner the host changed since the import,
// which the session changed too: left as the host has it.
var errHostMeta = errors.New("changed on the host since the import")

// errHostChanged reports a host path that changed between the conflict
// check and the write: the write was undone, or never happened.
var errHostChanged = errors.New("the host path changed while being applied")

// tempName is a fresh name for apply's temporary file beside name.
func tempName(name string) string {
	suffix := ".vfsd-" + strconv.FormatUint(rand.Uint64(), 36)
	if len(name)+1+len(suffix) > vfs.MaxSegmentBytes {
		return suffix
	}
	return "." + name + suffix
}

// testHookBeforeMove, if set, is called after a file's check and before
// apply moves it: the worst moment for a host change.
var testHookBeforeMove func(name string)
