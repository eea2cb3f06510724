//go:build linux

package overlay

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/internal/beneath"
	"github.com/vfsd/vfsd/vfs"
)

// refusals are the changes made through the mount that an ingest refused
// and undid in the merged directory.
type refusals struct {
	count int
	quota bool              // some were over the session's quota (else: names no session path can hold)
	shown []string          // the first few, for the error
	dirs  map[vfs.Path]bool // refused paths the session did not have: what is beneath them went with them
}

// maxShownRefusals is how many refused paths the error names.
const maxShownRefusals = 8

func (r *refusals) add(what string) {
	r.count++
	if len(r.shown) < maxShownRefusals {
		r.shown = append(r.shown, what)
	}
}

// covers reports whether p is beneath a refused directory: one lookup per
// ancestor, however many were refused.
func (r *refusals) covers(p vfs.Path) bool {
	if len(r.dirs) == 0 {
		return false
	}
	for q := p; !q.IsRoot(); {
		q = q.Parent()
		if r.dirs[q] {
			return true
		}
	}
	return false
}

// err is the error that reports the refusals to the ingest's caller, with
// the code a tool gets for the same change: too_large (EDQUOT) over the
// quota, invalid_path for a name no session path can hold.
func (r *refusals) err(m *Mount) error {
	if r.count == 0 {
		return nil
	}
	list := strings.Join(r.shown, ", ")
	if r.count > len(r.shown) {
		list += fmt.Sprintf(" and %d more", r.count-len(r.shown))
	}
	if r.quota {
		q := m.s.Quota()
		return &vfs.Error{Op: "ingest", Code: vfs.CodeTooLarge, Err: syscall.EDQUOT,
			Msg: fmt.Sprintf("%d changes made through the mount at %s would take session %s past its quota (%s) and were undone there: %s; remove files the session no longer needs, or ask the admin for a larger quota",
				r.count, m.dir, m.s.ID(), quotaText(q), list)}
	}
	return &vfs.Error{Op: "ingest", Code: vfs.CodeInvalidPath,
		Msg: fmt.Sprintf("%d entries made through the mount at %s have names a session path cannot hold (not UTF-8, or longer than %d bytes) and were removed there: %s",
			r.count, m.dir, vfs.MaxSegmentBytes, list)}
}

func quotaText(q vfs.Quota) string {
	var parts []string
	if q.MaxNodes > 0 {
		parts = append(parts, fmt.Sprintf("%d entries", q.MaxNodes))
	}
	if q.MaxBytes > 0 {
		parts = append(parts, fmt.Sprintf("%d bytes", q.MaxBytes))
	}
	if len(parts) == 0 {
		parts = append(parts, fmt.Sprintf("%d entries an ingest reads", maxIngestEntries))
	}
	return strings.Join(parts, ", ")
}

// refuse undoes, in the merged directory, the change at p the session did
// not take (cause): the session's node is written back over it, or, where
// the session has none, the new entry is removed with what is beneath it.
// The mount and the session then agree at p again.
func (in *ingester) refuse(p vfs.Path, cause error) {
	m := in.m
	in.incomplete = true
	if vfs.CodeOf(cause) == vfs.CodeTooLarge {
		in.refused.quota = true
	}
	in.refused.add(p.String())
	t := m.s.Tree()
	n, ok, err := t.Lookup(p)
	switch {
	case err != nil:
	case !ok:
		if in.refused.dirs == nil {
			in.refused.dirs = map[vfs.Path]bool{}
		}
		in.refused.dirs[p] = true
		err = m.removeMerged(p, true)
	case n.IsFile():
		if err = m.writeContent(p); err == nil {
			err = m.settle(t, p)
		}
	case n.IsDir():
		err = m.settle(t, p)
	default:
		if err = m.makeNode(p, n); err == nil {
			err = m.settle(t, p)
		}
	}
	if err != nil {
		m.logf("overlay mount %s: undo the refused change of %s (%v): %v", m.dir, p, cause, err)
	}
}

// refuseName removes the entry name of the merged directory dir, whose
// name no session path can hold (or which is past the ingest's memory
// budget and new to the session).
func (in *ingester) refuseName(dir vfs.Path, name string) {
	m := in.m
	in.incomplete = true
	shown := dir.Join("x").String()
	in.refused.add(shown[:len(shown)-1] + strconv.Quote(name))
	dfd, err := beneath.OpenDir(m.mroot.Fd(), string(dir))
	if err == nil {
		err = beneath.RemoveAll(dfd, name)
		unix.Close(dfd)
	}
	if err != nil {
		m.logf("overlay mount %s: remove the refused entry %q of %s: %v", m.dir, name, dir, err)
	}
}

// overQuota returns the quota error when applying the upper entries read
// would take the session past its quota: the entries the session does not
// have and the bytes files grow by, less what whiteouts remove. Then every
// change that grows the session is refused, as a batch of tool changes
// over the quota is refused whole; changes that do not grow it (edits
// within a file's size, removals, metadata) still apply.
func (in *ingester) overQuota() error {
	q := in.m.s.Quota()
	if q.MaxNodes <= 0 && q.MaxBytes <= 0 {
		return nil
	}
	t := in.m.s.Tree()
	nodes, bytes := int64(t.Len()-1), t.Bytes()
	for _, e := range in.all {
		for name := range e.whiteouts {
			_ = t.Walk(e.p.Join(name), func(_ vfs.Path, n vfs.Node) error {
				nodes--
				if n.IsFile() {
					bytes -= n.Size
				}
				return nil
			})
		}
		if e.p.IsRoot() {
			continue
		}
		n, ok, err := t.Lookup(e.p)
		switch {
		case err != nil:
		case !ok:
			nodes++
			if e.kind == vfs.KindFile {
				bytes += e.st.Size
			}
		case e.kind == vfs.KindFile && n.IsFile():
			bytes += e.st.Size - n.Size
		}
	}
	switch {
	case q.MaxNodes > 0 && nodes > q.MaxNodes:
		return &vfs.Error{Op: "ingest", Code: vfs.CodeTooLarge, Err: syscall.EDQUOT,
			Msg: fmt.Sprintf("the mount's changes would leave %d entries, over the quota of %d", nodes, q.MaxNodes)}
	case q.MaxBytes > 0 && bytes > q.MaxBytes:
		return &vfs.Error{Op: "ingest", Code: vfs.CodeTooLarge, Err: syscall.EDQUOT,
			Msg: fmt.Sprintf("the mount's changes would leave %d bytes, over the quota of %d", bytes, q.MaxBytes)}
	}
	return nil
}

// grows reports whether applying upper entry e would grow the session: a
// path it does not have, or a file larger than the session's.
func (in *ingester) grows(e *upperEntry) bool {
	if e.p.IsRoot() {
		return false
	}
	n, ok, err := in.m.s.Tree().Lookup(e.p)
	if err != nil || !ok {
		return true
	}
	return e.kind == vfs.KindFile && n.IsFile() && e.st.Size > n.Size
}
