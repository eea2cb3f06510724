package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/vfsd/vfsd/tools/search"
	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/policy"
)

// clippedMark ends a grep line clipped at grepLineBytes.
const clippedMark = " [... line clipped]"

// Default result counts of grep and glob when the call gives none.
const (
	defaultGrepResults = 100
	defaultGlobResults = 1000
)

// GrepParams are grep's parameters.
type GrepParams struct {
	Pattern          string `json:"pattern" jsonschema:"regular expression (RE2 syntax), matched line by line"`
	Path             string `json:"path,omitempty" jsonschema:"file or directory to search (default: the workspace root)"`
	Glob             string `json:"glob,omitempty" jsonschema:"only files matching this glob, e.g. *.go or src/**/*.ts"`
	GlobFilter       string `json:"glob_filter,omitempty" jsonschema:"alias of glob"`
	CaseInsensitive  bool   `json:"case_insensitive,omitempty"`
	FixedStrings     bool   `json:"fixed_strings,omitempty" jsonschema:"take pattern as literal text, not a regular expression"`
	Context          int    `json:"context,omitempty" jsonschema:"lines of context before and after each match"`
	Before           int    `json:"before,omitempty" jsonschema:"lines of context before each match"`
	After            int    `json:"after,omitempty" jsonschema:"lines of context after each match"`
	Output           string `json:"output,omitempty" jsonschema:"content (default: matching lines as path:line:text), files_with_matches, or count"`
	MaxResults       int    `json:"max_results,omitempty" jsonschema:"at most this many lines (content) or files (default 100)"`
	RespectGitignore *bool  `json:"respect_gitignore,omitempty" jsonschema:"skip files .gitignore files exclude (default true)"`
}

// GrepReceipt is grep's receipt.
type GrepReceipt struct {
	Receipt
	Matches       []GrepMatch `json:"matches,omitempty" jsonschema:"matching (and context) lines, by path then line"`
	Files         []GrepFile  `json:"files,omitempty" jsonschema:"files with matches, by path (files_with_matches and count)"`
	Truncated     bool        `json:"truncated" jsonschema:"more results existed than max_results, or than fit in one result"`
	FilesSearched int         `json:"files_searched"`
	view          string
}

// GrepMatch is one line grep reports.
type GrepMatch struct {
	Path    string `json:"path"`
	Line    int    `json:"line"`
	Text    string `json:"text"`
	Context bool   `json:"context,omitempty" jsonschema:"a context line, not a match"`
}

// GrepFile is one file grep reports.
type GrepFile struct {
	Path  string `json:"path"`
	Count int    `json:"count,omitempty" jsonschema:"matching lines (count mode)"`
}

func (r *GrepReceipt) text() string { return r.view }

// GlobParams are glob's parameters.
type GlobParams struct {
	Pattern          string `json:"pattern" jsonschema:"glob (doublestar): * within a segment, ** across segments, {a,b}, [abc]; e.g. **/*.go"`
	Path             string `json:"path,omitempty" jsonschema:"directory the pattern is relative to (default: the workspace root)"`
	MaxResults       int    `json:"max_results,omitempty" jsonschema:"at most this many paths (default 1000)"`
	Sort             string `json:"sort,omitempty" jsonschema:"mtime (default: newest first, then by path) or path"`
	RespectGitignore *bool  `json:"respect_gitignore,omitempty" jsonschema:"skip files .gitignore files exclude (default true)"`
	IncludeDirs      bool   `json:"include_dirs,omitempty" jsonschema:"also list directories that match"`
}

// GlobReceipt is glob's receipt.
type GlobReceipt struct {
	Receipt
	Paths     []string `json:"paths" jsonschema:"matching paths, relative to the workspace root"`
	Truncated bool     `json:"truncated" jsonschema:"more paths existed than max_results, or than fit in one result"`
}

func (r *GlobReceipt) text() string {
	if len(r.Paths) == 0 {
		return r.SummaryText
	}
	s := strings.Join(r.Paths, "\n") + "\n"
	if r.Truncated {
		s += "[... more paths; narrow the pattern or path]\n"
	}
	return s
}

