package search

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/vfsd/vfsd/internal/ignore"
	"github.com/vfsd/vfsd/vfs"
)

// maxIgnoreFile is the largest .gitignore read; larger ones are skipped, as
// the importer skips them.
const maxIgnoreFile = 1 << 20

// walker selects the nodes a search looks at: everything beneath base that
// is neither hidden by policy nor ignored by a .gitignore, and that the glob
// accepts. Grep and Glob both walk with it.
type walker struct {
	tree vfs.Tree
	base vfs.Path
	// start, beneath base (or base itself), is where the walk begins: the
	// glob's literal leading directories. Everything between base and
	// start is checked as the walk would check it.
	start vfs.Path
	// hidden, if set, hides a node (and a directory's subtree).
	hidden func(vfs.Path, vfs.Node) bool
	// readIgnore reads a .gitignore; nil ignores nothing.
	readIgnore func(vfs.Path) ([]byte, error)
	// glob, if set, selects nodes by their path relative to base.
	glob *globMatcher
	// dirs reports directories the glob accepts, besides files and symlinks.
	dirs bool
}

// frame is the ignore state of a directory the walk is in.
type frame struct {
	dir vfs.Path
	ign *ignore.Stack
}

// walk calls fn, in path order, for each selected node: files and symlinks,
// and directories when w.dirs. base itself is never hidden or ignored (the
// caller named it) but, when it is a file, the glob still applies to its
// name. fn must not keep going after ctx is done; walk checks it too.
func (w *walker) walk(ctx context.Context, fn func(vfs.Path, vfs.Node) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	baseNode, ok, err := w.tree.Lookup(w.base)
	if err != nil {
		return err
	}
	if !ok {
		return &vfs.Error{Op: "search", Path: w.base.String(), Code: vfs.CodeNotFound, Msg: "no such file or directory"}
	}
	if !baseNode.IsDir() {
		if w.glob.match(w.base.Base(), w.base.Base()) {
			return fn(w.base, baseNode)
		}
		return nil
	}
	ign, err := w.ancestorRules()
	if err != nil {
		return err
	}
	start := w.start
	if start == "" || !start.HasPrefix(w.base) {
		start = w.base
	}
	ign, ok, err = w.descend(ign, start)
	if err != nil || !ok {
		return err
	}
	frames := []frame{}
	visited := 0
	return w.tree.Walk(start, func(p vfs.Path, n vfs.Node) error {
		if visited++; visited&255 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if p == start {
			if !n.IsDir() {
				return vfs.SkipDir
			}
			rules, err := w.rules(p)
			if err != nil {
				return err
			}
			frames = append(frames, frame{dir: p, ign: ign.Push(string(p), rules)})
			if p != w.base && w.dirs && w.glob.match(w.rel(p), p.Base()) {
				return fn(p, n) // "src/**" matches "src" itself
			}
			return nil
		}
		for len(frames) > 1 && !p.HasPrefix(frames[len(frames)-1].dir) {
			frames = frames[:len(frames)-1]
		}
		top := frames[len(frames)-1].ign
		isDir := n.IsDir()
		if w.skip(top, p, n) {
			if isDir {
				return vfs.SkipDir
			}
			return nil
		}
		if isDir {
			rules, err := w.rules(p)
			if err != nil {
				return err
			}
			frames = append(frames, frame{dir: p, ign: top.Push(string(p), rules)})
			if !w.dirs {
				return nil
			}
		}
		if !w.glob.match(w.rel(p), p.Base()) {
			return nil
		}
		return fn(p, n)
	})
}

// skip reports whether p is hidden by policy or ignored.
func (w *walker) skip(ign *ignore.Stack, p vfs.Path, n vfs.Node) bool {
	if w.hidden != nil && w.hidden(p, n) {
		return true
	}
	return ign.Ignored(string(p), n.IsDir())
}

// rel returns p relative to base.
func (w *walker) rel(p vfs.Path) string {
	if w.base == vfs.Root {
		return string(p)
	}
	return string(p[len(w.base)+1:])
}

// ancestorRules stacks the .gitignore files of base's proper ancestors, from
// the root down: they apply beneath base as they would to a walk from the
// root.
func (w *walker) ancestorRules() (*ignore.Stack, error) {
	var ign *ignore.Stack
	if w.readIgnore == nil || w.base == vfs.Root {
		return ign, nil
	}
	dir := vfs.Root
	for _, seg := range w.base.Segments() {
		rules, err := w.rules(dir)
		if err != nil {
			return nil, err
		}
		ign = ign.Push(string(dir), rules)
		dir = dir.Join(seg)
	}
	return ign, nil
}

