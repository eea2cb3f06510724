package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/vfsd/vfsd/tools/patch"
	"github.com/vfsd/vfsd/vfs"
)

// ApplyPatchParams are apply_patch's parameters.
type ApplyPatchParams struct {
	Patch   string `json:"patch,omitempty" jsonschema:"the patch, V4A format: *** Begin Patch, then *** Add File / *** Delete File / *** Update File (optionally *** Move to) sections with @@ context and -/+/space lines, then *** End Patch"`
	Input   string `json:"input,omitempty" jsonschema:"alias of patch (Codex's name)"`
	BlobRef string `json:"blob_ref,omitempty" jsonschema:"the patch as a blob reference, instead of inline"`
	DryRun  bool   `json:"dry_run,omitempty" jsonschema:"report what would change without changing anything"`
}

// ApplyPatchReceipt is apply_patch's receipt.
type ApplyPatchReceipt struct {
	Receipt
	FilesChanged int           `json:"files_changed"`
	ChangedPaths []string      `json:"changed_paths" jsonschema:"every path added, updated, deleted or moved (both ends), in patch order"`
	Ops          PatchOps      `json:"ops"`
	Files        []PatchedFile `json:"files"`
	DryRun       bool          `json:"dry_run"`
}

// PatchOps counts a patch's operations.
type PatchOps struct {
	Add    int `json:"add"`
	Update int `json:"update"`
	Delete int `json:"delete"`
	Move   int `json:"move"`
}

// PatchedFile is one file operation of a patch.
type PatchedFile struct {
	Op     string `json:"op" jsonschema:"add, update, delete or move"`
	Path   string `json:"path"`
	MoveTo string `json:"move_to,omitempty"`
	Diff   string `json:"diff"`
}

func (r *ApplyPatchReceipt) text() string {
	var b bytes.Buffer
	b.WriteString(r.SummaryText + "\n")
	for _, f := range r.Files {
		b.WriteString(f.Diff)
	}
	return b.String()
}

func init() {
	register("apply_patch", "Apply a V4A patch (*** Begin Patch ... *** End Patch) that adds, deletes, updates and moves files. Context lines locate each change (exactly, then ignoring whitespace and typographic punctuation). All or nothing: if any part fails, nothing changes. Returns per-file diffs.",
		true, nil, applyPatch)
}

func applyPatch(ctx context.Context, t *Toolset, p *ApplyPatchParams) (*ApplyPatchReceipt, error) {
	text, err := t.patchText(ctx, p)
	if err != nil {
		return nil, err
	}
	parsed, err := patch.Parse(text)
	if err != nil {
		return nil, patchFailure(err)
	}
	files := &sessionFiles{ctx: ctx, t: t, versions: map[vfs.Path]uint64{}, links: map[vfs.Path]bool{}}
	if err := files.canonicalize(parsed); err != nil {
		return nil, patchFailure(err)
	}
	res, err := patch.Plan(parsed, files)
	if err != nil {
		if files.err != nil {
			return nil, files.err // a policy or I/O failure, not the patch's fault
		}
		return nil, patchFailure(err)
	}
	r := &ApplyPatchReceipt{DryRun: p.DryRun, ChangedPaths: []string{}, Files: []PatchedFile{}}
	changed := map[string]bool{}
	note := func(d string) {
		if !changed[d] {
			changed[d] = true
			r.ChangedPaths = append(r.ChangedPaths, d)
		}
	}
	for _, c := range res.Changes {
		// The plan's paths are the canonical session paths canonicalize
		// put in the hunks, already in display form.
		f := PatchedFile{Op: string(c.Op), Diff: c.Diff, Path: c.Path}
		note(c.Path)
		switch {
		case c.MoveTo != "":
			f.Op, f.MoveTo = "move", c.MoveTo
			note(c.MoveTo)
			r.Ops.Move++
		case c.Op == patch.OpAdd:
			r.Ops.Add++
		case c.Op == patch.OpDelete:
			r.Ops.Delete++
		default:
			r.Ops.Update++
		}
		r.Files = append(r.Files, f)
	}
	r.FilesChanged = len(r.ChangedPaths)
	if limit := t.pol.Caps.MaxChangedFiles; limit > 0 && int64(r.FilesChanged) > limit {
		return nil, &Failure{Code: CodeTooLarge, Msg: fmt.Sprintf("the patch changes %d files, over this policy's limit of %d; split it", r.FilesChanged, limit),
			Details: &Details{Found: int64(r.FilesChanged), Limit: limit}}
	}
	if !p.DryRun {
		if err := t.commitPatch(ctx, files, res); err != nil {
			return nil, err
		}
	}
	r.SummaryText = fmt.Sprintf("Applied patch: %d files changed (%d added, %d updated, %d deleted, %d moved)",
		r.FilesChanged, r.Ops.Add, r.Ops.Update, r.Ops.Delete, r.Ops.Move)
	if p.DryRun {
		r.SummaryText = "Dry run: the patch applies; " + fmt.Sprintf("%d files would change (%d added, %d updated, %d deleted, %d moved)",
			r.FilesChanged, r.Ops.Add, r.Ops.Update, r.Ops.Delete, r.Ops.Move)
	}
	return r, nil
}

