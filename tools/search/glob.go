package search

import (
	"context"
	"fmt"
	"slices"

	"github.com/vfsd/vfsd/vfs"
)

// Sort is the order of Glob's results.
type Sort int

// Orders.
const (
	// SortByMtime lists the most recently changed first (Node.Mtime, to
	// the nanosecond: two writes in one millisecond still differ), ties
	// by path.
	SortByMtime Sort = iota
	// SortByPath lists in path order (vfs.ComparePaths).
	SortByPath
)

// String returns "mtime" or "path".
func (s Sort) String() string {
	if s == SortByPath {
		return "path"
	}
	return "mtime"
}

// GlobOptions configure Glob.
type GlobOptions struct {
	// Pattern is a doublestar pattern matched against each path relative
	// to Base: "*.go" matches Base's own Go files, "**/*.go" those at any
	// depth, "src/{a,b}/*.md" and "[a-c]?.txt" work as in a shell.
	Pattern string
	// Base is the directory to list beneath; the root when empty.
	Base vfs.Path
	// MaxResults caps the entries returned, after sorting; 0 is unlimited.
	MaxResults int
	// Sort orders the entries; SortByMtime by default.
	Sort Sort
	// NoIgnore lists entries that .gitignore files exclude.
	NoIgnore bool
	// Hidden, if set, is the policy's filter: true skips a node, and a
	// directory's whole subtree. It is not asked about Base itself.
	Hidden func(vfs.Path, vfs.Node) bool
	// ReadFile reads a .gitignore file of the tree; nil ignores nothing.
	// Files that are missing or forbidden (vfs.ErrNotFound,
	// vfs.ErrForbidden) count as absent.
	ReadFile func(vfs.Path) ([]byte, error)
	// Dirs lists matching directories too; by default only files and
	// symlinks are listed.
	Dirs bool
}

// GlobEntry is one path Glob found.
type GlobEntry struct {
	Path vfs.Path
	Node vfs.Node
}

// GlobResult is what Glob found.
type GlobResult struct {
	Entries   []GlobEntry
	Truncated bool // MaxResults cut the list
}

// Glob lists the paths beneath opts.Base of tree t whose path relative to
// Base matches opts.Pattern, skipping what the policy hides and, unless
// opts.NoIgnore, what .gitignore files exclude. An invalid pattern is a
// *PatternError of kind KindInvalidPattern, returned before any I/O.
func Glob(ctx context.Context, t vfs.Tree, opts GlobOptions) (*GlobResult, error) {
	const op = "glob"
	if opts.Pattern == "" {
		return nil, &PatternError{Kind: KindInvalidPattern, Pattern: opts.Pattern, Msg: "the pattern is empty; use \"**/*\" to list everything"}
	}
	g, err := newGlobMatcher(opts.Pattern, false)
	if err != nil {
		return nil, err
	}
	switch {
	case opts.MaxResults < 0:
		return nil, invalidInput(op, "max results must not be negative (0 is unlimited)")
	case opts.Sort != SortByMtime && opts.Sort != SortByPath:
		return nil, invalidInput(op, fmt.Sprintf("unknown sort order %d", opts.Sort))
	}
	if !t.Valid() {
		return nil, invalidInput(op, "the tree is not initialised")
	}
	w := &walker{tree: t, base: opts.Base, start: g.startDir(opts.Base), hidden: opts.Hidden, glob: g, dirs: opts.Dirs}
	if !opts.NoIgnore {
		w.readIgnore = opts.ReadFile
	}
	res := &GlobResult{}
	err = w.walk(ctx, func(p vfs.Path, n vfs.Node) error {
		res.Entries = append(res.Entries, GlobEntry{Path: p, Node: n})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s %q in %s: %w", op, opts.Pattern, opts.Base, err)
	}
	if opts.Sort == SortByMtime {
		// The walk yields path order: a stable sort keeps it among ties.
		slices.SortStableFunc(res.Entries, func(a, b GlobEntry) int { return cmpInt64(b.Node.Mtime, a.Node.Mtime) })
	}
	if opts.MaxResults > 0 && len(res.Entries) > opts.MaxResults {
		res.Entries = slices.Clip(res.Entries[:opts.MaxResults])
		res.Truncated = true
	}
	return res, nil
}
