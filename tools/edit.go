package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/vfsd/vfsd/internal/textdiff"
	"github.com/vfsd/vfsd/tools/edit"
	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/policy"
)

// EditFileParams are edit_file's parameters: one replacement (old_string,
// new_string, replace_all) or several in edits, applied in order, all or
// nothing.
type EditFileParams struct {
	Path            string     `json:"path" jsonschema:"file to edit, relative to the workspace root"`
	OldString       *string    `json:"old_string,omitempty" jsonschema:"exact text to replace, with enough context to be unique; whitespace and typographic quotes/dashes are forgiven when nothing matches exactly"`
	NewString       *string    `json:"new_string,omitempty" jsonschema:"replacement text; empty deletes old_string"`
	ReplaceAll      bool       `json:"replace_all,omitempty" jsonschema:"replace every occurrence instead of requiring exactly one"`
	Edits           []EditPair `json:"edits,omitempty" jsonschema:"several replacements applied in order, all or nothing (instead of old_string/new_string)"`
	DryRun          bool       `json:"dry_run,omitempty" jsonschema:"report the diff without changing the file"`
	ExpectedVersion *uint64    `json:"expected_version,omitempty" jsonschema:"fail with conflict unless the file is at this version"`
}

// EditPair is one replacement of a multi-edit.
type EditPair struct {
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all,omitempty"`
}

// EditFileReceipt is edit_file's receipt.
type EditFileReceipt struct {
	Receipt
	Path         string        `json:"path"`
	Replacements int           `json:"replacements" jsonschema:"replacements made over all edits"`
	Edits        []EditApplied `json:"edits" jsonschema:"how each edit matched"`
	Diff         string        `json:"diff" jsonschema:"unified diff of the change"`
	DryRun       bool          `json:"dry_run"`
	Version      uint64        `json:"version" jsonschema:"the file's version afterwards (unchanged on a dry run)"`
}

// EditApplied says how one edit matched.
type EditApplied struct {
	Match        string `json:"match" jsonschema:"exact, trim_end, trim or unicode_punctuation"`
	Lines        []int  `json:"lines" jsonschema:"1-based start line of each replacement (the first 100)"`
	Replacements int    `json:"replacements"`
}

func (r *EditFileReceipt) text() string { return r.SummaryText + "\n" + r.Diff }

func init() {
	register("edit_file", "Replace text in a file: old_string must match exactly one place (or set replace_all); if nothing matches exactly, whitespace-insensitive and quote/dash-insensitive matches are tried, re-indented like the file. Several replacements go in edits, all or nothing. Returns a unified diff.",
		true, nil, editFile)
}

func editFile(ctx context.Context, t *Toolset, p *EditFileParams) (*EditFileReceipt, error) {
	edits, err := p.edits()
	if err != nil {
		return nil, err
	}
	path, err := t.path("path", p.Path, vfs.AccessWrite, followLast)
	if err != nil {
		return nil, err
	}
	lim := t.editLimits()
	old, n, err := t.readText(ctx, path, "edit", int64(lim.MaxBytes))
	if err != nil {
		return nil, err
	}
	if p.ExpectedVersion != nil && *p.ExpectedVersion != n.Version {
		return nil, fail(CodeConflict, "%s is at version %d, not %d; read it again", path.Rel(), n.Version, *p.ExpectedVersion)
	}
	res, err := edit.ApplyLimited(old, edits, lim)
	if err != nil {
		return nil, editFailure(path.Rel(), len(edits) > 1, err)
	}
	r := &EditFileReceipt{Path: path.Rel(), Replacements: res.Replacements, DryRun: p.DryRun, Version: n.Version}
	for _, a := range res.Edits {
		lines := a.Lines
		if len(lines) > maxReceiptLines {
			lines = lines[:maxReceiptLines]
		}
		r.Edits = append(r.Edits, EditApplied{Match: a.Pass, Lines: lines, Replacements: a.Count})
	}
	if t.listBudget(r).left < 0 {
		// Many edits: keep the first start line of each.
		for i := range r.Edits {
			r.Edits[i].Lines = r.Edits[i].Lines[:min(len(r.Edits[i].Lines), 1)]
		}
	}
	r.Diff = t.boundedDiff(r, path.Rel(), old, res.Content)
	if !p.DryRun {
		v := n.Version
		w, err := t.s.WriteFile(ctx, path, strings.NewReader(res.Content), vfs.WriteOptions{Mode: vfs.WriteOverwrite, ExpectedVersion: &v})
		if err != nil {
			return nil, err
		}
		r.Version = w.Node.Version
	}
	noun := "replacements"
	if res.Replacements == 1 {
		noun = "replacement"
	}
	r.SummaryText = fmt.Sprintf("Updated %s (%d %s)", r.Path, res.Replacements, noun)
	if p.DryRun {
		r.SummaryText = fmt.Sprintf("Would update %s (%d %s); dry run, nothing changed", r.Path, res.Replacements, noun)
	}
	return r, nil
}

