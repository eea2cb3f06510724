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

// ApplyOptions tune Apply.
type ApplyOptions struct {
	// DryRun checks every change and reports what would happen, writing
	// nothing.
	DryRun bool
}

// ApplyChange is one path Apply wrote, or would write, or refused.
type ApplyChange struct {
	// Path is the session path.
	Path string `json:"path"`
	// HostPath is where it is on the host.
	HostPath string `json:"host_path"`
	// Action is write, mkdir, symlink, delete or rmdir.
	Action string `json:"action"`
	// Conflict says why the change was not applied: the host changed since
	// the import, or the change cannot be expressed safely.
	Conflict string `json:"conflict,omitempty"`
}

// ApplyReport is what Apply did.
type ApplyReport struct {
	DryRun    bool          `json:"dry_run"`
	Applied   []ApplyChange `json:"applied"`
	Conflicts []ApplyChange `json:"conflicts"`
	Outside   []string      `json:"outside,omitempty"` // changed session paths no mount maps to the host
}

// Apply writes what changed in session s since the import snapshot base
// back to the host folders mounts came from. Each change is checked first:
// the host path must still be what the import saw (same content, same
// kind, or absent) — otherwise someone changed the host since, and the
// change is reported as a conflict and left alone. Everything else is
// applied: files by a temporary file renamed into place, directories and
// symlinks created, removals last, deepest first. All host access is
// beneath the allowed root's descriptor and never follows a symlink, so a
// symlink planted on the host cannot redirect a write.
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
	diff, err := repo.Diff(ctx, snapshot.Source{Snapshot: base}, snapshot.Source{Session: s}, snapshot.DiffOptions{})
	if err != nil {
		return nil, fmt.Errorf("apply: %w", err)
	}
	a := &applier{im: im, ctx: ctx, s: s, base: baseSnap.Tree, report: &ApplyReport{DryRun: opts.DryRun, Applied: []ApplyChange{}, Conflicts: []ApplyChange{}}, dry: opts.DryRun}
	var removals []snapshot.DiffEntry
	for _, e := range diff.Entries {
		if e.Change == snapshot.Deleted {
			removals = append(removals, e)
			continue
		}
		if err := a.one(plans, e); err != nil {
			return a.report, err
		}
	}
	slices.Reverse(removals) // contents before their directories
	for _, e := range removals {
		if err := a.one(plans, e); err != nil {
			return a.report, err
		}
	}
	return a.report, nil
}

// applier carries one Apply.
type applier struct {
	im     *Importer
	ctx    context.Context
	s      *vfs.Session
	base   vfs.Tree
	report *ApplyReport
	dry    bool
	// planned are the host directories a dry run would have created by
	// now, so their contents are checked as the real run would see them.
	planned map[string]bool
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
			return root{}, "", "", false, err
		}
		return r, rootRel, hp, true, nil
	}
	return root{}, "", "", false, nil
}