// patchText returns the patch from whichever parameter carries it.
func (t *Toolset) patchText(ctx context.Context, p *ApplyPatchParams) (string, error) {
	given := 0
	for _, s := range []string{p.Patch, p.Input, p.BlobRef} {
		if s != "" {
			given++
		}
	}
	if given != 1 {
		return "", fail(CodeInvalidInput, "give the patch exactly once, in patch (or its alias input) or blob_ref")
	}
	text := p.Patch + p.Input
	if p.BlobRef != "" {
		b, err := t.openBlobRef(ctx, p.BlobRef)
		if err != nil {
			return "", err
		}
		defer b.Close()
		if limit := t.pol.Caps.MaxPatchBytes; limit > 0 && b.Size() > limit {
			return "", &Failure{Code: CodeTooLarge, Msg: sizeMsg("the patch", b.Size(), limit), Details: &Details{Found: b.Size(), Limit: limit}}
		}
		data, err := io.ReadAll(io.NewSectionReader(b, 0, b.Size()))
		if err != nil {
			return "", err
		}
		text = string(data)
	}
	if limit := t.pol.Caps.MaxPatchBytes; limit > 0 && int64(len(text)) > limit {
		return "", &Failure{Code: CodeTooLarge, Msg: sizeMsg("the patch", int64(len(text)), limit) + "; split it into smaller patches",
			Details: &Details{Found: int64(len(text)), Limit: limit}}
	}
	return text, nil
}

// commitPatch applies a planned patch as one batch. Every path the plan
// read must still be at the version it read, so a concurrent change makes
// the patch fail with conflict instead of being overwritten.
func (t *Toolset) commitPatch(ctx context.Context, files *sessionFiles, res *patch.Result) error {
	b := t.s.NewBatch()
	defer b.Discard()
	touched := map[vfs.Path]bool{}
	expect := func(q vfs.Path) *uint64 {
		if touched[q] {
			return nil
		}
		touched[q] = true
		if v, ok := files.versions[q]; ok {
			return &v
		}
		return nil
	}
	write := func(q vfs.Path, content []byte) error {
		return b.Write(ctx, q, bytes.NewReader(content), vfs.WriteOptions{CreateParents: true, ExpectedVersion: expect(q)})
	}
	for _, c := range res.Changes {
		var err error
		from := canonical(c.Path)
		switch {
		case c.Op == patch.OpDelete:
			touched[from] = true
			err = b.Remove(from, vfs.RemoveOptions{Kind: vfs.KindFile})
		case c.MoveTo != "":
			to := canonical(c.MoveTo)
			if files.links[to] {
				// A move replaces a symlink at its destination, as
				// rename(2) does, instead of writing through it.
				delete(files.links, to)
				touched[to] = true
				err = b.Remove(to, vfs.RemoveOptions{Kind: vfs.KindSymlink})
			}
			if err == nil {
				err = write(to, c.New)
			}
			if err == nil {
				touched[from] = true
				err = b.Remove(from, vfs.RemoveOptions{Kind: vfs.KindFile})
			}
		default:
			err = write(from, c.New)
		}
		if err != nil {
			return err
		}
	}
	_, err := b.Commit(ctx)
	return err
}

// patchFailure turns the patch engine's errors into receipts.
func patchFailure(err error) error {
	var pe *patch.ParseError
	var re *patch.RejectError
	switch {
	case errors.As(err, &pe):
		return &Failure{Code: CodeParseError, Msg: fmt.Sprintf("the patch does not parse at line %d: %s; nothing was changed", pe.Line, pe.Msg),
			Details: &Details{Line: pe.Line}}
	case errors.As(err, &re):
		msg := fmt.Sprintf("the patch does not apply at line %d", re.Line)
		if re.Path != "" {
			msg += " (" + re.Path + ")"
		}
		return &Failure{Code: CodeReject, Msg: msg + ": " + re.Msg + "; nothing was changed",
			Details: &Details{Path: re.Path, Line: re.Line}}
	}
	return err
}