// descend checks the directories strictly beneath base down to start, as
// the walk would, and stacks their .gitignore files but start's. ok is
// false when one of them is missing, not a directory, hidden or ignored.
func (w *walker) descend(ign *ignore.Stack, start vfs.Path) (*ignore.Stack, bool, error) {
	if start == w.base {
		return ign, true, nil
	}
	dir := w.base
	for _, seg := range strings.Split(w.rel(start), "/") {
		rules, err := w.rules(dir)
		if err != nil {
			return nil, false, err
		}
		ign = ign.Push(string(dir), rules)
		dir = dir.Join(seg)
		n, ok, err := w.tree.Lookup(dir)
		if err != nil {
			return nil, false, err
		}
		if !ok || !n.IsDir() || w.skip(ign, dir, n) {
			return nil, false, nil
		}
	}
	return ign, true, nil
}

// rules reads and parses dir's .gitignore, if it has one that is a regular
// file of at most maxIgnoreFile bytes. One that cannot be read because it
// vanished or the policy forbids it counts as absent. The hidden filter is
// not asked: a .gitignore hidden from the agent still keeps what it
// ignores out of the results.
func (w *walker) rules(dir vfs.Path) (*ignore.Rules, error) {
	if w.readIgnore == nil {
		return nil, nil
	}
	p := dir.Join(".gitignore")
	n, ok, err := w.tree.Lookup(p)
	if err != nil {
		return nil, err
	}
	if !ok || !n.IsFile() || n.Size == 0 || n.Size > maxIgnoreFile {
		return nil, nil
	}
	data, err := w.readIgnore(p)
	if err != nil {
		if errors.Is(err, vfs.ErrNotFound) || errors.Is(err, vfs.ErrForbidden) {
			return nil, nil
		}
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	return ignore.Parse(data), nil
}

// globMatcher selects paths with a doublestar pattern. A nil *globMatcher
// selects everything.
type globMatcher struct {
	pattern string
	// base matches the pattern against the last path segment instead of the
	// whole relative path (Grep's filter, for a pattern without '/').
	base bool
}

// newGlobMatcher validates pattern; "" gives a nil matcher.
func newGlobMatcher(pattern string, baseNameIfNoSlash bool) (*globMatcher, error) {
	if pattern == "" {
		return nil, nil
	}
	if !doublestar.ValidatePattern(pattern) {
		return nil, &PatternError{Kind: KindInvalidPattern, Pattern: pattern,
			Msg: "not a valid glob (check for an unclosed '[' or '{', an empty '[]', or a trailing '\\')",
			Err: doublestar.ErrBadPattern}
	}
	if n := braceProduct(pattern); n > maxBraceAlternatives {
		return nil, &PatternError{Kind: KindInvalidPattern, Pattern: pattern,
			Msg: fmt.Sprintf("the {...} groups combine into more than %d alternatives; use fewer groups", maxBraceAlternatives)}
	}
	return &globMatcher{pattern: pattern, base: baseNameIfNoSlash && !strings.Contains(pattern, "/")}, nil
}

// maxBraceAlternatives bounds the combinations of a glob's {...} groups:
// doublestar tries them by backtracking, in time exponential in the
// number of groups, and "{a,*}{a,*}…" twenty times over takes seconds per
// path.
const maxBraceAlternatives = 64

// braceProduct is the number of combinations of pattern's {...}
// alternatives (an over-estimate for nested groups), capped just above
// maxBraceAlternatives.
func braceProduct(pattern string) int {
	product := 1
	var open []int // alternatives of each open group
	for i := 0; i < len(pattern); i++ {
		switch pattern[i] {
		case '\\':
			i++
		case '{':
			open = append(open, 1)
		case ',':
			if len(open) > 0 {
				open[len(open)-1]++
			}
		case '}':
			if len(open) > 0 {
				product *= open[len(open)-1]
				open = open[:len(open)-1]
				if product > maxBraceAlternatives {
					return maxBraceAlternatives + 1
				}
			}
		}
	}
	return product
}

// match reports whether the node at rel (relative to the walk's base), whose
// last segment is name, is selected.
func (g *globMatcher) match(rel, name string) bool {
	if g == nil {
		return true
	}
	if g.base {
		return doublestar.MatchUnvalidated(g.pattern, name)
	}
	return doublestar.MatchUnvalidated(g.pattern, rel)
}

// startDir returns where a walk from base can start: beneath the leading
// directories of the pattern that hold no glob syntax at all ("src/pkg" of
// "src/pkg/**/*.go"), as only paths beneath them can match. It is base when
// there are none, or when they do not form a canonical path.
func (g *globMatcher) startDir(base vfs.Path) vfs.Path {
	if g == nil || g.base {
		return base
	}
	end := 0
scan:
	for i := 0; i < len(g.pattern); i++ {
		switch g.pattern[i] {
		case '*', '?', '[', '{', '\\':
			break scan
		case '/':
			end = i
		}
	}
	dir := g.pattern[:end]
	if dir == "" {
		return base
	}
	p, err := vfs.ParsePath(dir)
	if err != nil || string(p) != dir || dir[0] == '/' {
		return base
	}
	if base == vfs.Root {
		return p
	}
	return base + "/" + p
}
