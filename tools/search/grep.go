package search

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/vfsd/vfsd/vfs"
)

// Engine is what searches file contents.
type Engine int

// Engines.
const (
	// EngineAuto runs ripgrep when rg is on PATH, the native engine
	// otherwise.
	EngineAuto Engine = iota
	// EngineRG runs ripgrep (rg) on the files' local paths.
	EngineRG
	// EngineNative searches with Go's regexp, reading through the session.
	EngineNative
)

// String returns "auto", "rg" or "native".
func (e Engine) String() string {
	switch e {
	case EngineRG:
		return "rg"
	case EngineNative:
		return "native"
	}
	return "auto"
}

// OutputMode is what Grep reports.
type OutputMode int

// Output modes.
const (
	// OutputContent reports matching lines, with context lines if asked.
	OutputContent OutputMode = iota
	// OutputFilesWithMatches reports the files that have a match.
	OutputFilesWithMatches
	// OutputCount reports, per file with a match, how many lines match.
	OutputCount
)

// String returns "content", "files_with_matches" or "count".
func (m OutputMode) String() string {
	switch m {
	case OutputFilesWithMatches:
		return "files_with_matches"
	case OutputCount:
		return "count"
	}
	return "content"
}

// DefaultMaxLineBytes is where Grep cuts long lines by default.
const DefaultMaxLineBytes = 2000

// GrepOptions configure Grep.
type GrepOptions struct {
	// Pattern is a regular expression in RE2 syntax (or a literal string
	// with FixedStrings), matched against each line. It is validated before
	// any I/O; see the package documentation for how it is interpreted.
	Pattern string
	// Path is the file or directory to search; the root when empty.
	Path vfs.Path
	// Glob, if not empty, searches only files whose path relative to Path
	// matches this doublestar pattern. A pattern without '/' ("*.go",
	// "*.{go,md}") is matched against the file name, at any depth, as
	// ripgrep's -g does; one with '/' ("cmd/**/*.go") against the whole
	// relative path.
	Glob string
	// CaseInsensitive matches letters regardless of case (simple case
	// folding).
	CaseInsensitive bool
	// FixedStrings takes Pattern as a literal string.
	FixedStrings bool
	// Before and After are the numbers of context lines around each
	// match (OutputContent only).
	Before, After int
	// Output selects what is reported; OutputContent by default.
	Output OutputMode
	// MaxResults caps the matching lines (OutputContent) or the files
	// (other modes) reported, after sorting; 0 is unlimited. Truncated
	// says whether more existed.
	MaxResults int
	// NoIgnore searches files that .gitignore files in the session (at
	// the root, in Path's ancestors, and nested) exclude.
	NoIgnore bool
	// Hidden, if set, is the policy's filter: true skips a node, and a
	// directory's whole subtree. It is not asked about Path itself, which
	// the caller named and checked.
	Hidden func(vfs.Path, vfs.Node) bool
	// Engine chooses the engine; EngineAuto by default.
	Engine Engine
	// MaxLineBytes cuts reported lines longer than this many bytes (at a
	// UTF-8 character boundary); DefaultMaxLineBytes when 0.
	MaxLineBytes int
	// MaxFiles and MaxBytes bound the files and bytes the search reads,
	// counted after the walk's filters (ignore rules, glob, policy) and
	// before any file is read: over either, Grep fails with
	// *ScanLimitError. Zero is unbounded.
	MaxFiles, MaxBytes int64
}

// Match is one reported line.
type Match struct {
	Path vfs.Path
	Line int // from 1
	// Text is the line without its line break (a trailing "\r" is dropped
	// too), cut to MaxLineBytes.
	Text string
	// Context is true for a context line, false for a matching line.
	Context bool
}

// FileCount is one file in OutputFilesWithMatches and OutputCount results.
type FileCount struct {
	Path vfs.Path
	// Count is the number of matching lines (OutputCount); 0 in
	// OutputFilesWithMatches, which stops reading a file at its first match.
	Count int
}