// maxClosestBytes caps the closest region a not_found receipt shows.
const maxClosestBytes = 8 << 10

// maxEdits caps the edits of one call.
const maxEdits = 1000

// maxReceiptLines caps the start lines an edit's receipt lists per edit;
// replacements counts them all.
const maxReceiptLines = 100

// editLimits are the bounds of one edit_file call: the policy's write and
// replacement caps, within the ceilings that hold under every policy.
func (t *Toolset) editLimits() edit.Limits {
	return edit.Limits{
		MaxBytes:        int(policy.Clamp(MaxEditBytes, t.pol.Caps.MaxWriteBytes)),
		MaxReplacements: int(policy.Clamp(MaxEditReplacements, t.pol.Caps.MaxEditReplacements)),
	}
}

// maxDiffBytes bounds the changed region (both sides) an edit's receipt
// diffs; the diff's working set is tens of bytes per byte diffed.
const maxDiffBytes = 1 << 20

// boundedDiff is the receipt's diff of old to new: computed over the
// changed region only, omitted past maxDiffBytes, and cut to what fits the
// inline limit beside the rest of receipt r.
func (t *Toolset) boundedDiff(r *EditFileReceipt, path, old, new string) string {
	d, ok := textdiff.Bounded("a/"+path, "b/"+path, old, new, maxDiffBytes)
	if !ok {
		return fmt.Sprintf("[diff omitted: the change spans more than %s; read the file to see it]\n", sizeWords(maxDiffBytes))
	}
	room := t.listBudget(r).left
	if jsonSize(d) <= room {
		return d
	}
	// Cut at a line end, leaving room for JSON escapes and the note.
	cut := clipText(d, max(room/2, 0))
	if i := strings.LastIndexByte(cut, '\n'); i >= 0 {
		cut = cut[:i+1]
	}
	return cut + fmt.Sprintf("[... diff cut at %s of %s; read the file to see the rest]\n", sizeWords(int64(len(cut))), sizeWords(int64(len(d))))
}

// edits returns the edits the parameters ask for.
func (p *EditFileParams) edits() ([]edit.Edit, error) {
	single := p.OldString != nil || p.NewString != nil
	switch {
	case single && len(p.Edits) > 0:
		return nil, fail(CodeInvalidInput, "give old_string/new_string or edits, not both")
	case len(p.Edits) > maxEdits:
		return nil, &Failure{Code: CodeTooLarge, Msg: fmt.Sprintf("%d edits in one call, over the limit of %d; split them over several calls", len(p.Edits), maxEdits),
			Details: &Details{Found: int64(len(p.Edits)), Limit: maxEdits}}
	case len(p.Edits) > 0:
		out := make([]edit.Edit, len(p.Edits))
		for i, e := range p.Edits {
			out[i] = edit.Edit{Old: e.OldString, New: e.NewString, ReplaceAll: e.ReplaceAll}
		}
		return out, nil
	case p.OldString == nil || *p.OldString == "":
		return nil, fail(CodeEmptyOldString, "old_string is empty or missing; give the exact text to replace (use write_file to create or overwrite a file)")
	case p.NewString == nil:
		return nil, fail(CodeInvalidInput, "new_string is required (an empty string deletes old_string)")
	}
	return []edit.Edit{{Old: *p.OldString, New: *p.NewString, ReplaceAll: p.ReplaceAll}}, nil
}

