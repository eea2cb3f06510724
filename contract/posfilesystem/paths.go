package posfilesystem

import (
	"errors"
	"fmt"
	"strings"

	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/policy"
)

// resolvePath is the document's validate_path: "Validate and sandbox path
// to project workspace". The project root is the session's root. Like
// pathlib's resolve() it follows every symlink, the last segment's too,
// and takes ".." after the symlinks before it; a path that climbs out of
// the workspace, through ".." or a symlink, or that is absolute, is
// "Path traversal detected: {path} resolves outside workspace"
// (ValueError). The policy's rules apply after: to the raw text
// (reject_dot_dot) and to the resolved path (roots, hidden files, caps).
// The walk is the engine's (vfs.Tree.ResolveSymlinksText); this words its
// errors as the document's exceptions.
func resolvePath(tree vfs.Tree, pol *policy.Policy, raw string, a vfs.Access) (vfs.Path, error) {
	if strings.IndexByte(raw, 0) >= 0 {
		return "", &toolError{typ: errValue, msg: "embedded null byte in path; pass the path as plain text"}
	}
	if strings.HasPrefix(raw, "/") && strings.Trim(raw, "/") != "" {
		return "", traversal(raw, "it is absolute")
	}
	p, err := tree.ResolveSymlinksText(raw, vfs.SymlinkOptions{
		Follow:     pol.Symlinks != policy.SymlinksDeny,
		WithinRoot: pol.Symlinks != policy.SymlinksAllow, // under "allow", an absolute target names a session path
	})
	var se *vfs.SymlinkError
	if errors.As(err, &se) {
		switch se.Reason {
		case vfs.SymlinkAboveRoot:
			return "", traversal(raw, `".." climbs above the project root`)
		case vfs.SymlinkBadPath:
			return "", &toolError{typ: errValue, msg: fmt.Sprintf("path %q is not a valid workspace path: %s", raw, vfsMsg(se.Err))}
		case vfs.SymlinkNotFollowed:
			return "", &toolError{typ: errPermission, msg: fmt.Sprintf(
				"%s is a symlink, and symlinks are not followed under the %s policy; use the path it points to", string(se.Link), pol.Name)}
		case vfs.SymlinkLoop:
			return "", &toolError{typ: errOS, msg: fmt.Sprintf("Too many levels of symbolic links resolving %q", raw)}
		case vfs.SymlinkEscapes:
			return "", traversal(raw, fmt.Sprintf("the symlink %s points to the absolute path %q", string(se.Link), se.Target))
		}
	}
	if err != nil {
		return "", err // an io_error (OSError), never a missing path
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
