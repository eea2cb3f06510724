//go:build linux

package overlay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/internal/beneath"
	"github.com/vfsd/vfsd/vfs"
)

// upperEntry is one entry of the upper directory.
type upperEntry struct {
	p        vfs.Path    // its path in the merged view, the session path; the upper's too
	st       unix.Stat_t // the stat of the node read (its identity: device, inode, type)
	target   string      // a symlink's
	kind     vfs.Kind
	xattrs   map[string][]byte // the session's attributes (the overlay's own left out)
	redirect string
	opaque   bool
	metacopy bool
	// lower is the path in the base tree whose node this entry continues
	// (hasLower): the same path, the redirect's, or beneath a renamed
	// directory's.
	lower    vfs.Path
	hasLower bool
	// stored is a file's content, stored by prestore ahead of apply; nil
	// when it was not (apply's data stores it then).
	stored *storedContent
	// For directories: the names of the entries in the upper directory
	// and those of its whiteouts.
	names     []string
	whiteouts map[string]bool
}

// fileID identifies the content of an upper file as last hashed.
type fileID struct {
	ino, size         uint64
	mtime, ctime      int64
	blob              vfs.Hash
	sessionIno        uint64
	sessionVersionSet bool
}

// ingester is one ingest: it brings the session to base ⊕ upper.
type ingester struct {
	m    *Mount
	ctx  context.Context
	base vfs.Tree
	rep  IngestReport
	all  []*upperEntry
	// moved maps base paths to where the session has them now (renames
	// applied by this ingest or an earlier one).
	moved map[vfs.Path]vfs.Path
	// firstName maps an upper inode with several names to the first name
	// ingested.
	firstName map[uint64]vfs.Path
	// renamed is set once this ingest moved a node in the session: every
	// directory is then reconciled in full.
	renamed bool
	// incomplete is set when the ingest left something for the next one
	// (a node replaced while being read, a change refused): the session's
	// directories may not match their listings, so none is remembered.
	incomplete bool
	// mu guards incomplete while prestore's workers run.
	mu sync.Mutex
	// budget is how many more upper entries the ingest keeps in memory
	// (see entryBudget); past it only the session's existing paths are
	// read and new ones are refused.
	budget int
	// refused collects the changes undone in the merged directory.
	refused refusals
}

// ingestLocked reads the upper directory and applies to the session what
// the kernel changed. m.mu is held.
//
// The upper directory is changed by the kernel on behalf of every process
// using the mount, while the ingest reads it: it is read through
// descriptors only (internal/beneath). Each directory is listed through its
// own descriptor, each entry opened beneath it without following anything
// and read (stat, extended attributes, a symlink's target) through that
// descriptor; a file's content is read through a descriptor checked to be
// the node listed. A node replaced meanwhile is left for the next ingest,
// never read in its stead.
//
// A change the session cannot take — over its quota, or a name that is no
// session path — is refused: undone in the merged directory (the session's
// node written back, or the new entry removed), so that the mount and the
// session agree again and the session stays usable, and reported in the
// error returned once the rest is applied (code too_large or invalid_path,
// as a tool gets).
func (m *Mount) ingestLocked(ctx context.Context) (IngestReport, error) {
	start := time.Now()
	if m.upper == "" { // read-only
		return IngestReport{}, nil
	}
	in := &ingester{m: m, ctx: vfs.Relaxed(vfs.WithOrigin(ctx, m.origin)), base: m.base.Tree,
		moved: map[vfs.Path]vfs.Path{}, firstName: map[uint64]vfs.Path{}}
	in.budget = entryBudget(m.s.Quota(), in.base)
	err := in.readRoot()
	if err == nil && testHookRead != nil {
		testHookRead("read")
	}
	if err == nil {
		err = in.apply()
	}
	switch {
	case err == nil && !in.incomplete:
		in.remember()
	default:
		m.listed = nil // the session may hold part of the ingest: reconcile every directory next time
	}
	in.rep.Refused = in.refused.count
	in.rep.Duration = time.Since(start)
	m.lastIngest = in.rep
	if err != nil {
		return in.rep, fmt.Errorf("ingest the overlay's changes of session %s: %w", m.s.ID(), err)
	}
	if err := in.refused.err(m); err != nil {
		m.logf("%v", err)
		return in.rep, err
	}
	return in.rep, nil
}