// editFailure turns the edit engine's errors into receipts.
func editFailure(path string, multi bool, err error) error {
	var (
		empty     *edit.EmptyOldError
		noChange  *edit.NoChangeError
		notFound  *edit.NotFoundError
		ambiguous *edit.AmbiguousError
		tooLarge  *edit.TooLargeError
		tooMany   *edit.TooManyError
	)
	which := func(i int) (string, *int) {
		if !multi {
			return "", nil
		}
		return fmt.Sprintf("edit %d: ", i), &i
	}
	switch {
	case errors.As(err, &empty):
		w, idx := which(empty.Index)
		return &Failure{Code: CodeEmptyOldString, Msg: w + "old_string is empty; give the exact text to replace (use write_file to create or overwrite a file)", Details: &Details{EditIndex: idx}}
	case errors.As(err, &noChange):
		w, idx := which(noChange.Index)
		return &Failure{Code: CodeInvalidInput, Msg: w + "old_string and new_string are identical; nothing would change", Details: &Details{EditIndex: idx}}
	case errors.As(err, &tooLarge):
		w, idx := which(tooLarge.Index)
		return &Failure{Code: CodeTooLarge,
			Msg:     fmt.Sprintf("%sthe edit would make %s %s, over the limit of %s (%d bytes) an edit may build; make smaller edits, or write the file with write_file", w, path, sizeWords(tooLarge.Size), sizeWords(tooLarge.Limit), tooLarge.Limit),
			Details: &Details{Path: path, Found: tooLarge.Size, Limit: tooLarge.Limit, EditIndex: idx}}
	case errors.As(err, &tooMany):
		w, idx := which(tooMany.Index)
		return &Failure{Code: CodeTooLarge,
			Msg:     fmt.Sprintf("%sold_string matches %d places in %s, over the limit of %d replacements left for this call; narrow old_string, or split the edit", w, tooMany.Count, path, tooMany.Limit),
			Details: &Details{Path: path, Found: int64(tooMany.Count), Limit: int64(tooMany.Limit), EditIndex: idx}}
	case errors.As(err, &ambiguous):
		w, idx := which(ambiguous.Index)
		listed := joinInts(ambiguous.Lines[:min(len(ambiguous.Lines), 20)])
		if ambiguous.Total() > 20 {
			listed += fmt.Sprintf(", ... (%d more)", ambiguous.Total()-20)
		}
		return &Failure{Code: CodeAmbiguous,
			Msg:     fmt.Sprintf("%sold_string matches %d places in %s (lines %s); add surrounding lines to make it unique, or set replace_all", w, ambiguous.Total(), path, listed),
			Details: &Details{Path: path, CandidateLines: ambiguous.Lines, Found: int64(ambiguous.Total()), EditIndex: idx}}
	case errors.As(err, &notFound):
		w, idx := which(notFound.Index)
		d := &Details{Path: path, EditIndex: idx}
		msg := fmt.Sprintf("%sold_string was not found in %s", w, path)
		if notFound.ExactOnly {
			msg += "; the file has too many lines to try whitespace-insensitive matches, so copy old_string exactly from read_file"
		} else if c := notFound.Closest; c != nil {
			text := c.Text
			if len(text) > maxClosestBytes {
				// As long as old_string in lines, not bytes: keep it small.
				text = clipText(text, maxClosestBytes) + "\n[... region clipped; read the file at these lines]"
			}
			d.Closest = &Region{StartLine: c.StartLine, EndLine: c.EndLine, Text: text, Similarity: roundTo(c.Similarity, 3)}
			msg += fmt.Sprintf("; the most similar text is at lines %d-%d (shown in closest); read the file and copy old_string exactly", c.StartLine, c.EndLine)
		} else {
			msg += "; the file is empty"
		}
		return &Failure{Code: CodeNotFound, Msg: msg, Details: d}
	}
	return err
}

// readText reads a text file for a tool that changes text, refusing one
// larger than limit (0: unbounded) before reading it.
func (t *Toolset) readText(ctx context.Context, path vfs.Path, verb string, limit int64) (string, vfs.Node, error) {
	n, err := t.s.Stat(ctx, path)
	if err != nil {
		return "", n, err
	}
	if n.IsDir() {
		return "", n, fail(CodeIsDirectory, "%s is a directory; %s a file in it", path.Rel(), verb)
	}
	if limit > 0 && n.Size > limit {
		return "", n, &Failure{Code: CodeTooLarge,
			Msg:     sizeMsg(path.Rel(), n.Size, limit) + " for " + verb + "_file, which holds the file in memory; write it with write_file (blob_ref), or change it through the mount",
			Details: &Details{Path: path.Rel(), Found: n.Size, Limit: limit}}
	}
	data, n, err := t.s.ReadFile(ctx, path)
	if err != nil {
		return "", n, err
	}
	if isBinary(n, data) {
		return "", n, fail(CodeInvalidInput, "%s is binary; %s works on text files (use write_file to replace it)", path.Rel(), verb)
	}
	return string(data), n, nil
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

func roundTo(f float64, digits int) float64 {
	p := 1.0
	for range digits {
		p *= 10
	}
	return float64(int64(f*p+0.5)) / p
}
