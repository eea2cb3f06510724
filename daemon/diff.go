package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
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
func (d *Daemon) sessionSource(ctx context.Context, p *principal, e *entry, ref string) (snapshot.Source, string, error) {
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

func (d *Daemon) handleSessionDiff(w http.ResponseWriter, r *http.Request) error {
	e, err := d.lookup(r.PathValue("id"))
	if err != nil {
		return err
	}
	q := r.URL.Query()
	from, to := q.Get("from"), q.Get("to")
	if from == "" {
		from = "base"
	}
	if to == "" {
		to = "live"
	}
	p := principalOf(r.Context())
	a, aName, err := d.sessionSource(r.Context(), p, e, from)
	if err != nil {
		return err
	}
	b, bName, err := d.sessionSource(r.Context(), p, e, to)
	if err != nil {
		return err
	}
	return d.writeDiff(w, r, a, b, aName, bName)
}

func (d *Daemon) handleDiff(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	a, aName, err := d.globalSource(r.Context(), q.Get("from"))
	if err != nil {
		return err
	}
	b, bName, err := d.globalSource(r.Context(), q.Get("to"))
	if err != nil {
		return err
	}
	return d.writeDiff(w, r, a, b, aName, bName)
}

// writeDiff diffs a against b and sends the result: JSON by default (with
// unified text per file when text=true), or one unified diff as text with
// format=unified: git's format, with symlink targets, modes and quoted
// paths (snapshot.Diff.WriteUnified).
func (d *Daemon) writeDiff(w http.ResponseWriter, r *http.Request, a, b snapshot.Source, aName, bName string) error {
	q := r.URL.Query()
	format := q.Get("format")
	if format != "" && format != "json" && format != "unified" {
		return apiErr(api.CodeInvalidInput, "format %q: use json or unified", format)
	}
	text := format == "unified"
	if v := q.Get("text"); v != "" {
		t, err := strconv.ParseBool(v)
		if err != nil {
			return apiErr(api.CodeInvalidInput, "text=%q: use true or false", v)
		}
		text = text || t
	}
	diff, err := d.repo.Diff(r.Context(), a, b, snapshot.DiffOptions{Text: text})
	if err != nil {
		return err
	}
	if format == "unified" {
		w.Header().Set("Content-Type", "text/x-diff; charset=utf-8")
		return diff.WriteUnified(w)
	}
	out := api.Diff{From: aName, To: bName, Added: diff.Added, Modified: diff.Modified, Deleted: diff.Deleted,
		Entries: make([]api.DiffEntry, len(diff.Entries))}
	for i, e := range diff.Entries {
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
	writeJSON(w, http.StatusOK, out)
	return nil
}

// wirePath renders a session path as the API and the tools show paths:
// relative to the session root, which is ".".
func wirePath(p vfs.Path) string {
	if p.IsRoot() {
		return "."
	}
	return string(p)
}