// testHookRead, when set, runs after the upper root's entries are listed,
// before its subdirectories are ("listed"), and between reading the upper
// directory and applying it ("read"): tests widen the windows a racing
// process has there.
var testHookRead func(stage string)

// maxIngestEntries bounds the upper entries one ingest keeps in memory for
// a session without a quota on its entries.
const maxIngestEntries = 2 << 20

// entryBudget is how many upper entries an ingest keeps: every entry the
// merged view shows is an entry of the session after the ingest, so no
// more than its quota of entries (and one whiteout per base entry hidden)
// can be valid.
func entryBudget(q vfs.Quota, base vfs.Tree) int {
	limit := int64(maxIngestEntries)
	if q.MaxNodes > 0 && q.MaxNodes < limit {
		limit = q.MaxNodes
	}
	return int(limit) + base.Len() + 1
}

// readRoot reads the upper directory, in pre-order.
func (in *ingester) readRoot() error {
	dfd, err := beneath.OpenDir(in.m.uroot.Fd(), ".")
	if err != nil {
		return fmt.Errorf("the upper directory: %w", err)
	}
	defer unix.Close(dfd)
	root := &upperEntry{p: vfs.Root, lower: vfs.Root, hasLower: true, kind: vfs.KindDir}
	if root.st, err = beneath.Fstat(dfd); err != nil {
		return err
	}
	if err := in.readXattrs(root, dfd, ""); err != nil {
		return err
	}
	return in.read(root, dfd)
}

