package daemon

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/internal/textdiff"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// rebaseMergeMax bounds the size of a file a rebase merges line by line:
// a larger one both sides changed is a conflict.
const rebaseMergeMax = 8 << 20

// Rebase imports a session's host folders again and replays the
// session's changes on top: paths only the session changed keep its
// version, paths only the host changed take the host's, text files both
// changed are merged line by line (git's three-way rules) with conflict
// markers where both changed the same lines. The session's change is one
// journal step (rewind to its seq_before undoes it) and its import
// snapshot becomes the new import, so apply then writes the session's
// changes over the host as it is now.
func (d *Daemon) Rebase(ctx context.Context, id string, req api.RebaseRequest) (*api.RebaseReport, error) {
	e, err := d.lookup(id)
	if err != nil {
		return nil, err
	}
	if err := d.fleetGate(ctx, e); err != nil {
		return nil, err
	}
	return d.rebase(ctx, e, req.DryRun)
}

// rebase does Rebase's work.
func (d *Daemon) rebase(ctx context.Context, e *entry, dry bool) (*api.RebaseReport, error) {
	e.hostMu.Lock()
	defer e.hostMu.Unlock()
	base, mounts, im, err := d.hostFolders(ctx, e, "to rebase on")
	if err != nil {
		return nil, err
	}
	theirs, _, err := im.Import(ctx, d.repo, mounts, nil)
	if err != nil {
		return nil, fmt.Errorf("rebase %s: import the host folders again: %w", e.id, err)
	}
	keep := false
	defer func() {
		if !keep { // a dry run, or a failure: the new import is not needed
			_, _ = d.repo.DeleteSnapshots(context.WithoutCancel(ctx), []string{theirs.ID}, snapshot.DeleteOptions{})
		}
	}()
	if err := e.s.SealUppers(ctx); err != nil {
		return nil, err
	}
	baseSnap, err := d.repo.Get(ctx, base)
	if err != nil {
		return nil, fmt.Errorf("rebase %s: the import snapshot: %w", e.id, err)
	}
	ours, err := d.repo.Diff(ctx, snapshot.Source{Snapshot: base}, snapshot.Source{Session: e.s}, snapshot.DiffOptions{})
	if err != nil {
		return nil, fmt.Errorf("rebase %s: %w", e.id, err)
	}
	host, err := d.repo.Diff(ctx, snapshot.Source{Snapshot: base}, snapshot.Source{Snapshot: theirs.ID}, snapshot.DiffOptions{})
	if err != nil {
		return nil, fmt.Errorf("rebase %s: %w", e.id, err)
	}
	rb := &rebaser{d: d, ctx: ctx, s: e.s, base: baseSnap.Tree, cur: e.s.Tree(), theirs: theirs.Tree,
		ours: map[vfs.Path]snapshot.DiffEntry{}, b: e.s.NewBatch(),
		rep: &api.RebaseReport{DryRun: dry, ImportSnapshot: theirs.ID, PreviousImport: base,
			Kept: []string{}, Taken: []string{}, Merged: []string{}, Conflicts: []api.RebaseConflict{}}}
	defer rb.b.Discard()
	for _, de := range ours.Entries {
		rb.ours[de.Path] = de
	}
	hostPaths := map[vfs.Path]bool{}
	for _, de := range host.Entries {
		hostPaths[de.Path] = true
	}
	for _, de := range ours.Entries {
		if !hostPaths[de.Path] {
			rb.rep.KeptCount++
			if len(rb.rep.Kept) < api.RebaseMaxPaths {
				rb.rep.Kept = append(rb.rep.Kept, wirePath(de.Path))
			}
		}
	}
	// Deletions last, deepest first, as apply does.
	var removals []snapshot.DiffEntry
	for _, de := range host.Entries {
		if de.Change == snapshot.Deleted {
			removals = append(removals, de)
			continue
		}
		if err := rb.one(de); err != nil {
			return nil, err
		}
	}
	slices.Reverse(removals)
	for _, de := range removals {
		if err := rb.one(de); err != nil {
			return nil, err
		}
	}
	rb.rep.SeqBefore = e.s.Info().Seq
	rb.rep.Seq = rb.rep.SeqBefore
	if dry {
		return rb.rep, nil
	}
	if rb.b.Len() > 0 {
		if _, err := rb.b.Commit(ctx); err != nil {
			return nil, fmt.Errorf("rebase %s: replay the host's changes into the session: %w; the session is as it was", e.id, err)
		}
		rb.rep.Seq = e.s.Info().Seq
	}
	if err := d.updateMeta(e, func(m *sessionMeta) {
		m.Import = theirs.ID
		m.Owned = append(m.Owned, theirs.ID) // released when the session closes
		m.ImportMarks = append(slices.Clone(m.ImportMarks), importMark{Seq: rb.rep.SeqBefore, Import: base})
		for _, c := range rb.rep.Conflicts {
			if c.Markers && !slices.Contains(m.Conflicted, c.Path) {
				m.Conflicted = append(slices.Clone(m.Conflicted), c.Path)
			}
		}
	}); err != nil {
		return nil, fmt.Errorf("rebase %s: the session has the host's changes (rewind to %d to undo them), but its new import could not be recorded: %w", e.id, rb.rep.SeqBefore, err)
	}
	keep = true
	v := d.view(e)
	rb.rep.Session = &v
	return rb.rep, nil
}

