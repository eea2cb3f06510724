package patch

import (
	"errors"
	"fmt"
	"strings"
)

// CheckPath reports whether p, a path from a patch, stays inside the tree:
// it fails when p is empty or when its ".." segments climb above the root
// ("../x", "a/../../x", "/../x"). A path beginning with "/" starts at the
// root. The caller still canonicalises p; this only catches escapes.
func CheckPath(p string) error {
	if strings.TrimSpace(p) == "" {
		return errors.New("the path is empty")
	}
	depth := 0
	for seg := range strings.SplitSeq(p, "/") {
		switch seg {
		case "", ".":
		case "..":
			if depth--; depth < 0 {
				return fmt.Errorf("the path %q climbs above the workspace root with \"..\"", p)
			}
		default:
			depth++
		}
	}
	return nil
}