// sessionFiles lets the patch planner read the session, through the
// policy, recording each file's version. It is given canonical session
// paths only (canonicalize rewrites the hunks first), so two names of one
// file — through a symlink, "./", or a linked directory — are one path to
// the planner and to the commit, and neither follows a link the other
// does not.
type sessionFiles struct {
	ctx      context.Context
	t        *Toolset
	versions map[vfs.Path]uint64 // version read; 0 for a path that did not exist
	links    map[vfs.Path]bool   // move destinations that are symlinks, replaced by the move
	err      error               // the first failure that is not the patch's fault
}

// canonicalize rewrites every path of p into the canonical session path it
// names, in display form, checking the policy for writing it:
//   - an added or updated file is the file a symlink at its last segment
//     points to (writing through a link, as an editor does);
//   - a deleted file, a moved file and a move's destination are the path
//     itself: a symlink there is not followed. Deleting or moving a
//     symlink is refused (delete_file and rename handle links); a move's
//     destination that is a symlink is replaced by the moved file, as
//     rename(2) replaces it.
//
// Without this the planner, which keys files by the text of their paths,
// and the commit, which resolves links, disagreed about which paths are
// the same file: "Update x, Move to y" with y a link to x wrote x through
// y and then deleted x, losing the file.
func (f *sessionFiles) canonicalize(p *patch.Patch) error {
	for i := range p.Hunks {
		h := &p.Hunks[i]
		follow := followLast
		if h.Op == patch.OpDelete || h.MoveTo != "" {
			follow = noFollowLast
		}
		q, err := f.resolve(h.Path, follow)
		if err != nil {
			return err
		}
		n, ok, err := f.t.s.Tree().Lookup(q)
		if err != nil {
			return err
		}
		if ok && n.IsSymlink() {
			what := "deletes"
			if h.Op != patch.OpDelete {
				what = "moves"
			}
			return &patch.RejectError{Path: h.Path, Line: h.Line, Err: fs.ErrInvalid,
				Msg: fmt.Sprintf("%s is a symlink, and a patch %s only files; use delete_file or rename for a link, or name the file it points to (%s)", h.Path, what, n.Target)}
		}
		h.Path = q.Rel()
		if h.MoveTo == "" {
			continue
		}
		to, err := f.resolve(h.MoveTo, noFollowLast)
		if err != nil {
			return err
		}
		if n, ok, err := f.t.s.Tree().Lookup(to); err != nil {
			return err
		} else if ok && n.IsSymlink() {
			f.links[to] = true
		}
		h.MoveTo = to.Rel()
	}
	return nil
}

// resolve maps a path as written in the patch to a session path, checked
// for writing.
//
// A path that climbs out of the workspace is invalid_path, the answer every
// tool gives such a path (a policy that rejects ".." refuses it first, as
// it does in every tool).
func (f *sessionFiles) resolve(raw string, follow resolution) (vfs.Path, error) {
	if err := f.t.pol.CheckInput(raw); err != nil {
		return "", err
	}
	if err := patch.CheckPath(raw); err != nil {
		return "", fail(CodeInvalidPath, "patch path %q: %v; patch paths stay inside the workspace", raw, err)
	}
	return f.t.path("path", raw, vfs.AccessWrite, follow)
}

// canonical parses a path canonicalize produced (or an ancestor of one).
func canonical(d string) vfs.Path {
	if d == "." || d == "" {
		return vfs.Root
	}
	return vfs.Path(d)
}

// ReadFile implements patch.Files for canonical paths. It follows no
// symlink: a symlink here is a move's destination, which the move
// replaces; it reads as an existing file holding its target.
func (f *sessionFiles) ReadFile(d string) ([]byte, error) {
	q := canonical(d)
	if err := f.t.pol.Check(vfs.AccessRead, q); err != nil {
		f.err = err
		return nil, err
	}
	if q.IsRoot() {
		return nil, patch.ErrIsDir
	}
	n, ok, err := f.t.s.Tree().Lookup(q)
	switch {
	case err != nil:
		f.err = err
		return nil, err
	case !ok:
		if _, seen := f.versions[q]; !seen {
			f.versions[q] = 0
		}
		return nil, fs.ErrNotExist
	case n.IsDir():
		return nil, patch.ErrIsDir
	case n.IsSymlink():
		return []byte(n.Target), nil
	}
	data, n, err := f.t.s.ReadFile(f.ctx, q)
	if err != nil {
		f.err = err
		return nil, err
	}
	if _, seen := f.versions[q]; !seen {
		f.versions[q] = n.Version
	}
	return data, nil
}