// GrepResult is what Grep found.
type GrepResult struct {
	// Matches are the lines found (OutputContent), ordered by path (in
	// the tree's order, vfs.ComparePaths) and then by line.
	Matches []Match
	// Files are the files found (other modes), ordered by path.
	Files []FileCount
	// Truncated is true when MaxResults cut the results.
	Truncated bool
	// FilesSearched and BytesSearched count the text files searched, after
	// every filter (sizes as recorded in the tree).
	FilesSearched int
	BytesSearched int64
	// Engine is the engine that ran: EngineRG or EngineNative.
	Engine Engine
}

// target is one file to search.
type target struct {
	path vfs.Path
	node vfs.Node
}

// hitLine is one line an engine reports.
type hitLine struct {
	no      int
	text    string
	context bool
}

// fileHits is what an engine found in one file: lines (OutputContent), or
// the count of matching lines (OutputCount; OutputFilesWithMatches only
// needs it above zero). searched is false for a file found to be binary
// when read, or gone.
type fileHits struct {
	lines    []hitLine
	count    int
	searched bool
}

// job is one search, as both engines see it.
type job struct {
	s       *vfs.Session
	files   []target // in path order
	m       *matcher
	mode    OutputMode
	before  int
	after   int
	maxLine int
	// maxMatches bounds the matching lines an engine keeps per file in
	// OutputContent (MaxResults+1: one more than any file can contribute
	// marks where a cut falls); 0 keeps all.
	maxMatches int
}

