package daemon

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// emptySnapshot returns a snapshot of the empty tree, the base of sessions
// that started empty, for diffs against their base.
func (d *Daemon) emptySnapshot(ctx context.Context) (string, error) {
	d.emptyMu.Lock()
	defer d.emptyMu.Unlock()
	if d.emptySnap != "" {
		if _, err := d.repo.Get(ctx, d.emptySnap); errors.Is(err, vfs.ErrNotFound) {
			d.emptySnap = "" // deleted meanwhile: make it again
		}
	}
	if d.emptySnap == "" {
		snap, err := d.repo.CommitTree(ctx, vfs.EmptyTree(time.Now().UnixMilli()), "empty")
		if err != nil {
			return "", fmt.Errorf("snapshot the empty tree: %w", err)
		}
		d.emptySnap = snap.ID
	}
	return d.emptySnap, nil
}

// sessionSource resolves a diff side of a session route: "base" (the
// snapshot the session started from), "import", "live" (its current
// state), or a snapshot of the session.
func (d *Daemon) sessionSource(ctx context.Context, p Caller, e *entry, ref string) (snapshot.Source, string, error) {
	e.mu.Lock()
	base, imp := e.meta.Base, e.meta.Import
	e.mu.Unlock()
	switch ref {
	case "live":
		if err := d.settle(ctx, e); err != nil {
			return snapshot.Source{}, "", err
		}
		return snapshot.Source{Session: e.s}, "live", nil
	case "base", "import":
		id := base
		if ref == "import" {
			if imp == "" {
				return snapshot.Source{}, "", apiErr(api.CodeInvalidInput, "session %s was not staged from host folders: it has no import snapshot", e.id)
			}
			id = imp
		}
		if id == "" {
			empty, err := d.emptySnapshot(ctx)
			return snapshot.Source{Snapshot: empty}, ref, err
		}
		return snapshot.Source{Snapshot: id}, id, nil
	}
	snap, err := d.snapshotFor(ctx, p, e, ref)
	if err != nil {
		return snapshot.Source{}, "", err
	}
	return snapshot.Source{Snapshot: snap.ID}, snap.ID, nil
}

// globalSource resolves a diff side of /v1/diff: "session:ID" (that
// session's live state) or a snapshot.
func (d *Daemon) globalSource(ctx context.Context, ref string) (snapshot.Source, string, error) {
	if id, ok := strings.CutPrefix(ref, "session:"); ok {
		e, err := d.lookup(id)
		if err != nil {
			return snapshot.Source{}, "", err
		}
		return snapshot.Source{Session: e.s}, ref, nil
	}
	if ref == "" {
		return snapshot.Source{}, "", apiErr(api.CodeInvalidInput, "from and to are required: a snapshot ID (or prefix), or session:ID for a live session")
	}
	snap, err := d.snapshotByRef(ctx, ref)
	if err != nil {
		return snapshot.Source{}, "", err
	}
	return snapshot.Source{Snapshot: snap.ID}, snap.ID, nil
}

// Diff is a diff between two states, with the names its sides were given.
type Diff struct {
	*snapshot.Diff
	// From and To name the sides: a snapshot ID, "live", "base",
	// "import", or "session:ID".
	From, To string
}

// SessionDiff diffs two states of session id: from and to are "base" (the
// snapshot it started from; the default for from), "import", "live" (its
// current state; the default for to), or a snapshot the caller reaches.
// text adds each file's unified diff.
func (d *Daemon) SessionDiff(ctx context.Context, id, from, to string, text bool) (*Diff, error) {
	e, err := d.lookup(id)
	if err != nil {
		return nil, err
	}
	if from == "" {
		from = "base"
	}
	if to == "" {
		to = "live"
	}
	p := callerOf(ctx)
	a, aName, err := d.sessionSource(ctx, p, e, from)
	if err != nil {
		return nil, err
	}
	b, bName, err := d.sessionSource(ctx, p, e, to)
	if err != nil {
		return nil, err
	}
	return d.diff(ctx, a, b, aName, bName, text)
}

// DiffStates diffs two states anywhere in the daemon: from and to are a
// snapshot (an ID or a unique prefix) or "session:ID", a session's live
// state. text adds each file's unified diff.
func (d *Daemon) DiffStates(ctx context.Context, from, to string, text bool) (*Diff, error) {
	a, aName, err := d.globalSource(ctx, from)
	if err != nil {
		return nil, err
	}
	b, bName, err := d.globalSource(ctx, to)
	if err != nil {
		return nil, err
	}
	return d.diff(ctx, a, b, aName, bName, text)
}

func (d *Daemon) diff(ctx context.Context, a, b snapshot.Source, aName, bName string, text bool) (*Diff, error) {
	diff, err := d.repo.Diff(ctx, a, b, snapshot.DiffOptions{Text: text})
	if err != nil {
		return nil, err
	}
	return &Diff{Diff: diff, From: aName, To: bName}, nil
}

// View is the diff on the wire.
func (df *Diff) View() *api.Diff {
	out := &api.Diff{From: df.From, To: df.To, Added: df.Added, Modified: df.Modified, Deleted: df.Deleted,
		Entries: make([]api.DiffEntry, len(df.Entries))}
	for i, e := range df.Entries {
		de := api.DiffEntry{Path: wirePath(e.Path), Change: string(e.Change), Kind: e.Kind.String(),
			OldSize: e.OldSize, NewSize: e.NewSize, OldMode: e.OldMode, NewMode: e.NewMode, Text: e.Text, Binary: e.Binary,
			OldTarget: e.OldTarget, NewTarget: e.NewTarget}
		if e.OldKind != 0 {
			de.OldKind = e.OldKind.String()
		}
		if o := e.OldOwner; o != nil {
			de.OldUid, de.OldGid = &o.Uid, &o.Gid
		}
		if o := e.NewOwner; o != nil {
			de.NewUid, de.NewGid = &o.Uid, &o.Gid
		}
		for _, x := range e.Xattrs {
			de.Xattrs = append(de.Xattrs, api.XattrChange{Name: x.Name, Change: string(x.Change)})
		}
		de.OldRdev, de.NewRdev = e.OldRdev, e.NewRdev
		if e.LinkTo != "" {
			de.LinkTo = wirePath(e.LinkTo)
		}
		out.Entries[i] = de
	}
	return out
}

// wirePath renders a session path as the API and the tools show paths:
// relative to the session root, which is ".".
func wirePath(p vfs.Path) string {
	if p.IsRoot() {
		return "."
	}
	return string(p)
}