func init() {
	register("grep", "Search file contents with a regular expression (RE2). Reports matching lines as path:line:text (or files, or counts), sorted, skipping binary files and, by default, files .gitignore excludes.",
		false, map[string][]any{"output": {"content", "files_with_matches", "count"}}, grep)
	register("glob", "Find files by glob pattern (e.g. **/*.go), newest first by default.",
		false, map[string][]any{"sort": {"mtime", "path"}}, glob)
}

var grepOutputs = map[string]search.OutputMode{
	"": search.OutputContent, "content": search.OutputContent,
	"files_with_matches": search.OutputFilesWithMatches, "count": search.OutputCount,
}

var grepEngines = map[string]search.Engine{"": search.EngineAuto, "auto": search.EngineAuto, "rg": search.EngineRG, "native": search.EngineNative}

func grep(ctx context.Context, t *Toolset, p *GrepParams) (*GrepReceipt, error) {
	if p.Pattern == "" {
		return nil, fail(CodeInvalidInput, "pattern is required: a regular expression such as \"func \\w+\"")
	}
	if p.GlobFilter != "" {
		if p.Glob != "" {
			return nil, fail(CodeInvalidInput, "pass glob or its alias glob_filter, not both")
		}
		p.Glob = p.GlobFilter
	}
	out, ok := grepOutputs[p.Output]
	if !ok {
		return nil, fail(CodeInvalidInput, "output must be content, files_with_matches or count, not %q", p.Output)
	}
	engine, ok := grepEngines[t.opts.GrepEngine]
	if !ok {
		return nil, fail(CodeInternal, "unknown grep engine %q in the tools' configuration", t.opts.GrepEngine)
	}
	if p.Context < 0 || p.Before < 0 || p.After < 0 || p.MaxResults < 0 {
		return nil, fail(CodeInvalidInput, "context, before, after and max_results must not be negative")
	}
	if p.Path == "" {
		p.Path = "."
	}
	path, err := t.path("path", p.Path, vfs.AccessRead, followLast)
	if err != nil {
		return nil, err
	}
	limit := int(policy.Clamp(int64(orDefault(p.MaxResults, defaultGrepResults)), t.pol.Caps.MaxGrepResults))
	res, err := search.Grep(ctx, t.s, search.GrepOptions{
		Pattern: p.Pattern, Path: path, Glob: p.Glob, CaseInsensitive: p.CaseInsensitive, FixedStrings: p.FixedStrings,
		Before: max(p.Before, p.Context), After: max(p.After, p.Context), Output: out, MaxResults: limit,
		NoIgnore: p.RespectGitignore != nil && !*p.RespectGitignore, Hidden: t.hiddenFilter(), Engine: engine,
		MaxLineBytes: grepLineBytes + utf8.UTFMax, MaxFiles: t.pol.Caps.MaxScannedFiles, MaxBytes: t.pol.Caps.MaxScannedBytes,
	})
	if err != nil {
		return nil, searchFailure(err)
	}
	r := &GrepReceipt{Truncated: res.Truncated, FilesSearched: res.FilesSearched}
	// Results stop at the last one that fits the inline limit.
	full := false
	room := t.listBudget(r)
	var b strings.Builder
	for _, m := range res.Matches {
		gm := GrepMatch{Path: m.Path.Rel(), Line: m.Line, Text: m.Text, Context: m.Context}
		if len(gm.Text) > grepLineBytes {
			// Engines cut at grepLineBytes+UTFMax: longer means clipped.
			gm.Text = clipText(gm.Text, grepLineBytes) + clippedMark
		}
		if !room.take(gm) {
			full = true
			break
		}
		r.Matches = append(r.Matches, gm)
		sep := ":"
		if m.Context {
			sep = "-"
		}
		fmt.Fprintf(&b, "%s%s%d%s%s\n", gm.Path, sep, gm.Line, sep, gm.Text)
	}
	for _, f := range res.Files {
		gf := GrepFile{Path: f.Path.Rel(), Count: f.Count}
		if !room.take(gf) {
			full = true
			break
		}
		r.Files = append(r.Files, gf)
		if out == search.OutputCount {
			fmt.Fprintf(&b, "%s:%d\n", gf.Path, gf.Count)
		} else {
			fmt.Fprintf(&b, "%s\n", gf.Path)
		}
	}
	r.Truncated = r.Truncated || full
	found := len(r.Matches)
	what := "matching lines"
	if out != search.OutputContent {
		found, what = len(r.Files), "files"
	}
	if out == search.OutputContent {
		found = 0
		for _, m := range r.Matches {
			if !m.Context {
				found++
			}
		}
	}
	r.SummaryText = fmt.Sprintf("Found %d %s in %d files searched", found, what, res.FilesSearched)
	switch {
	case full:
		r.SummaryText += fmt.Sprintf(" (truncated at %s, the most one result returns; narrow the pattern, path or glob, or use output=files_with_matches or count)", sizeWords(t.opts.InlineBytes))
	case r.Truncated:
		r.SummaryText += fmt.Sprintf(" (truncated at %d; narrow the pattern, path or glob, or raise max_results up to %d)", limit, max(t.pol.Caps.MaxGrepResults, int64(limit)))
	}
	if r.Truncated {
		b.WriteString("[... more results]\n")
	}
	if b.Len() == 0 {
		b.WriteString(r.SummaryText + "\n")
	}
	r.view = b.String()
	return r, nil
}