// Grep searches the contents of the text files under opts.Path, as the
// session's tree is when Grep is called. Binary files are skipped: those
// the tree marks binary, and those of unknown encoding with a NUL byte in
// their first 8 KiB. Both engines return identical results.
func Grep(ctx context.Context, s *vfs.Session, opts GrepOptions) (*GrepResult, error) {
	const op = "grep"
	m, err := compileMatcher(opts.Pattern, opts.FixedStrings, opts.CaseInsensitive)
	if err != nil {
		return nil, err
	}
	glob, err := newGlobMatcher(opts.Glob, true)
	if err != nil {
		return nil, err
	}
	switch {
	case opts.Before < 0 || opts.After < 0:
		return nil, invalidInput(op, "context line counts must not be negative")
	case opts.MaxResults < 0:
		return nil, invalidInput(op, "max results must not be negative (0 is unlimited)")
	case opts.MaxLineBytes < 0:
		return nil, invalidInput(op, "max line bytes must not be negative (0 is the default)")
	case opts.Output < OutputContent || opts.Output > OutputCount:
		return nil, invalidInput(op, fmt.Sprintf("unknown output mode %d", opts.Output))
	}
	if s == nil {
		return nil, invalidInput(op, "no session")
	}
	engine, err := chooseEngine(opts.Engine)
	if err != nil {
		return nil, err
	}
	j := &job{s: s, m: m, mode: opts.Output, maxLine: opts.MaxLineBytes}
	if j.maxLine == 0 {
		j.maxLine = DefaultMaxLineBytes
	}
	if j.mode == OutputContent {
		j.before, j.after = opts.Before, opts.After
	}

	w := &walker{tree: s.Tree(), base: opts.Path, start: glob.startDir(opts.Path), hidden: opts.Hidden, glob: glob}
	if !opts.NoIgnore {
		w.readIgnore = func(p vfs.Path) ([]byte, error) {
			data, _, err := s.ReadFile(ctx, p)
			return data, err
		}
	}
	res := &GrepResult{Engine: engine}
	err = w.walk(ctx, func(p vfs.Path, n vfs.Node) error {
		if n.IsFile() && n.Encoding != vfs.EncodingBinary {
			j.files = append(j.files, target{path: p, node: n})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", op, opts.Path, err)
	}
	if err := checkScan(opts, j.files); err != nil {
		return nil, err
	}
	if opts.MaxResults > 0 {
		j.maxMatches = opts.MaxResults + 1
	}
	if m.never {
		return res, nil
	}

	var hits []fileHits
	if engine == EngineRG {
		hits, err = searchRG(ctx, j)
	} else {
		hits, err = searchNative(ctx, j)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %q in %s: %w", op, opts.Pattern, opts.Path, err)
	}
	for i, t := range j.files {
		if hits[i].searched {
			res.FilesSearched++
			res.BytesSearched += t.node.Size
		}
	}
	assemble(res, j, hits, opts.MaxResults)
	return res, nil
}

// checkScan refuses a search whose files are over opts.MaxFiles or
// opts.MaxBytes.
func checkScan(opts GrepOptions, files []target) error {
	if opts.MaxFiles > 0 && int64(len(files)) > opts.MaxFiles {
		return &ScanLimitError{Path: opts.Path, What: "files", Found: int64(len(files)), Limit: opts.MaxFiles}
	}
	if opts.MaxBytes > 0 {
		var total int64
		for _, t := range files {
			total += t.node.Size
		}
		if total > opts.MaxBytes {
			return &ScanLimitError{Path: opts.Path, What: "bytes", Found: total, Limit: opts.MaxBytes}
		}
	}
	return nil
}

// assemble turns per-file hits (in path order) into the result, applying
// maxResults: in OutputContent, the first maxResults matching lines and
// the context lines within Before/After of them.
func assemble(res *GrepResult, j *job, hits []fileHits, maxResults int) {
	left := maxResults
	if left == 0 {
		left = -1
	}
	for i, h := range hits {
		p := j.files[i].path
		if j.mode != OutputContent {
			if h.count == 0 {
				continue
			}
			if left == 0 {
				res.Truncated = true
				return
			}
			left--
			fc := FileCount{Path: p}
			if j.mode == OutputCount {
				fc.Count = h.count
			}
			res.Files = append(res.Files, fc)
			continue
		}
		// Keep the first `left` matching lines of this file.
		matches, cut := 0, 0 // cut: line number of the first dropped match
		for _, l := range h.lines {
			if l.context {
				continue
			}
			if matches == left {
				cut = l.no
				break
			}
			matches++
		}
		if left == 0 && matches == 0 && cut != 0 {
			res.Truncated = true
			return
		}
		if cut == 0 {
			for _, l := range h.lines {
				res.Matches = append(res.Matches, Match{Path: p, Line: l.no, Text: l.text, Context: l.context})
			}
			if left > 0 {
				left -= matches
			}
			continue
		}
		// Truncated inside this file: context lines are kept only within
		// reach of a kept match.
		var kept []int
		for _, l := range h.lines {
			if !l.context && l.no < cut {
				kept = append(kept, l.no)
			}
		}
		k := 0
		for _, l := range h.lines {
			if l.no >= cut && !l.context {
				break
			}
			if !l.context {
				res.Matches = append(res.Matches, Match{Path: p, Line: l.no, Text: l.text})
				continue
			}
			for k < len(kept) && kept[k]+j.after < l.no {
				k++
			}
			if k < len(kept) && kept[k]-j.before <= l.no {
				res.Matches = append(res.Matches, Match{Path: p, Line: l.no, Text: l.text, Context: true})
			}
		}
		res.Truncated = true
		return
	}
}

// cleanLine is how a line is reported: without a trailing '\r', cut to
// max bytes at a UTF-8 character boundary.
func cleanLine(line []byte, max int) string {
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if len(line) > max {
		cut := max
		for i := 0; i < utf8.UTFMax && cut > 0 && !utf8.RuneStart(line[cut]); i++ {
			cut--
		}
		if !utf8.RuneStart(line[cut]) {
			cut = max // not UTF-8 there: cut at the byte
		}
		line = line[:cut]
	}
	return string(line)
}

// sniffBytes is how much of a file of unknown encoding is read for NUL.
const sniffBytes = 8 << 10
