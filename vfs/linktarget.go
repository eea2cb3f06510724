package vfs

import (
	"path"
	"strings"
)

// ResolveLinkTarget resolves a symlink's target as seen from the link's
// directory dir: an absolute target names a session path (the session
// root is "/"), and ".." never climbs above the root. Escapes reports
// whether the target would leave the session on the way: it is absolute,
// or it climbs above the root at some point ("../../x" from "a" does,
// "b/../c" does not). Escapes is set even when err is not nil (a target
// that is no session path), so that a policy that forbids escaping can
// say so first.
func ResolveLinkTarget(dir Path, target string) (p Path, escapes bool, err error) {
	var joined string
	if strings.HasPrefix(target, "/") {
		escapes = true
		joined = path.Clean(target)
	} else {
		joined = path.Clean("/" + string(dir) + "/" + target)
		escapes = climbsAbove(string(dir), target)
	}
	if joined == "/" {
		return Root, escapes, nil
	}
	p, err = ParsePath(joined)
	return p, escapes, err
}

// climbsAbove reports whether target, taken relative to dir, climbs above
// the root at any point.
func climbsAbove(dir, target string) bool {
	depth := 0
	if dir != "" {
		depth = strings.Count(dir, "/") + 1
	}
	for seg := range strings.SplitSeq(target, "/") {
		switch seg {
		case "", ".":
		case "..":
			if depth--; depth < 0 {
				return true
			}
		default:
			depth++
		}
	}
	return false
}