// read reads the entries of directory e, open at dfd, and those beneath
// it, in pre-order.
func (in *ingester) read(e *upperEntry, dfd int) error {
	in.all = append(in.all, e)
	in.rep.Entries++
	in.budget--
	var names, over []string
	err := beneath.EachName(dfd, func(name string) bool {
		if in.budget-len(names) > 0 {
			names = append(names, name)
		} else {
			over = append(over, name)
			if len(over) >= 1024 { // past the budget, a batch at a time
				in.overflow(e, over)
				over = over[:0]
			}
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("list the upper directory %s: %w", e.p, err)
	}
	in.overflow(e, over)
	sort.Strings(names)
	defer sort.Strings(e.names)
	var subdirs []*upperEntry
	for _, name := range names {
		if !validName(name) {
			in.refuseName(e.p, name)
			continue
		}
		c, err := in.readEntry(e, dfd, name)
		if err != nil {
			return err
		}
		if c == nil {
			continue
		}
		if c.kind == vfs.KindDir {
			subdirs = append(subdirs, c)
			continue
		}
		in.all = append(in.all, c)
		in.rep.Entries++
		in.budget--
	}
	if e.p.IsRoot() && testHookRead != nil {
		testHookRead("listed")
	}
	for _, c := range subdirs {
		sfd, err := beneath.OpenDir(dfd, c.p.Base())
		if err == nil {
			st, serr := beneath.Fstat(sfd)
			if serr != nil || !beneath.SameNode(&st, &c.st) {
				unix.Close(sfd)
				err = unix.ENOENT
			}
		}
		if err != nil {
			// Replaced or removed since listed: the next ingest reads it.
			// Its name stays listed, so the session's node stays as it is.
			in.incomplete = true
			continue
		}
		err = in.read(c, sfd)
		unix.Close(sfd)
		if err != nil {
			return err
		}
	}
	return nil
}

// readEntry reads the entry name of directory e (open at dfd): stat,
// extended attributes and a symlink's target, each relative to dfd and
// never following the entry. It returns nil for a whiteout (recorded in e)
// or an entry gone meanwhile. An entry replaced while it was read (its
// identity or ctime moved) is skipped, its name kept listed so that the
// session's node stays as it is: the next ingest reads it.
func (in *ingester) readEntry(e *upperEntry, dfd int, name string) (*upperEntry, error) {
	c := &upperEntry{p: e.p.Join(name)}
	if err := unix.Fstatat(dfd, name, &c.st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, nil // removed meanwhile: the next ingest sees it
		}
		return nil, fmt.Errorf("the upper entry %s: %w", c.p, err)
	}
	if c.st.Mode&unix.S_IFMT == unix.S_IFCHR && c.st.Rdev == 0 {
		if e.whiteouts == nil {
			e.whiteouts = map[string]bool{}
		}
		e.whiteouts[name] = true
		in.rep.Entries++
		in.budget--
		return nil, nil
	}
	e.names = append(e.names, name)
	c.kind = vfs.KindFromUnix(c.st.Mode)
	err := in.readXattrs(c, dfd, name)
	if err == nil && c.kind == vfs.KindSymlink {
		c.target, err = readlinkAt(dfd, name)
	}
	var after unix.Stat_t
	if err == nil {
		err = unix.Fstatat(dfd, name, &after, unix.AT_SYMLINK_NOFOLLOW)
	}
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EINVAL) ||
		err == nil && (!beneath.SameNode(&c.st, &after) || c.st.Ctim != after.Ctim) {
		in.incomplete = true // replaced while read
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the upper entry %s: %w", c.p, err)
	}
	switch {
	case c.redirect != "" && strings.HasPrefix(c.redirect, "/"):
		lp, err := vfs.ParsePath(c.redirect)
		c.lower, c.hasLower = lp, err == nil
	case c.redirect != "":
		c.lower, c.hasLower = e.lower.Join(c.redirect), e.hasLower
	case c.kind == vfs.KindDir && c.opaque:
	default:
		c.lower, c.hasLower = e.lower.Join(name), e.hasLower && !e.opaque
	}
	if c.hasLower {
		if _, c.hasLower, err = in.base.Lookup(c.lower); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// readlinkAt reads the target of the symlink name in the directory dfd.
func readlinkAt(dfd int, name string) (string, error) {
	buf := make([]byte, 256)
	for {
		n, err := unix.Readlinkat(dfd, name, buf)
		if err != nil {
			return "", err
		}
		if n < len(buf) {
			return string(buf[:n]), nil
		}
		buf = make([]byte, 2*len(buf))
	}
}

// validName reports whether an upper entry's name can be a session path's
// last segment (ParsePath's rules: UTF-8, no NUL, at most NAME_MAX bytes).
func validName(name string) bool {
	return name != "" && len(name) <= vfs.MaxSegmentBytes && utf8.ValidString(name) && !strings.ContainsRune(name, 0)
}

// overflow handles the names of directory e listed past the ingest's
// memory budget: the session's existing entries are still read (there are
// no more of them than the session holds); a new one cannot fit the
// session's quota and is refused.
func (in *ingester) overflow(e *upperEntry, names []string) {
	if len(names) == 0 {
		return
	}
	in.incomplete = true
	t := in.m.s.Tree()
	for _, name := range names {
		if validName(name) {
			if _, ok, err := t.Lookup(e.p.Join(name)); err == nil && ok {
				// The session's node stays as it is (the name is kept
				// listed); the next ingest, within memory, reads it.
				e.names = append(e.names, name)
				continue
			}
		}
		in.refused.quota = true
		in.refuseName(e.p, name)
	}
}

// readXattrs reads the extended attributes of e, the entry name of the
// directory dfd ("" for dfd itself): the overlay's own into its fields, the
// session's into xattrs.
func (in *ingester) readXattrs(e *upperEntry, dfd int, name string) error {
	list, get := beneath.ListXattrsAt, beneath.GetXattrAt
	if name == "" {
		list = func(fd int, _ string) ([]string, error) { return beneath.ListXattrs(fd) }
		get = func(fd int, _, attr string) ([]byte, error) { return beneath.GetXattr(fd, attr) }
	}
	names, err := list(dfd, name)
	if err != nil {
		return fmt.Errorf("the extended attributes of %s: %w", e.p, err)
	}
	for _, attr := range names {
		switch {
		case attr == xattrMetacopy:
			e.metacopy = true // its presence is what counts
			continue
		case attr != xattrRedirect && attr != xattrOpaque && strings.HasPrefix(attr, xattrPrefix) &&
			!strings.HasPrefix(attr, xattrEscape):
			continue // the overlay's own (origin, impure, ...): not needed
		}
		v, err := get(dfd, name, attr)
		if err != nil {
			if errors.Is(err, unix.ENODATA) {
				continue
			}
			return fmt.Errorf("the extended attribute %s of %s: %w", attr, e.p, err)
		}
		switch attr {
		case xattrRedirect:
			e.redirect = string(v)
		case xattrOpaque:
			e.opaque = string(v) == "y"
		default:
			if sn, ok := sessionXattrName(attr); ok {
				if e.xattrs == nil {
					e.xattrs = map[string][]byte{}
				}
				e.xattrs[sn] = v
			}
		}
	}
	return nil
}

// apply brings the session to what the upper entries say: renames first,
// then every entry in pre-order, then the directories' metadata deepest
// first (creating and removing entries moves a directory's times).
func (in *ingester) apply() error {
	for _, e := range in.all {
		if e.redirect != "" && e.hasLower {
			if err := in.rename(e); err != nil {
				return err
			}
		}
	}
	growth := in.overQuota()
	if growth == nil {
		if err := in.prestore(); err != nil {
			return err
		}
		defer in.releaseStored()
	}
	var dirs []*upperEntry
	for _, e := range in.all {
		if in.refused.covers(e.p) {
			continue // beneath a directory refused: undone with it
		}
		if growth != nil && in.grows(e) {
			in.refuse(e.p, growth)
			continue
		}
		var err error
		switch e.kind {
		case vfs.KindDir:
			err = in.dir(e)
			dirs = append(dirs, e)
		case vfs.KindFile:
			err = in.file(e)
		case vfs.KindSymlink:
			err = in.symlink(e)
		default:
			err = in.special(e)
		}
		if vfs.CodeOf(err) == vfs.CodeTooLarge {
			in.refuse(e.p, err)
			continue
		}
		if err != nil {
			return err
		}
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := in.meta(dirs[i]); err != nil {
			return err
		}
	}
	return nil
}

// resolve returns where the session has base path lp now.
func (in *ingester) resolve(lp vfs.Path) vfs.Path {
	for q := lp; ; q = q.Parent() {
		if to, ok := in.moved[q]; ok {
			return lp.Rebase(q, to)
		}
		if q.IsRoot() {
			return lp
		}
	}
}

// rename moves the session's node that e continues (renamed by the kernel:
// e has a redirect) to e's path, keeping its identity and subtree.
func (in *ingester) rename(e *upperEntry) error {
	bn, ok, err := in.base.Lookup(e.lower)
	if err != nil || !ok || e.lower == e.p {
		return err
	}
	t := in.m.s.Tree()
	n, ok, err := t.Lookup(e.p)
	if err != nil {
		return err
	}
	if ok && n.Ino == bn.Ino {
		in.moved[e.lower] = e.p
		return nil // done by an earlier ingest
	}
	src := in.resolve(e.lower)
	sn, ok, err := t.Lookup(src)
	if err != nil {
		return err
	}
	if !ok || sn.Ino != bn.Ino || e.p.HasPrefix(src) {
		return nil // gone from the session: entries are rebuilt from the base
	}
	if _, ok, err := t.Lookup(e.p); err != nil {
		return err
	} else if ok {
		if err := in.remove(e.p); err != nil {
			return err
		}
	}
	if err := in.m.s.Rename(in.ctx, src, e.p, vfs.RenameOptions{CreateParents: true}); err != nil {
		return err
	}
	in.renamed = true // the last listings may no longer describe the session's directories
	in.changed()
	in.moved[e.lower] = e.p
	return nil
}

// changed counts one session operation.
func (in *ingester) changed() {
	in.rep.Changes++
	in.m.unsynced = true
	if debug {
		_, file, line, _ := runtime.Caller(1)
		fmt.Fprintf(os.Stderr, "overlay ingest: change at %s:%d\n", filepath.Base(file), line)
	}
}

var debug = os.Getenv("VFSD_OVERLAY_DEBUG") != ""

func (in *ingester) remove(p vfs.Path) error {
	err := in.m.s.Remove(in.ctx, p, vfs.RemoveOptions{Recursive: true})
	if vfs.CodeOf(err) == vfs.CodeNotFound {
		return nil
	}
	in.changed()
	return err
}

func (in *ingester) owner(e *upperEntry) *vfs.Owner {
	return &vfs.Owner{Uid: e.st.Uid, Gid: e.st.Gid}
}

// dirListing is what an ingest found in one upper directory: the next
// ingest reconciles only the names whose listing changed since (see dir).
type dirListing struct {
	ino       uint64
	lower     vfs.Path
	hasLower  bool
	opaque    bool
	names     []string // sorted
	whiteouts map[string]bool
}

// remember keeps the listing of every upper directory after an ingest
// that succeeded: the session's directories hold then exactly what the
// merged view shows.
func (in *ingester) remember() {
	listed := make(map[vfs.Path]*dirListing)
	for _, e := range in.all {
		if e.kind == vfs.KindDir {
			listed[e.p] = &dirListing{ino: e.st.Ino, lower: e.lower, hasLower: e.hasLower, opaque: e.opaque,
				names: e.names, whiteouts: e.whiteouts}
		}
	}
	in.m.listed = listed
}

// dir makes the session's directory e.p hold exactly what the merged view
// shows: the base directory's entries (unless opaque) and the upper ones,
// less the whiteouts. When the last ingest left the session's directory
// matching the same upper directory, only the names that appeared in or
// left its listing (entries and whiteouts) are looked at: the rest of the
// directory, which can be large, is as the last ingest left it, because
// every change a tool made since was mirrored into the merged directory
// (and so into its listing), and a failed mirror forgets every listing.
func (in *ingester) dir(e *upperEntry) error {
	s := in.m.s
	t := s.Tree()
	n, ok, err := t.Lookup(e.p)
	if err != nil {
		return err
	}
	if ok && !n.IsDir() {
		if err := in.remove(e.p); err != nil {
			return err
		}
		ok = false
	}
	if !ok {
		if _, err := s.Mkdir(in.ctx, e.p, vfs.MkdirOptions{Perm: vfs.ModeFromUnix(e.st.Mode), ExactPerm: true,
			Owner: in.owner(e)}); err != nil {
			return err
		}
		in.changed()
		t = s.Tree()
	} else if prev := in.lastListing(e); prev != nil {
		return in.dirChanges(e, prev)
	}
	want := map[string]bool{}
	for _, name := range e.names {
		want[name] = true
	}
	var fromBase []string
	if e.hasLower && !e.opaque {
		err := in.base.ChildrenErr(e.lower, func(name string, _ vfs.Node) bool {
			if !e.whiteouts[name] && !want[name] {
				want[name] = true
				fromBase = append(fromBase, name)
			}
			return true
		})
		if err != nil {
			return err
		}
	}
	var extra []string
	err = t.ChildrenErr(e.p, func(name string, _ vfs.Node) bool {
		if !want[name] {
			extra = append(extra, name)
		}
		return true
	})
	if err != nil {
		return err // never take an unreadable directory for an empty one
	}
	for _, name := range extra {
		if err := in.remove(e.p.Join(name)); err != nil {
			return err
		}
	}
	// Entries the merged view takes from the base that the session does
	// not have (a directory renamed by the kernel whose source the session
	// no longer held): copy them from the base.
	for _, name := range fromBase {
		if _, ok, err := t.Lookup(e.p.Join(name)); err != nil {
			return err
		} else if !ok {
			if err := in.copyBase(e.lower.Join(name), e.p.Join(name)); err != nil {
				return err
			}
		}
	}
	return nil
}

// lastListing returns the listing of e's upper directory the session's
// directory e.p matched after the last ingest, or nil if that is not
// known. A directory that had no upper directory then (and is not renamed
// or opaque now) had an empty one: the session's directory was the base's.
func (in *ingester) lastListing(e *upperEntry) *dirListing {
	if in.m.listed == nil || in.renamed {
		return nil
	}
	if prev := in.m.listed[e.p]; prev != nil {
		if prev.ino == e.st.Ino && prev.lower == e.lower && prev.hasLower == e.hasLower && prev.opaque == e.opaque {
			return prev
		}
		return nil
	}
	if e.hasLower && !e.opaque && e.redirect == "" && e.lower == e.p {
		return &dirListing{ino: e.st.Ino, lower: e.lower, hasLower: true}
	}
	return nil
}

// dirChanges reconciles the names of directory e whose listing changed
// since prev, the listing the last ingest reconciled. The names in the
// upper directory now are brought over as entries of their own; every
// other name that was in either listing is the base's entry if the merged
// view shows it (no whiteout, a lower directory not hidden), else nothing.
func (in *ingester) dirChanges(e *upperEntry, prev *dirListing) error {
	now := make(map[string]bool, len(e.names))
	for _, name := range e.names {
		now[name] = true
	}
	seen := map[string]bool{}
	var names []string
	add := func(name string) {
		if !now[name] && !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	for _, name := range prev.names {
		add(name)
	}
	for name := range prev.whiteouts {
		add(name)
	}
	for name := range e.whiteouts {
		add(name)
	}
	sort.Strings(names)
	for _, name := range names {
		p, lp := e.p.Join(name), e.lower.Join(name)
		_, has, err := in.m.s.Tree().Lookup(p)
		if err != nil {
			return err
		}
		shown := false
		if e.hasLower && !e.opaque && !e.whiteouts[name] {
			if _, shown, err = in.base.Lookup(lp); err != nil {
				return err
			}
		}
		switch {
		case shown && !has:
			if err := in.copyBase(lp, p); err != nil {
				return err
			}
		case !shown && has:
			if err := in.remove(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// copyBase recreates the base's subtree at lp at p in the session.
func (in *ingester) copyBase(lp, p vfs.Path) error {
	return in.base.Walk(lp, func(q vfs.Path, n vfs.Node) error {
		dst := q.Rebase(lp, p)
		if err := in.create(dst, n); err != nil {
			return err
		}
		return in.setNodeMeta(dst, n.Uid, n.Gid, n.Mode, n.Atime, n.Mtime, n.Xattrs.Map(), n.Kind)
	})
}

// create creates node n (content from the base's blobs) at p.
func (in *ingester) create(p vfs.Path, n vfs.Node) error {
	s := in.m.s
	owner := &vfs.Owner{Uid: n.Uid, Gid: n.Gid}
	var err error
	switch n.Kind {
	case vfs.KindDir:
		_, err = s.Mkdir(in.ctx, p, vfs.MkdirOptions{Perm: n.Mode, ExactPerm: true, Owner: owner})
	case vfs.KindFile:
		err = in.writeBlob(p, n.Blob, n.Mode, owner)
	case vfs.KindSymlink:
		_, err = s.SymlinkAs(in.ctx, n.Target, p, owner)
	default:
		_, err = s.Mknod(in.ctx, p, n.Kind, vfs.CreateOptions{Perm: n.Mode, Owner: owner}, n.Rdev)
	}
	if err == nil {
		in.changed()
	}
	return err
}

// writeBlob sets the content of the file at p to blob h.
func (in *ingester) writeBlob(p vfs.Path, h vfs.Hash, perm fs.FileMode, owner *vfs.Owner) error {
	b, err := in.m.repo.Blobs().Open(in.ctx, h)
	if err != nil {
		return err
	}
	defer b.Close()
	_, err = in.m.s.WriteFile(in.ctx, p, io.NewSectionReader(b, 0, b.Size()), vfs.WriteOptions{Perm: perm, Owner: owner})
	return err
}

// file brings the session's file e.p to e: the base's content for a
// metadata-only copy-up, else the upper file's.
func (in *ingester) file(e *upperEntry) error {
	s := in.m.s
	t := s.Tree()
	n, ok, err := t.Lookup(e.p)
	if err != nil {
		return err
	}
	if e.st.Nlink > 1 {
		if first, seen := in.firstName[e.st.Ino]; seen {
			fn, _, err := t.Lookup(first)
			if err != nil {
				return err
			}
			if ok && n.Ino == fn.Ino {
				return nil
			}
			if ok {
				if err := in.remove(e.p); err != nil {
					return err
				}
			}
			if _, err := s.Link(in.ctx, first, e.p); err != nil {
				return err
			}
			in.changed()
			return nil
		}
		in.firstName[e.st.Ino] = e.p
	}
	// A name the kernel split off a hard-linked node (copy-up breaks
	// links), or a node of another kind, is replaced.
	if ok && (!n.IsFile() || n.Nlink > 1 && e.st.Nlink == 1) {
		if err := in.remove(e.p); err != nil {
			return err
		}
		ok = false
	}
	perm, owner := vfs.ModeFromUnix(e.st.Mode), in.owner(e)
	if e.metacopy {
		bn, found, err := in.base.Lookup(e.lower)
		if err != nil {
			return err
		}
		if !e.hasLower || !found || !bn.IsFile() {
			return fmt.Errorf("%s: metadata-only copy-up of %s, which the base does not hold as a file", e.p, e.lower)
		}
		if !ok || n.Blob != bn.Blob || n.Upper != 0 {
			if err := in.writeBlob(e.p, bn.Blob, perm, owner); err != nil {
				return err
			}
			in.changed()
		}
	} else if err := in.data(e, n, ok, perm, owner); err != nil {
		return err
	}
	return in.meta(e)
}

// data stores the upper file e's content as the session's file, unless
// the session has it already (same upper file, unchanged since hashed).
func (in *ingester) data(e *upperEntry, n vfs.Node, ok bool, perm fs.FileMode, owner *vfs.Owner) error {
	if in.unchanged(e, n, ok) {
		return nil
	}
	id := listedID(e)
	// The blob is stored without an fsync of its own: the upper file holds
	// the content until the mount goes, and the session's next journal sync
	// (Sync, Unmount, the background flush) syncs the store once, before
	// the records that name the blobs.
	opts := vfs.WriteOptions{Perm: perm, Owner: owner, DeferredBlob: true}
	var res vfs.WriteResult
	if c := e.stored; c != nil {
		var err error
		if res, err = in.m.s.WriteBlob(in.ctx, e.p, c.blob, c.size, c.enc, opts); err != nil {
			return err
		}
	} else {
		f, err := in.openContent(e)
		if err != nil || f == nil {
			return err
		}
		defer f.Close()
		if res, err = in.m.s.WriteFile(in.ctx, e.p, vfs.NewSparseReader(f, e.st.Size), opts); err != nil {
			return err
		}
	}
	in.changed()
	in.rep.Hashed++
	in.rep.Bytes += e.st.Size
	id.blob = res.Node.Blob
	in.m.hashed[e.p] = id
	return nil
}

// listedID is the identity of upper file e's content as listed.
func listedID(e *upperEntry) fileID {
	return fileID{ino: e.st.Ino, size: uint64(e.st.Size), mtime: unix.TimespecToNsec(e.st.Mtim), ctime: unix.TimespecToNsec(e.st.Ctim)}
}

// unchanged reports whether the session's file n (ok: it exists) holds
// upper file e's content already: the blob hashed from the same upper
// file, unchanged since.
func (in *ingester) unchanged(e *upperEntry, n vfs.Node, ok bool) bool {
	id := listedID(e)
	c, hit := in.m.hashed[e.p]
	return hit && ok && n.Upper == 0 && c.blob == n.Blob &&
		c.ino == id.ino && c.size == id.size && c.mtime == id.mtime && c.ctime == id.ctime
}

// openContent opens the upper file e for reading its content, beneath the
// upper root and checked to be the node e was read from; nil (and the
// ingest incomplete) when it was replaced or removed since.
func (in *ingester) openContent(e *upperEntry) (*os.File, error) {
	fd, err := beneath.OpenNode(in.m.uroot.Fd(), string(e.p))
	if err == nil {
		st, serr := beneath.Fstat(fd)
		if serr != nil || !beneath.SameNode(&st, &e.st) {
			unix.Close(fd)
			fd, err = -1, unix.ENOENT
		}
	}
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EXDEV) {
			in.mu.Lock()
			in.incomplete = true // replaced since listed: the next ingest reads it
			in.mu.Unlock()
			return nil, nil
		}
		return nil, fmt.Errorf("the upper file %s: %w", e.p, err)
	}
	rfd, err := beneath.Reopen(fd, unix.O_RDONLY)
	unix.Close(fd)
	if err != nil {
		return nil, fmt.Errorf("the upper file %s: %w", e.p, err)
	}
	return os.NewFile(uintptr(rfd), string(e.p)), nil
}

func (in *ingester) symlink(e *upperEntry) error {
	target := e.target
	n, ok, err := in.m.s.Tree().Lookup(e.p)
	if err != nil {
		return err
	}
	if !ok || !n.IsSymlink() || n.Target != target {
		if ok {
			if err := in.remove(e.p); err != nil {
				return err
			}
		}
		if _, err := in.m.s.SymlinkAs(in.ctx, target, e.p, in.owner(e)); err != nil {
			return err
		}
		in.changed()
	}
	return in.meta(e)
}

func (in *ingester) special(e *upperEntry) error {
	n, ok, err := in.m.s.Tree().Lookup(e.p)
	if err != nil {
		return err
	}
	if !ok || n.Kind != e.kind || (e.kind == vfs.KindCharDev || e.kind == vfs.KindBlockDev) && n.Rdev != e.st.Rdev {
		if ok {
			if err := in.remove(e.p); err != nil {
				return err
			}
		}
		if _, err := in.m.s.Mknod(in.ctx, e.p, e.kind, vfs.CreateOptions{Perm: vfs.ModeFromUnix(e.st.Mode), Owner: in.owner(e)}, e.st.Rdev); err != nil {
			return err
		}
		in.changed()
	}
	return in.meta(e)
}

// meta gives the session's node e.p e's owner, mode, extended attributes
// and times.
func (in *ingester) meta(e *upperEntry) error {
	atime := unix.TimespecToNsec(e.st.Atim)
	// The engine keeps no read times (as noatime) and neither does the
	// mount, but the upper filesystem may move atime on the kernel's reads
	// beneath it. Only an atime set with a change of ctime (utimensat) is
	// the program's.
	if e.kind == vfs.KindDir || atime > unix.TimespecToNsec(e.st.Ctim) {
		atime = keepAtime
	}
	return in.setNodeMeta(e.p, e.st.Uid, e.st.Gid, vfs.ModeFromUnix(e.st.Mode), atime,
		unix.TimespecToNsec(e.st.Mtim), e.xattrs, e.kind)
}

func (in *ingester) setNodeMeta(p vfs.Path, uid, gid uint32, mode fs.FileMode, atime, mtime int64, xattrs map[string][]byte, kind vfs.Kind) error {
	s := in.m.s
	n, ok, err := s.Tree().Lookup(p)
	if err != nil || !ok {
		return err
	}
	if n.Uid != uid || n.Gid != gid {
		var err error
		if n, err = s.Chown(in.ctx, p, uid, gid); err != nil {
			return err
		}
		in.changed()
	}
	if kind != vfs.KindSymlink && n.Mode != mode&vfs.PermBits {
		var err error
		if n, err = s.Chmod(in.ctx, p, mode); err != nil {
			return err
		}
		in.changed()
	}
	have := n.Xattrs.Map()
	for name := range have {
		if _, keep := xattrs[name]; !keep {
			if _, err := s.RemoveXattr(in.ctx, p, name); err != nil {
				return err
			}
			in.changed()
		}
	}
	for name, v := range xattrs {
		if old, ok := have[name]; !ok || string(old) != string(v) {
			if _, err := s.SetXattr(in.ctx, p, name, v, 0); err != nil {
				return err
			}
			in.changed()
		}
	}
	if n, _, err = s.Tree().Lookup(p); err != nil {
		return err
	}
	if atime == keepAtime {
		atime = n.Atime
	}
	if n.Atime != atime || n.Mtime != mtime {
		if debug {
			fmt.Fprintf(os.Stderr, "overlay ingest: %s times %d %d -> %d %d\n", p, n.Atime, n.Mtime, atime, mtime)
		}
		if _, err := s.Utimens(in.ctx, p, vfs.At(time.Unix(0, atime)), vfs.At(time.Unix(0, mtime))); err != nil {
			return err
		}
		in.changed()
	}
	return nil
}

// keepAtime asks setNodeMeta to leave the atime alone.
const keepAtime = -1 << 63