func glob(ctx context.Context, t *Toolset, p *GlobParams) (*GlobReceipt, error) {
	if p.Pattern == "" {
		return nil, fail(CodeInvalidInput, "pattern is required, such as \"**/*.go\"")
	}
	var sortBy search.Sort
	switch p.Sort {
	case "", "mtime":
		sortBy = search.SortByMtime
	case "path":
		sortBy = search.SortByPath
	default:
		return nil, fail(CodeInvalidInput, "sort must be mtime or path, not %q", p.Sort)
	}
	if p.MaxResults < 0 {
		return nil, fail(CodeInvalidInput, "max_results must not be negative")
	}
	if p.Path == "" {
		p.Path = "."
	}
	base, err := t.path("path", p.Path, vfs.AccessRead, followLast)
	if err != nil {
		return nil, err
	}
	limit := int(policy.Clamp(int64(orDefault(p.MaxResults, defaultGlobResults)), t.pol.Caps.MaxGlobResults))
	res, err := search.Glob(ctx, t.s.Tree(), search.GlobOptions{
		Pattern: p.Pattern, Base: base, MaxResults: limit, Sort: sortBy,
		NoIgnore: p.RespectGitignore != nil && !*p.RespectGitignore, Hidden: t.hiddenFilter(),
		ReadFile: func(q vfs.Path) ([]byte, error) { data, _, err := t.s.ReadFile(ctx, q); return data, err },
		Dirs:     p.IncludeDirs,
	})
	if err != nil {
		return nil, searchFailure(err)
	}
	r := &GlobReceipt{Paths: []string{}, Truncated: res.Truncated}
	room := t.listBudget(r)
	full := false
	for _, e := range res.Entries {
		q := e.Path.Rel()
		if !room.take(q) {
			full = true
			break
		}
		r.Paths = append(r.Paths, q)
	}
	r.Truncated = r.Truncated || full
	r.SummaryText = fmt.Sprintf("Found %d paths matching %s", len(r.Paths), clipText(p.Pattern, 200))
	switch {
	case full:
		r.SummaryText += fmt.Sprintf(" (truncated at %s, the most one result returns; narrow the pattern or path)", sizeWords(t.opts.InlineBytes))
	case r.Truncated:
		r.SummaryText += fmt.Sprintf(" (truncated at %d; narrow the pattern or path, or raise max_results)", limit)
	}
	return r, nil
}

// hiddenFilter is the policy's filter for walks: what a read would refuse.
func (t *Toolset) hiddenFilter() func(vfs.Path, vfs.Node) bool {
	return func(p vfs.Path, _ vfs.Node) bool { return t.pol.Hidden(p) }
}

// searchFailure maps the search package's pattern errors.
func searchFailure(err error) error {
	var le *search.ScanLimitError
	if errors.As(err, &le) {
		return &Failure{Code: CodeTooLarge, Msg: le.Error(), Details: &Details{Found: le.Found, Limit: le.Limit}}
	}
	var pe *search.PatternError
	if errors.As(err, &pe) {
		code := CodeInvalidPattern
		if pe.Kind == search.KindInvalidRegex {
			code = CodeInvalidRegex
		}
		return fail(code, "%s; fix the pattern and try again", pe.Error())
	}
	return err
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}
