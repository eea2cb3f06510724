//go:build linux

package hostmount

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

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
		report: &ApplyReport{DryRun: opts.DryRun, Applied: []ApplyChange{}, Conflicts: []ApplyChange{}}, dry: opts.DryRun}
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

// applier carries one Apply.
type applier struct {
	im     *Importer
	ctx    context.Context
	blobs  vfs.BlobStore
	tree   vfs.Tree // the session snapshot being applied (not for a dry run)
	base   vfs.Tree
	report *ApplyReport
	dry    bool
	// planned are the host directories a dry run would have created by
	// now, so their contents are checked as the real run would see them.
	planned map[string]bool
	// done are the entries the import base takes on: those applied and
	// those outside every mount, in diff order.
	done []snapshot.DiffEntry
}

// hostOf maps a session path to the last mount that covers it.
func (a *applier) hostOf(plans []*mountPlan, p vfs.Path) (root, string, string, bool, error) {
	for i := len(plans) - 1; i >= 0; i-- {
		mp := plans[i]
		if !p.HasPrefix(mp.mountPath) || p == mp.mountPath {
			continue
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(string(p), string(mp.mountPath)), "/")
		hp := path.Join(mp.hostPath, rel)
		r, rootRel, err := findRoot(a.im.roots, hp)
		if err != nil {
			return root{}, "", hp, true, err
		}
		return r, rootRel, hp, true, nil
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
	case a.im.private.holds(path.Join(r.path, rel)):
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
	}
	dir, name := path.Split(rel)
	if a.dry && a.planned[path.Join(r.path, dir)] {
		// The parent is one this run creates: the name cannot exist yet.
		if _, existed := a.base.Get(e.Path); !existed {
			a.plan(r, rel, e)
			a.report.Applied = append(a.report.Applied, c)
			return
		}
	}
	parent, err := openBeneath(r.fd, cleanRel(dir), unix.O_PATH|unix.O_DIRECTORY, true)
	if err != nil {
		conflict("the host's parent directory is missing or not a plain directory: " + err.Error())
		return
	}
	defer unix.Close(parent)
	before, existed := a.base.Get(e.Path)
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
	} else if err := a.write(plans, r, parent, name, e, before, existed, &c); errors.Is(err, errHostChanged) {
		conflict("changed on the host while being applied; left as the host has it")
		return
	} else if errors.Is(err, errHostMeta) {
		conflict(err.Error() + "; left as the host has it: apply it by hand, or import again")
		return
	} else if err != nil {
		conflict(refusal(e, err))
		return
	}
	a.report.Applied = append(a.report.Applied, c)
	a.done = append(a.done, e)
}

// refusal explains a host error that stopped one change.
func refusal(e snapshot.DiffEntry, err error) string {
	var why string
	switch {
	case errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) && actionOf(e) == "rmdir":
		why = "the host directory is not empty: files were added to it on the host since the import; remove them (or keep the directory), then apply again"
	case errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM):
		why = "the host refused it (permission denied); fix the host's permissions, then apply again"
	case errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT):
		why = "the host file system is full; free space, then apply again"
	case errors.Is(err, unix.EROFS):
		why = "the host file system is read-only"
	case errors.Is(err, unix.EEXIST):
		why = "created on the host while being applied; left as the host has it"
	case errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EISDIR):
		why = "the host path changed kind while being applied; left as the host has it"
	default:
		why = "the host refused it; left as the host has it"
	}
	return fmt.Sprintf("%s (%v)", why, err)
}

