// Package ignore decides which paths .gitignore files exclude, exactly as git
// does. The host-folder importer uses it to skip ignored entries without
// descending into ignored directories; the agent tools (grep, glob) use it
// so that what they search is what git, and ripgrep, leave out.
//
// Parsing and matching are a port of git's own code (dir.c and wildmatch.c,
// as of git 2.39), not a reading of gitignore(5), and the tests hold them to
// git check-ignore on hand-written and random trees. In short:
//
//   - Lines end at '\n'; one '\r' before it is dropped, a NUL ends the line
//     early, and a UTF-8 BOM at the start of the file is skipped. Blank
//     lines and lines starting with '#' are skipped. Unescaped trailing
//     spaces (not tabs) are trimmed; leading spaces are kept.
//   - A leading '!' negates the pattern; "\!" and "\#" match a literal
//     leading '!' or '#'. A backslash makes the next byte literal anywhere;
//     a pattern ending in a lone backslash matches nothing.
//   - A trailing '/' makes the pattern match directories only.
//   - A pattern with a '/' elsewhere (leading or in the middle) is matched
//     against the path relative to the directory of its ignore file; one
//     without is matched against the last path component, at any depth.
//   - '*', '?' and "[...]" never match '/'. Brackets take ranges, '!' or '^'
//     to negate, and POSIX classes ("[[:alpha:]]", ASCII only, with git's
//     definitions: tab is both space and cntrl, vertical tab only cntrl); an
//     unclosed bracket or unknown class matches nothing. '?' matches one
//     byte, not one UTF-8 character. Braces are literal.
//   - "**" is special as a whole path component ("**/x", "x/**", "x/**/y"),
//     where it matches any number of directories, and, as in git, right
//     after a pattern's wildcard-free start ("x/a**/c" matches "x/ab/d/c");
//     elsewhere it is a plain '*'.
//   - The last pattern that matches decides; patterns of deeper ignore files
//     come after those of shallower ones. A negated match re-includes.
//
// As in git, a path inside an ignored directory is not re-included by a
// negation: walkers do not descend into ignored directories, so Stack.Ignored
// is never asked about such paths.
//
// Matching is case-sensitive (git's default, core.ignorecase=false). Unlike
// git's, its time is polynomial even for patterns with many "**" (see
// wildmatch). Ignore files are not read here: a walker reads each
// directory's file, Parses it and Pushes it onto the Stack of that directory.
//
// ripgrep 13 departs from git in some corners (it expands braces, has no
// POSIX classes, lets "[/]" match a slash, trims a trailing tab, keeps a BOM
// as part of the first pattern, ...); this package follows git there.
package ignore

import (
	"bytes"
	"strings"
)

// Pattern flags, as in git's dir.h.
const (
	flagNegative  = 1 << iota // "!pattern": a match re-includes
	flagMustBeDir             // "pattern/": matches directories only
	flagNoDir                 // no '/' in the pattern: match the base name
	flagEndsWith              // "*literal": a suffix test suffices
	flagManyStars             // several "**" in a path pattern: memoize
)

// pattern is one compiled line of an ignore file.
type pattern struct {
	// text is the pattern without its '!', its trailing '/' and, for one
	// matched against the whole path, its leading '/'.
	text string
	// prefix is the length of text's leading part that has no wildcard.
	prefix int
	// line is the pattern's line number in its file, from 1.
	line  int
	flags uint8
}

// Rules are the patterns of one ignore file (.gitignore syntax), relative to
// the directory that holds it. Rules are immutable and safe for concurrent
// use.
type Rules struct {
	patterns []pattern
}

var utf8BOM = []byte{0xef, 0xbb, 0xbf}

// Parse parses ignore-file content. It never fails: lines git would ignore
// or cannot match are dropped, as git does. (git keeps the patterns that
// cannot match, such as "foo\\" or "/", to the same effect: they never
// decide anything.)
func Parse(data []byte) *Rules {
	r := &Rules{}
	data = bytes.TrimPrefix(data, utf8BOM)
	for lineno := 1; len(data) > 0; lineno++ {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		// git holds patterns in C strings: a NUL ends the line.
		if i := bytes.IndexByte(line, 0); i >= 0 {
			line = line[:i]
		}
		if p, ok := compile(trimTrailingSpaces(line)); ok {
			p.line = lineno
			r.patterns = append(r.patterns, p)
		}
	}
	return r
}

// Len is the number of patterns kept.
func (r *Rules) Len() int {
	if r == nil {
		return 0
	}
	return len(r.patterns)
}

// trimTrailingSpaces drops the spaces that end line, unless a backslash
// escapes the first of them; a line ending in a lone backslash is kept whole.
func trimTrailingSpaces(line []byte) string {
	lastSpace := -1
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case ' ':
			if lastSpace < 0 {
				lastSpace = i
			}
		case '\\':
			i++
			if i == len(line) {
				return string(line)
			}
			lastSpace = -1
		default:
			lastSpace = -1
		}
	}
	if lastSpace >= 0 {
		line = line[:lastSpace]
	}
	return string(line)
}