// one checks and applies one diff entry.
func (a *applier) one(plans []*mountPlan, e snapshot.DiffEntry) error {
	r, rel, hp, ok, err := a.hostOf(plans, e.Path)
	if err != nil {
		return err
	}
	if !ok {
		a.report.Outside = append(a.report.Outside, e.Path.String())
		return nil
	}
	c := ApplyChange{Path: e.Path.String(), HostPath: hp, Action: actionOf(e)}
	if a.im.private.holds(path.Join(r.path, rel)) {
		c.Conflict = "is the daemon's own data (its data directory, socket or token file), which is never written"
		a.report.Conflicts = append(a.report.Conflicts, c)
		return nil
	}
	if e.OldKind != 0 && e.OldKind != e.Kind {
		c.Conflict = fmt.Sprintf("changed from %s to %s; apply that by hand", e.OldKind, e.Kind)
		a.report.Conflicts = append(a.report.Conflicts, c)
		return nil
	}
	dir, name := path.Split(rel)
	if a.dry && a.planned[path.Join(r.path, dir)] {
		// The parent is one this run creates: the name cannot exist yet.
		if _, existed := a.base.Get(e.Path); !existed {
			a.plan(r, rel, e)
			a.report.Applied = append(a.report.Applied, c)
			return nil
		}
	}
	parent, err := openBeneath(r.fd, cleanRel(dir), unix.O_PATH|unix.O_DIRECTORY, true)
	if err != nil {
		c.Conflict = "the host's parent directory is missing or not a plain directory: " + err.Error()
		a.report.Conflicts = append(a.report.Conflicts, c)
		return nil
	}
	defer unix.Close(parent)
	before, existed := a.base.Get(e.Path)
	if msg := a.conflict(parent, name, before, existed); msg != "" {
		c.Conflict = msg
		a.report.Conflicts = append(a.report.Conflicts, c)
		return nil
	}
	if a.dry {
		a.plan(r, rel, e)
	} else if err := a.write(parent, name, e, before, existed); errors.Is(err, errHostChanged) {
		c.Conflict = "changed on the host while being applied; left as the host has it"
		a.report.Conflicts = append(a.report.Conflicts, c)
		return nil
	} else if err != nil {
		return fmt.Errorf("apply %s to %s: %w", e.Path, hp, err)
	}
	a.report.Applied = append(a.report.Applied, c)
	return nil
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
	switch {
	case e.Change == snapshot.Deleted && e.Kind == vfs.KindDir:
		return "rmdir"
	case e.Change == snapshot.Deleted:
		return "delete"
	case e.Kind == vfs.KindDir:
		return "mkdir"
	case e.Kind == vfs.KindSymlink:
		return "symlink"
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

// hashAt hashes the regular file name in parent without following links.
func hashAt(parent int, name string) (vfs.Hash, error) {
	fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
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
func (a *applier) write(parent int, name string, e snapshot.DiffEntry, before vfs.Node, existed bool) error {
	switch actionOf(e) {
	case "rmdir":
		return unix.Unlinkat(parent, name, unix.AT_REMOVEDIR)
	case "delete":
		return a.deleteFile(parent, name, before)
	case "mkdir":
		n, err := a.s.Stat(a.ctx, e.Path)
		if err != nil {
			return err
		}
		if e.Change == snapshot.Modified {
			return unix.Fchmodat(parent, name, uint32(n.Mode.Perm()), 0)
		}
		return unix.Mkdirat(parent, name, uint32(n.Mode.Perm()))
	case "symlink":
		target, err := a.s.Readlink(a.ctx, e.Path)
		if err != nil {
			return err
		}
		if e.Change == snapshot.Modified {
			if err := unix.Unlinkat(parent, name, 0); err != nil {
				return err
			}
		}
		return unix.Symlinkat(target, parent, name)
	}
	return a.writeFile(parent, name, e.Path, before, existed)
}

// writeFile writes the session's file p to name in parent through a
// temporary file moved into place so that a host change racing the apply
// is never overwritten: a new file must still be absent (the move does not
// replace), and a modified one is exchanged with the host's and the host's
// checked again once it is out of the way — if it changed meanwhile, the
// exchange is undone and errHostChanged returned.
func (a *applier) writeFile(parent int, name string, p vfs.Path, before vfs.Node, existed bool) error {
	r, err := a.s.Open(a.ctx, p)
	if err != nil {
		return err
	}
	defer r.Close()
	tmp := tempName(name)
	if err := a.writeTemp(parent, tmp, r); err != nil {
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

// writeTemp writes r's content to a new file tmp in parent, synced, with
// r's permissions.
func (a *applier) writeTemp(parent int, tmp string, r *vfs.Reader) error {
	fd, err := unix.Openat(parent, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(r.Node.Mode.Perm()))
	if err != nil {
		return err
	}
	f := fileOf(fd, tmp)
	_, err = io.Copy(f, io.NewSectionReader(r, 0, r.Size()))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Fchmodat(parent, tmp, uint32(r.Node.Mode.Perm()), 0)
	}
	if err != nil {
		_ = unix.Unlinkat(parent, tmp, 0)
	}
	return err
}
