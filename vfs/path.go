package vfs

import (
	"strings"
	"unicode/utf8"
)

// Limits on canonical paths. They match what Linux can represent, so that
// any session can be materialized or mounted.
const (
	MaxSegmentBytes = 255  // NAME_MAX
	MaxPathBytes    = 4095 // PATH_MAX without the terminating NUL
)

// Path is a canonical, session-relative path: '/'-separated segments, valid
// UTF-8, no NUL, no empty, "." or ".." segment, no leading or trailing slash.
// The session root is the empty Path, displayed as "/".
//
// Obtain a Path from user input with ParsePath; a Path built any other way
// must already be canonical.
type Path string

// Root is the session root.
const Root Path = ""

// ParsePath canonicalises user input. The input may be relative ("src/a.go",
// "./src//a.go") or session-absolute ("/src/a.go"); "." segments and repeated
// slashes are folded. ".." is rejected, never resolved, as are NUL bytes,
// invalid UTF-8, empty input and segments or paths longer than Linux allows.
// Errors have code CodeInvalidPath.
func ParsePath(s string) (Path, error) {
	if s == "" {
		return "", invalidPath(s, "path is empty; use \"/\" for the workspace root")
	}
	if len(s) > MaxPathBytes {
		return "", invalidPath(s, "path is longer than 4095 bytes")
	}
	if strings.IndexByte(s, 0) >= 0 {
		return "", invalidPath(s, "path contains a NUL byte")
	}
	if !utf8.ValidString(s) {
		return "", invalidPath(s, "path is not valid UTF-8")
	}
	if isCanonical(s) {
		return Path(s), nil
	}
	var b strings.Builder
	b.Grow(len(s))
	for seg := range strings.SplitSeq(s, "/") {
		switch seg {
		case "", ".":
			continue
		case "..":
			return "", invalidPath(s, "\"..\" is not allowed; use a path inside the workspace")
		}
		if len(seg) > MaxSegmentBytes {
			return "", invalidPath(s, "a path segment is longer than 255 bytes")
		}
		if b.Len() > 0 {
			b.WriteByte('/')
		}
		b.WriteString(seg)
	}
	return Path(b.String()), nil
}

// MustPath is ParsePath for literals in tests and examples; it panics on
// invalid input.
func MustPath(s string) Path {
	p, err := ParsePath(s)
	if err != nil {
		panic(err)
	}
	return p
}

// isCanonical reports whether s (already known to be valid UTF-8 without NUL)
// needs no rewriting. It keeps the common case allocation-free.
func isCanonical(s string) bool {
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != '/' {
			continue
		}
		seg := s[start:i]
		if seg == "" || seg == "." || seg == ".." || len(seg) > MaxSegmentBytes {
			return false
		}
		start = i + 1
	}
	return true
}

// String returns the session-absolute form: "/" for the root, "/a/b" otherwise.
func (p Path) String() string { return "/" + string(p) }

// Rel is how receipts and results show p: relative to the session root,
// "." for the root itself.
func (p Path) Rel() string {
	if p == Root {
		return "."
	}
	return string(p)
}

// Canonical reports whether p is a canonical Path, as ParsePath returns:
// the root, or '/'-separated segments with no empty, "." or ".." segment.
// (ParsePath also checks UTF-8 and NUL bytes; session paths that came from
// elsewhere are only checked for the shape the tree relies on.)
func (p Path) Canonical() bool { return p == Root || isCanonical(string(p)) }

// IsRoot reports whether p is the session root.
func (p Path) IsRoot() bool { return p == Root }

// Parent returns the directory containing p. The parent of the root is the root.
func (p Path) Parent() Path {
	i := strings.LastIndexByte(string(p), '/')
	if i < 0 {
		return Root
	}
	return p[:i]
}

// Base returns the last segment of p, or "" for the root.
func (p Path) Base() string {
	return string(p[strings.LastIndexByte(string(p), '/')+1:])
}

// Join appends one segment to p. name must be a valid single segment.
func (p Path) Join(name string) Path {
	if p == Root {
		return Path(name)
	}
	return p + "/" + Path(name)
}

// Depth is the number of segments in p; the root has depth 0.
func (p Path) Depth() int {
	if p == Root {
		return 0
	}
	return strings.Count(string(p), "/") + 1
}

// Segments returns the segments of p in order.
func (p Path) Segments() []string {
	if p == Root {
		return nil
	}
	return strings.Split(string(p), "/")
}

// HasPrefix reports whether p is dir or lies beneath it, by whole segments:
// "a/bc" is not beneath "a/b".
func (p Path) HasPrefix(dir Path) bool {
	if dir == Root || p == dir {
		return true
	}
	return len(p) > len(dir) && p[len(dir)] == '/' && p[:len(dir)] == dir
}

// Rebase moves p from beneath old to beneath new. p must have prefix old.
func (p Path) Rebase(old, new Path) Path {
	if p == old {
		return new
	}
	rest := p[len(old):]
	if old == Root {
		rest = "/" + rest
	}
	if new == Root {
		return rest[1:]
	}
	return new + rest
}

// Ancestors calls fn for each proper ancestor of p, nearest first, ending
// with the root. It stops early when fn returns false.
func (p Path) Ancestors(fn func(Path) bool) {
	for p != Root {
		p = p.Parent()
		if !fn(p) {
			return
		}
	}
}

// ComparePaths orders paths segment by segment, as a depth-first walk visits
// them: a directory comes right before its descendants ("a", "a/x", "a-b").
// It returns -1, 0 or +1.
func ComparePaths(a, b Path) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		ca, cb := a[i], b[i]
		if ca == cb {
			continue
		}
		// '/' sorts before every other byte, so a segment sorts before its
		// longer siblings and a subtree stays contiguous.
		if ca == '/' {
			return -1
		}
		if cb == '/' {
			return 1
		}
		if ca < cb {
			return -1
		}
		return 1
	}
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	}
	return 0
}