// compile turns one trimmed line into a pattern, as git's
// parse_path_pattern does. ok is false for a pattern that cannot match
// anything, which git keeps but we drop: one that is empty, that starts or
// ends with '/' once its anchoring and directory-only slashes are removed,
// or that ends in an unescaped backslash.
func compile(s string) (p pattern, ok bool) {
	if strings.HasPrefix(s, "!") {
		p.flags |= flagNegative
		s = s[1:]
	}
	if strings.HasSuffix(s, "/") {
		p.flags |= flagMustBeDir
		s = s[:len(s)-1]
	}
	p.prefix = simpleLength(s)
	if strings.IndexByte(s, '/') < 0 {
		p.flags |= flagNoDir
		if strings.HasPrefix(s, "*") && simpleLength(s[1:]) == len(s)-1 {
			p.flags |= flagEndsWith
		}
	} else if s[0] == '/' {
		s = s[1:]
		p.prefix--
	}
	// Paths neither start nor end with '/', and a backslash at the end
	// escapes nothing: such patterns can never match.
	if s == "" || s[0] == '/' || s[len(s)-1] == '/' || danglingBackslash(s) {
		return p, false
	}
	if p.flags&flagNoDir == 0 && strings.Count(s, "**") > 1 {
		p.flags |= flagManyStars
	}
	p.text = s
	return p, true
}

// simpleLength is the length of s's leading part that has no wildcard.
func simpleLength(s string) int {
	for i := 0; i < len(s); i++ {
		if isGlobSpecial(s[i]) {
			return i
		}
	}
	return len(s)
}

// danglingBackslash reports whether s ends in a backslash that escapes
// nothing, which makes it match nothing.
func danglingBackslash(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			if i == len(s) {
				return true
			}
		}
	}
	return false
}

// match reports whether p matches the path rel (relative to the directory
// of p's ignore file) whose last component is base. The caller has checked
// flagMustBeDir.
func (p *pattern) match(rel, base string) bool {
	if p.flags&flagNoDir != 0 {
		// git's match_basename.
		switch {
		case p.prefix == len(p.text):
			return base == p.text
		case p.flags&flagEndsWith != 0:
			return strings.HasSuffix(base, p.text[1:])
		default:
			return wildmatch(p.text, base, false, false)
		}
	}
	// git's match_pathname: the literal prefix is compared first and only
	// the rest goes to wildmatch, as a pattern of its own (this matters to
	// "**": in "a/b**/c" it is leading, so special, in the rest "**/c").
	text := p.text
	if p.prefix > 0 {
		if p.prefix > len(rel) || rel[:p.prefix] != text[:p.prefix] {
			return false
		}
		text, rel = text[p.prefix:], rel[p.prefix:]
		if text == "" {
			return rel == ""
		}
	}
	return wildmatch(text, rel, true, p.flags&flagManyStars != 0)
}

// Stack is what a walker knows at one directory: the rules of every ignore
// file from the walk root down to it. Stacks are immutable: Push returns a
// new one, so a recursive walker keeps one per level at no copying cost. A
// nil *Stack is the empty stack, which ignores nothing. Stacks are safe for
// concurrent use.
type Stack struct {
	parent *Stack
	// dir is the directory of rules, relative to the walk root, "" for
	// the root.
	dir   string
	rules *Rules
}

// Push returns a stack with r added for directory dir (relative to the walk
// root, "/"-separated, "" for the root). A nil or empty r returns s itself.
// Rules pushed later take precedence over rules pushed earlier, so a walker
// pushes each directory's file after its parent's, as it descends.
func (s *Stack) Push(dir string, r *Rules) *Stack {
	if r.Len() == 0 {
		return s
	}
	dir = strings.Trim(dir, "/")
	if dir == "." {
		dir = ""
	}
	return &Stack{parent: s, dir: dir, rules: r}
}

// Ignored reports whether path (relative to the walk root, "/"-separated, no
// leading slash) is ignored; isDir says whether it is a directory. Only the
// rules of files in path's ancestor directories apply (the walker pushes
// them). The caller does not descend into ignored directories, so Ignored
// need not consider whether a parent directory is itself ignored.
func (s *Stack) Ignored(path string, isDir bool) bool {
	f, p := s.decide(path, isDir)
	return f != nil && p.flags&flagNegative == 0
}

// decide returns the pattern that decides path, and the frame it belongs
// to, or nil if no pattern matches: git's last_matching_pattern.
func (s *Stack) decide(path string, isDir bool) (*Stack, *pattern) {
	if path == "" {
		return nil, nil
	}
	base := path[strings.LastIndexByte(path, '/')+1:]
	for f := s; f != nil; f = f.parent {
		rel := path
		if f.dir != "" {
			if len(path) <= len(f.dir) || path[len(f.dir)] != '/' || path[:len(f.dir)] != f.dir {
				continue // not below f.dir: its rules do not apply
			}
			rel = path[len(f.dir)+1:]
		}
		ps := f.rules.patterns
		for i := len(ps) - 1; i >= 0; i-- {
			p := &ps[i]
			if p.flags&flagMustBeDir != 0 && !isDir {
				continue
			}
			if p.match(rel, base) {
				return f, p
			}
		}
	}
	return nil, nil
}
