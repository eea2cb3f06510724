package tools

import (
	"errors"
	"strings"

	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/policy"
)

// Resolution says whether a path's last segment is followed when it is a
// symlink.
type resolution bool

const (
	followLast   resolution = true  // read_file, write_file, edit_file, list_directory
	noFollowLast resolution = false // stat, exists, delete_file, rename, mkdir
)

// path turns a tool's path parameter into a session path: policy checks on
// the raw text, canonicalisation, symlink resolution by the policy, then
// the policy's path rules for the access.
func (t *Toolset) path(param, raw string, a vfs.Access, follow resolution) (vfs.Path, error) {
	if raw == "" {
		return "", fail(CodeInvalidInput, "%s is required: a path in the workspace, such as \"src/main.go\"", param)
	}
	if err := t.pol.CheckInput(raw); err != nil {
		return "", err
	}
	p, err := vfs.ParsePath(raw)
	if err != nil {
		if raw == "/" || raw == "." || raw == "./" {
			p = vfs.Root
		} else {
			return "", fail(CodeInvalidPath, "%s %q is not a valid workspace path: %s", param, raw, pathProblem(err))
		}
	}
	p, err = t.resolve(p, follow)
	if err != nil {
		return "", err
	}
	if err := t.pol.Check(a, p); err != nil {
		return "", err
	}
	return p, nil
}

// pathProblem extracts what is wrong with a path from the engine's error.
func pathProblem(err error) string {
	if e, ok := err.(*vfs.Error); ok && e.Msg != "" {
		return e.Msg + " (use a path relative to the workspace root, without \"..\")"
	}
	return err.Error()
}

// resolve follows the symlinks in p as the policy allows. The engine never
// follows symlinks itself, so this, through vfs.Tree.ResolveSymlinks, is
// the only place one is followed.
func (t *Toolset) resolve(p vfs.Path, follow resolution) (vfs.Path, error) {
	q, err := t.s.Tree().ResolveSymlinks(p, vfs.SymlinkOptions{
		Follow:       t.pol.Symlinks != policy.SymlinksDeny,
		NoFollowLast: follow == noFollowLast,
		WithinRoot:   t.pol.Symlinks == policy.SymlinksWithinRoot,
	})
	var se *vfs.SymlinkError
	if !errors.As(err, &se) {
		return q, err
	}
	switch se.Reason {
	case vfs.SymlinkNotFollowed:
		return "", fail(CodeForbidden, "%s is a symlink, and symlinks are not followed under the %s policy", se.Link, t.pol.Name)
	case vfs.SymlinkLoop:
		return "", fail(CodeInvalidInput, "too many levels of symlinks resolving %s", p)
	case vfs.SymlinkEscapes:
		if strings.HasPrefix(se.Target, "/") {
			return "", fail(CodeForbidden, "symlink %s points to the absolute path %q, outside the workspace", se.Link, se.Target)
		}
		return "", fail(CodeForbidden, "symlink %s points to %q, outside the workspace", se.Link, se.Target)
	default: // vfs.SymlinkBadTarget
		return "", fail(CodeInvalidPath, "symlink %s has a target %q that is not a workspace path", se.Link, se.Target)
	}
}

// visible reports whether a listing or search shows p: the policy would let
// it be read.
func (t *Toolset) visible(p vfs.Path) bool { return !t.pol.Hidden(p) }