// rebaser carries one rebase: the host's changes (base → theirs) are
// turned into a batch of changes to the session (whose changes since base
// are ours).
type rebaser struct {
	d      *Daemon
	ctx    context.Context
	s      *vfs.Session
	base   vfs.Tree
	cur    vfs.Tree // the session now
	theirs vfs.Tree
	ours   map[vfs.Path]snapshot.DiffEntry
	b      *vfs.Batch
	rep    *api.RebaseReport
	// removed are directories the batch removes with their contents.
	removed []vfs.Path
}

func (rb *rebaser) taken(p vfs.Path) {
	rb.rep.TakenCount++
	if len(rb.rep.Taken) < api.RebaseMaxPaths {
		rb.rep.Taken = append(rb.rep.Taken, wirePath(p))
	}
}

func (rb *rebaser) merged(p vfs.Path) {
	rb.rep.MergedCount++
	if len(rb.rep.Merged) < api.RebaseMaxPaths {
		rb.rep.Merged = append(rb.rep.Merged, wirePath(p))
	}
}

func (rb *rebaser) conflict(c api.RebaseConflict) {
	rb.rep.Conflicts = append(rb.rep.Conflicts, c)
}

// oursBeneath reports whether the session changed anything beneath p.
func (rb *rebaser) oursBeneath(p vfs.Path) bool {
	for q := range rb.ours {
		if q != p && q.HasPrefix(p) {
			return true
		}
	}
	return false
}

// one handles one host change.
func (rb *rebaser) one(de snapshot.DiffEntry) error {
	p := de.Path
	for _, r := range rb.removed {
		if p.HasPrefix(r) {
			return nil // gone with its directory
		}
	}
	_, both := rb.ours[p]
	hn, hostHas, err := rb.theirs.Lookup(p)
	if err != nil {
		return fmt.Errorf("read the host's side: %w", err)
	}
	sn, sessHas, err := rb.cur.Lookup(p)
	if err != nil {
		return fmt.Errorf("read the session: %w", err) // unreadable is not absent: taking the host's would overwrite
	}
	if !both {
		if de.Change == snapshot.Deleted && de.Kind == vfs.KindDir && rb.oursBeneath(p) {
			rb.conflict(api.RebaseConflict{Path: wirePath(p), Reason: "the host removed this directory, but the session changed files in it", Resolution: "the session's files are kept"})
			return nil
		}
		rb.taken(p)
		return rb.take(p, hn, hostHas, sn, sessHas)
	}
	// Both changed it.
	switch {
	case !hostHas && !sessHas, hostHas && sessHas && sameNode(hn, sn):
		rb.merged(p) // the same change
		return nil
	case !hostHas:
		if sn.IsDir() {
			rb.merged(p) // the session's directory stays; what is beneath is decided path by path
			return nil
		}
		rb.conflict(api.RebaseConflict{Path: wirePath(p), Reason: "the host removed it; the session changed it", Resolution: "the session's version is kept (apply writes it back)"})
		return nil
	case !sessHas:
		rb.conflict(api.RebaseConflict{Path: wirePath(p), Reason: "the session removed it; the host changed it", Resolution: "the host's version is back in the session: remove it again to apply the removal"})
		return rb.take(p, hn, true, sn, false)
	case hn.IsDir() && sn.IsDir():
		rb.merged(p) // modes: the session's stays
		return nil
	case hn.Kind != sn.Kind || !hn.IsFile():
		rb.conflict(api.RebaseConflict{Path: wirePath(p), Reason: fmt.Sprintf("both changed it (host: %s, session: %s)", hn.Kind, sn.Kind), Resolution: "the session's version is kept"})
		return nil
	}

	return rb.mergeFile(p, hn, sn)
}

