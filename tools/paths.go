package tools

import (
	"strings"

	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/policy"
)

// maxSymlinkHops bounds symlink resolution, like the kernel's ELOOP.
const maxSymlinkHops = 40

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
// follows symlinks itself, so this is the only place one is followed.
func (t *Toolset) resolve(p vfs.Path, follow resolution) (vfs.Path, error) {
	tree := t.s.Tree()
	hops := 0
	segs := p.Segments()
	cur := vfs.Root
	for i := 0; i < len(segs); i++ {
		next := cur.Join(segs[i])
		n, ok, err := tree.Lookup(next)
		if err != nil {
			return "", err
		}
		last := i == len(segs)-1
		if !ok || !n.IsSymlink() || (last && follow == noFollowLast) {
			cur = next
			continue
		}
		if t.pol.Symlinks == policy.SymlinksDeny {
			return "", fail(CodeForbidden, "%s is a symlink, and symlinks are not followed under the %s policy", next, t.pol.Name)
		}
		if hops++; hops > maxSymlinkHops {
			return "", fail(CodeInvalidInput, "too many levels of symlinks resolving %s", p)
		}
		target, err := t.linkTarget(cur, next, n.Target)
		if err != nil {
			return "", err
		}
		rest := append(target.Segments(), segs[i+1:]...)
		segs, cur, i = rest, vfs.Root, -1
	}
	return cur, nil
}

// linkTarget resolves a symlink's target against its directory dir.
func (t *Toolset) linkTarget(dir, link vfs.Path, target string) (vfs.Path, error) {
	p, escapes, err := vfs.ResolveLinkTarget(dir, target)
	if escapes && t.pol.Symlinks == policy.SymlinksWithinRoot {
		if strings.HasPrefix(target, "/") {
			return "", fail(CodeForbidden, "symlink %s points to the absolute path %q, outside the workspace", link, target)
		}
		return "", fail(CodeForbidden, "symlink %s points to %q, outside the workspace", link, target)
	}
	if err != nil {
		return "", fail(CodeInvalidPath, "symlink %s has a target %q that is not a workspace path", link, target)
	}
	return p, nil
}

// visible reports whether a listing or search shows p: the policy would let
// it be read.
func (t *Toolset) visible(p vfs.Path) bool { return !t.pol.Hidden(p) }
