package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/vfsd/vfsd/internal/textdiff"
	"github.com/vfsd/vfsd/tools/edit"
	"github.com/vfsd/vfsd/vfs"
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
	Lines        []int  `json:"lines" jsonschema:"1-based start line of each replacement"`
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
	old, n, err := t.readText(ctx, path, "edit")
	if err != nil {
		return nil, err
	}
	if p.ExpectedVersion != nil && *p.ExpectedVersion != n.Version {
		return nil, fail(CodeConflict, "%s is at version %d, not %d; read it again", displayPath(path), n.Version, *p.ExpectedVersion)
	}
	res, err := edit.Apply(old, edits)
	if err != nil {
		return nil, editFailure(displayPath(path), len(edits) > 1, err)
	}
	if limit := t.pol.Caps.MaxEditReplacements; limit > 0 && int64(res.Replacements) > limit {
		return nil, &Failure{Code: CodeTooLarge, Msg: fmt.Sprintf("the edit would make %d replacements, over this policy's limit of %d; narrow old_string", res.Replacements, limit),
			Details: &Details{Found: int64(res.Replacements), Limit: limit}}
	}
	r := &EditFileReceipt{Path: displayPath(path), Replacements: res.Replacements, DryRun: p.DryRun, Version: n.Version,
		Diff: textdiff.Unified("a/"+displayPath(path), "b/"+displayPath(path), old, res.Content)}
	for _, a := range res.Edits {
		r.Edits = append(r.Edits, EditApplied{Match: a.Pass, Lines: a.Lines, Replacements: a.Count})
	}
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

// edits returns the edits the parameters ask for.
func (p *EditFileParams) edits() ([]edit.Edit, error) {
	single := p.OldString != nil || p.NewString != nil
	switch {
	case single && len(p.Edits) > 0:
		return nil, fail(CodeInvalidInput, "give old_string/new_string or edits, not both")
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
	case errors.As(err, &ambiguous):
		w, idx := which(ambiguous.Index)
		return &Failure{Code: CodeAmbiguous,
			Msg:     fmt.Sprintf("%sold_string matches %d places in %s (lines %s); add surrounding lines to make it unique, or set replace_all", w, len(ambiguous.Lines), path, joinInts(ambiguous.Lines)),
			Details: &Details{Path: path, CandidateLines: ambiguous.Lines, EditIndex: idx}}
	case errors.As(err, &notFound):
		w, idx := which(notFound.Index)
		d := &Details{Path: path, EditIndex: idx}
		msg := fmt.Sprintf("%sold_string was not found in %s", w, path)
		if c := notFound.Closest; c != nil {
			d.Closest = &Region{StartLine: c.StartLine, EndLine: c.EndLine, Text: c.Text, Similarity: roundTo(c.Similarity, 3)}
			msg += fmt.Sprintf("; the most similar text is at lines %d-%d (shown in closest); read the file and copy old_string exactly", c.StartLine, c.EndLine)
		} else {
			msg += "; the file is empty"
		}
		return &Failure{Code: CodeNotFound, Msg: msg, Details: d}
	}
	return err
}

// readText reads a text file for a tool that changes text.
func (t *Toolset) readText(ctx context.Context, path vfs.Path, verb string) (string, vfs.Node, error) {
	n, err := t.s.Stat(ctx, path)
	if err != nil {
		return "", n, err
	}
	if n.IsDir() {
		return "", n, fail(CodeIsDirectory, "%s is a directory; %s a file in it", displayPath(path), verb)
	}
	data, n, err := t.s.ReadFile(ctx, path)
	if err != nil {
		return "", n, err
	}
	if isBinary(n, data) {
		return "", n, fail(CodeInvalidInput, "%s is binary; %s works on text files (use write_file to replace it)", displayPath(path), verb)
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