// sameNode reports whether two nodes hold the same thing.
func sameNode(a, b vfs.Node) bool {
	if a.Kind != b.Kind {
		return false
	}
	switch {
	case a.IsDir():
		return true
	case a.IsSymlink():
		return a.Target == b.Target
	case a.IsFile():
		return a.Blob == b.Blob && !a.Blob.IsZero()
	}
	return a.Rdev == b.Rdev
}

// take makes the session's p what the host has (hn, or nothing).
func (rb *rebaser) take(p vfs.Path, hn vfs.Node, hostHas bool, sn vfs.Node, sessHas bool) error {
	if !hostHas {
		if sessHas {
			if sn.IsDir() {
				rb.removed = append(rb.removed, p)
			}
			return rb.b.Remove(p, vfs.RemoveOptions{Recursive: sn.IsDir()})
		}
		return nil
	}
	if sessHas && (sn.Kind != hn.Kind || sn.IsSymlink()) {
		if err := rb.b.Remove(p, vfs.RemoveOptions{Recursive: sn.IsDir()}); err != nil {
			return err
		}
	}
	switch {
	case hn.IsDir():
		return rb.b.Mkdir(p, vfs.MkdirOptions{Parents: true, Perm: hn.Mode.Perm()})
	case hn.IsSymlink():
		return rb.b.Symlink(hn.Target, p)
	case hn.IsFile():
		blob, err := rb.d.repo.Blobs().Open(rb.ctx, hn.Blob)
		if err != nil {
			return fmt.Errorf("rebase: the host's %s: %w", p, err)
		}
		defer blob.Close()
		return rb.b.Write(rb.ctx, p, io.NewSectionReader(blob, 0, blob.Size()), vfs.WriteOptions{CreateParents: true, Perm: hn.Mode.Perm()})
	}
	rb.conflict(api.RebaseConflict{Path: wirePath(p), Reason: fmt.Sprintf("the host has a %s here, which a session does not take", hn.Kind), Resolution: "left as the session has it"})
	return nil
}

// mergeFile merges a file both sides changed: line by line when all three
// versions are text, else a conflict keeping the session's.
func (rb *rebaser) mergeFile(p vfs.Path, hn, sn vfs.Node) error {
	bn, _, err := rb.base.Lookup(p)
	if err != nil {
		return fmt.Errorf("read the import base: %w", err)
	}
	read := func(n vfs.Node) ([]byte, bool, error) {
		if !n.IsFile() || n.Size == 0 {
			return nil, true, nil
		}
		if n.Size > rebaseMergeMax || n.Blob.IsZero() {
			return nil, false, nil
		}
		blob, err := rb.d.repo.Blobs().Open(rb.ctx, n.Blob)
		if err != nil {
			return nil, false, fmt.Errorf("rebase: read %s: %w", p, err)
		}
		defer blob.Close()
		b, err := io.ReadAll(io.NewSectionReader(blob, 0, blob.Size()))
		if err != nil {
			return nil, false, fmt.Errorf("rebase: read %s: %w", p, err)
		}
		return b, vfs.DetectEncoding(b) == vfs.EncodingUTF8, nil
	}
	var texts [3][]byte
	for i, n := range []vfs.Node{bn, sn, hn} {
		b, ok, err := read(n)
		if err != nil {
			return err
		}
		if !ok {
			rb.conflict(api.RebaseConflict{Path: wirePath(p), Reason: "both changed it, and it is not text (or larger than 8 MiB) to merge line by line", Resolution: "the session's version is kept; the host's is in import snapshot " + rb.rep.ImportSnapshot})
			return nil
		}
		texts[i] = b
	}
	m := textdiff.Merge(string(texts[0]), string(texts[1]), string(texts[2]), "session", "host")
	if m.Conflicts == 0 {
		rb.merged(p)
	} else {
		rb.conflict(api.RebaseConflict{Path: wirePath(p), Reason: "both changed the same lines", Markers: true, Conflicts: m.Conflicts,
			Resolution: "both versions are in the file between <<<<<<< session and >>>>>>> host markers: edit it in the session, then apply"})
	}
	if m.Text == string(texts[1]) {
		return nil
	}
	return rb.b.Write(rb.ctx, p, strings.NewReader(m.Text), vfs.WriteOptions{Perm: sn.Mode.Perm()})
}