// advance records the import base after a real apply: base with exactly
// the entries done — the target snapshot itself when nothing conflicted,
// base itself when nothing was done.
func (a *applier) advance(repo *snapshot.Repo, base, target string) (string, error) {
	switch {
	case len(a.done) == 0:
		return base, nil
	case len(a.report.Conflicts) == 0:
		return target, nil
	}
	rootNode, _ := a.base.Get(vfs.Root)
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
	_ = a.base.Walk(vfs.Root, func(p vfs.Path, n vfs.Node) error {
		if !p.IsRoot() {
			put(p, n)
		}
		return nil
	})
	for _, e := range a.done {
		if e.Change == snapshot.Deleted {
			tb.DeleteSubtree(e.Path)
			continue
		}
		n, ok := a.tree.Get(e.Path)
		if !ok {
			continue
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
			dn, ok := a.tree.Get(d)
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

// plan remembers a directory a dry run would create.
func (a *applier) plan(r root, rel string, e snapshot.DiffEntry) {
	if actionOf(e) == "mkdir" && e.Change == snapshot.Added {
		if a.planned == nil {
			a.planned = map[string]bool{}
		}
		a.planned[path.Join(r.path, rel)] = true
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

// conflict reports how the host's name in parent differs from what the
// import saw (before, or nothing when !existed), or "".
func (a *applier) conflict(parent int, name string, before vfs.Node, existed bool) string {
	var st unix.Stat_t
	err := unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case errors.Is(err, unix.ENOENT):
		if existed {
			return "removed on the host since the import"
		}
		return ""
	case err != nil:
		return "cannot inspect the host path: " + err.Error()
	case !existed:
		return "created on the host since the import"
	}
	switch {
	case before.IsDir():
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return "no longer a directory on the host"
		}
	case before.IsSymlink():
		buf := make([]byte, 4096)
		n, err := unix.Readlinkat(parent, name, buf)
		if st.Mode&unix.S_IFMT != unix.S_IFLNK || err != nil || string(buf[:n]) != before.Target {
			return "the symlink changed on the host since the import"
		}
	case before.IsSpecial():
		if kindOf(st.Mode) != before.Kind || (before.Kind == vfs.KindCharDev || before.Kind == vfs.KindBlockDev) && st.Rdev != before.Rdev {
			return fmt.Sprintf("no longer the same %s on the host", before.Kind)
		}
	default:
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			return "no longer a regular file on the host"
		}
		if st.Size != before.Size {
			return "modified on the host since the import (size differs)"
		}
		h, err := hashAt(parent, name)
		if err != nil {
			return "cannot read the host file: " + err.Error()
		}
		if h != before.Blob && !(before.Size == 0 && before.Blob.IsZero()) {
			return "modified on the host since the import (content differs)"
		}
	}
	return ""
}

// hostHas reports whether the host's name in parent already is what entry
// e makes it: gone for a removal, a directory for a new one, the same
// symlink target, or a regular file with the same content and mode.
func (a *applier) hostHas(parent int, name string, e snapshot.DiffEntry) bool {
	var st unix.Stat_t
	err := unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if e.Change == snapshot.Deleted {
		return errors.Is(err, unix.ENOENT)
	}
	if err != nil || e.OldKind != 0 {
		return false
	}
	switch e.Kind {
	case vfs.KindDir:
		return st.Mode&unix.S_IFMT == unix.S_IFDIR && uint32(st.Mode)&0o7777 == e.NewMode
	case vfs.KindSymlink:
		buf := make([]byte, 4096)
		n, err := unix.Readlinkat(parent, name, buf)
		return st.Mode&unix.S_IFMT == unix.S_IFLNK && err == nil && string(buf[:n]) == e.NewTarget
	case vfs.KindFile:
		if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size != e.NewSize || uint32(st.Mode)&0o7777 != e.NewMode || e.NewBlob.IsZero() {
			return false
		}
		h, err := hashAt(parent, name)
		return err == nil && h == e.NewBlob
	}
	return false
}

// hashAt hashes the regular file name in parent without following links.
func hashAt(parent int, name string) (vfs.Hash, error) {
	fd, err := noAtime(func(flags int) (int, error) { return unix.Openat(parent, name, flags, 0) }, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC)
	if err != nil {
		return vfs.Hash{}, err
	}
	f := fileOf(fd, name)
	defer f.Close()
	h := vfs.NewHasher()
	if _, err := io.Copy(h, f); err != nil {
		return vfs.Hash{}, err
	}
	return vfs.SumHash(h), nil
}

// errHostChanged reports a host path that changed between the conflict
// check and the write: the write was undone, or never happened.
var errHostChanged = errors.New("the host path changed while being applied")

// write applies one entry beneath parent, where name was before (or
// absent, when !existed) when the check passed.
func (a *applier) write(plans []*mountPlan, r root, parent int, name string, e snapshot.DiffEntry, before vfs.Node, existed bool, c *ApplyChange) error {
	action := actionOf(e)
	switch action {
	case "rmdir":
		return unix.Unlinkat(parent, name, unix.AT_REMOVEDIR)
	case "delete":
		return a.deleteFile(parent, name, before)
	}
	n, ok := a.tree.Get(e.Path)
	if !ok || n.Kind != e.Kind {
		return fmt.Errorf("%s is not in the session's snapshot as a %s", e.Path, e.Kind)
	}
	switch action {
	case "chmod", "metadata":
		if testHookBeforeMove != nil {
			testHookBeforeMove(parent, name)
		}
		// Through a descriptor opened without following a link and
		// checked to be of the node's kind, so a name swapped for a
		// symlink cannot redirect a chown, chmod or setxattr.
		return withNode(parent, name, n.Kind, func(fd int) error {
			return setMeta(fd, before, n, e.OldOwner != nil, c)
		})
	case "mkdir":
		if err := unix.Mkdirat(parent, name, 0o700); err != nil {
			return err
		}
		return withNode(parent, name, vfs.KindDir, func(fd int) error { return setMeta(fd, vfs.Node{}, n, false, c) })
	case "link":
		if c.Note = a.linkNote(plans, r, e); c.Note == "" {
			err := a.link(plans, parent, name, e, n)
			if !errors.Is(err, errCopy) {
				return err
			}
			c.Note = "written as a copy: " + strings.TrimPrefix(err.Error(), errCopy.Error()+": ")
		}
		return a.writeFile(parent, name, n, before, existed, c)
	case "mknod", "symlink":
		// The node is made aside and renamed into place, so the host
		// never lacks the name and a racing creation is not replaced.
		tmp := tempName(name)
		var err error
		if action == "mknod" {
			err = unix.Mknodat(parent, tmp, n.UnixMode()&^0o7777|0o600, int(n.Rdev))
		} else {
			err = unix.Symlinkat(n.Target, parent, tmp)
		}
		if err == nil {
			err = withNode(parent, tmp, n.Kind, func(fd int) error { return setMeta(fd, vfs.Node{}, n, false, c) })
		}
		if err != nil {
			_ = unix.Unlinkat(parent, tmp, 0)
			return err
		}
		flags := uint(unix.RENAME_NOREPLACE)
		if e.Change == snapshot.Modified {
			flags = 0
		}
		err = unix.Renameat2(parent, tmp, parent, name, flags)
		if err != nil {
			_ = unix.Unlinkat(parent, tmp, 0)
		}
		if errors.Is(err, unix.EEXIST) {
			err = errHostChanged
		}
		return err
	}
	if e.Change == snapshot.Added && n.Nlink > 1 && c.Note == "" {
		for _, q := range a.tree.LinkNames(n.Ino) {
			if _, _, _, ok, _ := a.hostOf(plans, q); !ok {
				c.Note = fmt.Sprintf("written as a copy: its other name %s is outside the mounts", q)
				break
			}
		}
	}
	return a.writeFile(parent, name, n, before, existed, c)
}

// writeFile writes the session's file n to name in parent through a
// temporary file moved into place so that a host change racing the apply
// is never overwritten: a new file must still be absent (the move does not
// replace), and a modified one is exchanged with the host's and the host's
// checked again once it is out of the way — if it changed meanwhile, the
// exchange is undone and errHostChanged returned.
func (a *applier) writeFile(parent int, name string, n vfs.Node, before vfs.Node, existed bool, c *ApplyChange) error {
	tmp := tempName(name)
	if err := a.writeTemp(parent, tmp, n, c); err != nil {
		return err
	}
	if testHookBeforeMove != nil {
		testHookBeforeMove(parent, name)
	}
	if !existed {
		err := unix.Renameat2(parent, tmp, parent, name, unix.RENAME_NOREPLACE)
		if errors.Is(err, unix.EEXIST) {
			err = errHostChanged
		}
		if err != nil {
			_ = unix.Unlinkat(parent, tmp, 0)
		}
		return err
	}
	switch err := unix.Renameat2(parent, tmp, parent, name, unix.RENAME_EXCHANGE); {
	case errors.Is(err, unix.ENOENT):
		_ = unix.Unlinkat(parent, tmp, 0)
		return errHostChanged
	case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS):
		// A file system without exchange: replace, as checked just before.
		err = unix.Renameat(parent, tmp, parent, name)
		if err != nil {
			_ = unix.Unlinkat(parent, tmp, 0)
		}
		return err
	case err != nil:
		_ = unix.Unlinkat(parent, tmp, 0)
		return err
	}
	// tmp is now the host's file as it was at the exchange.
	if a.conflict(parent, tmp, before, true) != "" {
		if err := unix.Renameat2(parent, tmp, parent, name, unix.RENAME_EXCHANGE); err != nil {
			return fmt.Errorf("%w; the host's version is at %s: %v", errHostChanged, tmp, err)
		}
		_ = unix.Unlinkat(parent, tmp, 0)
		return errHostChanged
	}
	return unix.Unlinkat(parent, tmp, 0)
}

// deleteFile removes name from parent unless the host changed it: the
// file is moved aside, checked, and then removed or moved back.
func (a *applier) deleteFile(parent int, name string, before vfs.Node) error {
	tmp := tempName(name)
	if testHookBeforeMove != nil {
		testHookBeforeMove(parent, name)
	}
	switch err := unix.Renameat2(parent, name, parent, tmp, unix.RENAME_NOREPLACE); {
	case errors.Is(err, unix.ENOENT):
		return errHostChanged
	case err != nil:
		return err
	}
	if a.conflict(parent, tmp, before, true) != "" {
		if err := unix.Renameat2(parent, tmp, parent, name, unix.RENAME_NOREPLACE); err != nil {
			return fmt.Errorf("%w; the host's version is at %s: %v", errHostChanged, tmp, err)
		}
		return errHostChanged
	}
	return unix.Unlinkat(parent, tmp, 0)
}

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
var testHookBeforeMove func(parent int, name string)

// writeTemp writes file n's content to a new file tmp in parent, synced,
// with n's owner (as root), mode, extended attributes and times.
func (a *applier) writeTemp(parent int, tmp string, n vfs.Node, c *ApplyChange) error {
	var src io.Reader = strings.NewReader("")
	if n.Size > 0 {
		b, err := a.blobs.Open(a.ctx, n.Blob)
		if err != nil {
			return fmt.Errorf("read the session's content: %w", err)
		}
		defer b.Close()
		src = io.NewSectionReader(b, 0, n.Size)
	}
	fd, err := unix.Openat(parent, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	f := fileOf(fd, tmp)
	_, err = io.Copy(f, src)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = withNode(parent, tmp, vfs.KindFile, func(fd int) error { return setMeta(fd, vfs.Node{}, n, false, c) })
	}
	if err != nil {
		_ = unix.Unlinkat(parent, tmp, 0)
	}
	return err
}
