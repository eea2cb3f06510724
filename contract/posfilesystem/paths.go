package posfilesystem

import (
	"fmt"
	"strings"

	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/policy"
)

// maxSymlinkHops bounds symlink resolution, like the kernel's ELOOP.
const maxSymlinkHops = 40

// resolvePath is the document's validate_path: "Validate and sandbox path
// to project workspace". The project root is the session's root. Like
// pathlib's resolve() it follows every symlink, the last segment's too,
// and takes ".." after the symlinks before it; a path that climbs out of
// the workspace, through ".." or a symlink, or that is absolute, is
// "Path traversal detected: {path} resolves outside workspace"
// (ValueError). The policy's rules apply after: to the raw text
// (reject_dot_dot) and to the resolved path (roots, hidden files, caps).
func resolvePath(tree vfs.Tree, pol *policy.Policy, raw string, a vfs.Access) (vfs.Path, error) {
	if strings.IndexByte(raw, 0) >= 0 {
		return "", &toolError{typ: errValue, msg: "embedded null byte in path; pass the path as plain text"}
	}
	if strings.HasPrefix(raw, "/") && strings.Trim(raw, "/") != "" {
		return "", traversal(raw, "it is absolute")
	}
	var cur []string
	queue := strings.Split(raw, "/")
	hops := 0
	for len(queue) > 0 {
		seg := queue[0]
		queue = queue[1:]
		switch seg {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				return "", traversal(raw, `".." climbs above the project root`)
			}
			cur = cur[:len(cur)-1]
			continue
		}
		if _, err := vfs.ParsePath(seg); err != nil {
			return "", &toolError{typ: errValue, msg: fmt.Sprintf("path %q is not a valid workspace path: %s", raw, vfsMsg(err))}
		}
		next := append(cur, seg)
		n, ok, err := tree.Lookup(vfs.Path(strings.Join(next, "/")))
		if err != nil {
			return "", err // an io_error (OSError), never a missing path
		}
		if !ok || !n.IsSymlink() {
			cur = next
			continue
		}
		link := strings.Join(next, "/")
		if pol.Symlinks == policy.SymlinksDeny {
			return "", &toolError{typ: errPermission, msg: fmt.Sprintf(
				"%s is a symlink, and symlinks are not followed under the %s policy; use the path it points to", link, pol.Name)}
		}
		if hops++; hops > maxSymlinkHops {
			return "", &toolError{typ: errOS, msg: fmt.Sprintf("Too many levels of symbolic links resolving %q", raw)}
		}
		if strings.HasPrefix(n.Target, "/") {
			if pol.Symlinks != policy.SymlinksAllow {
				return "", traversal(raw, fmt.Sprintf("the symlink %s points to the absolute path %q", link, n.Target))
			}
			cur = nil // under "allow", an absolute target names a session path
		}
		queue = append(strings.Split(n.Target, "/"), queue...)
	}
	p := vfs.Root
	if len(cur) > 0 {
		var err error
		if p, err = vfs.ParsePath(strings.Join(cur, "/")); err != nil {
			return "", &toolError{typ: errValue, msg: fmt.Sprintf("path %q is not a valid workspace path: %s", raw, vfsMsg(err))}
		}
	}
	if err := pol.CheckInput(raw); err != nil {
		return "", err
	}
	if err := pol.Check(a, p); err != nil {
		return "", err
	}
	return p, nil
}

// traversal is the document's ValueError for a path outside the
// workspace, with the reason and what to do.
func traversal(raw, why string) error {
	return &toolError{typ: errValue, msg: fmt.Sprintf(
		"Path traversal detected: %s resolves outside workspace (%s); use a path relative to the project root, such as \"docs/notes.md\"", raw, why)}
}

func vfsMsg(err error) string {
	if e, ok := err.(*vfs.Error); ok && e.Msg != "" {
		return e.Msg
	}
	return err.Error()
}
