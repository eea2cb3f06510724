package aos

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/vfsd/vfsd/tools/patch"
	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/policy"
)

// hasDotDot reports whether raw has a ".." segment.
func hasDotDot(raw string) bool { return slices.Contains(strings.Split(raw, "/"), "..") }

// canonical is the document's "canonicalize path against session workdir
// + allowed roots" (Adapter Behavior 2; read_file's path is "session-
// relative or canonicalized under allowed roots") for a path with ".."
// segments: the path is resolved as the kernel and realpath resolve it —
// symlinks followed under the session's symlink policy, ".." taken after
// the symlinks before it (the parent of where a link led), "." and empty
// segments dropped — and the canonical session path is what the call then
// works on, checked against fs_roots like any other. So "d/../u.txt" is
// u.txt. A path that climbs above the session root is status error,
// error_code invalid_path, the answer every effect (apply_patch included)
// gives a path that escapes; a symlink the policy does not follow, or
// whose target leaves the session, is forbidden, as it is without "..".
// A path without ".." is returned unchanged: the tools canonicalise it.
func (k *call) canonical(raw string) (string, error) {
	if !hasDotDot(raw) {
		return raw, nil
	}
	pol := k.env.Tools.Policy()
	p, err := k.env.Session.Tree().ResolveSymlinksText(raw, vfs.SymlinkOptions{
		Follow:     pol.Symlinks != policy.SymlinksDeny,
		WithinRoot: pol.Symlinks == policy.SymlinksWithinRoot,
	})
	var se *vfs.SymlinkError
	if errors.As(err, &se) {
		switch se.Reason {
		case vfs.SymlinkAboveRoot:
			return "", escapes(raw)
		case vfs.SymlinkBadPath, vfs.SymlinkBadTarget:
			return "", faultf("error", "invalid_path", "path %q is not a valid session path: %v; use a path relative to the session root", raw, se)
		case vfs.SymlinkNotFollowed:
			return "", faultf("forbidden", "forbidden", "path %q: %s is a symlink, and symlinks are not followed under this session's follow_symlinks policy (deny)", raw, se.Link)
		case vfs.SymlinkEscapes:
			return "", faultf("forbidden", "forbidden", "path %q: symlink %s points to %q, outside the session", raw, se.Link, se.Target)
		case vfs.SymlinkLoop:
			return "", faultf("error", "invalid_params", "path %q: too many levels of symlinks", raw)
		}
	}
	if err != nil {
		return "", k.engineFault(err)
	}
	if p.IsRoot() {
		return ".", nil
	}
	return p.Rel(), nil
}

// escapes is the one answer to a path that climbs out of the session,
// whichever effect it reaches.
func escapes(raw string) *fault {
	return faultf("error", "invalid_path", "path %q climbs above the session root with \"..\"; use a path inside the session", raw)
}

// canonicalPatch canonicalises the paths of a V4A patch's file headers
// ("*** Add File:", "*** Update File:", "*** Delete File:", "*** Move to:")
// as canonical does a path parameter, rewriting only the header lines whose
// path has ".." segments. A patch that does not parse is returned as it is:
// applying it reports the parse error.
func (k *call) canonicalPatch(text string) (string, error) {
	if !strings.Contains(text, "..") {
		return text, nil
	}
	pt, err := patch.Parse(text)
	if err != nil {
		return text, nil
	}
	lines := strings.Split(text, "\n") // Hunk.Line counts "\n" in text, 1-based
	rewrite := func(n int, path string) error {
		if !hasDotDot(path) {
			return nil
		}
		if n < 1 || n > len(lines) || !strings.Contains(lines[n-1], path) {
			return fmt.Errorf("patch line %d does not hold its path %q", n, path)
		}
		c, err := k.canonical(path)
		if err != nil {
			return err
		}
		i := strings.LastIndex(lines[n-1], path)
		lines[n-1] = lines[n-1][:i] + c + lines[n-1][i+len(path):]
		return nil
	}
	for _, h := range pt.Hunks {
		if err := rewrite(h.Line, h.Path); err != nil {
			return "", err
		}
		if h.MoveTo != "" {
			if err := rewrite(h.Line+1, h.MoveTo); err != nil {
				return "", err
			}
		}
	}
	return strings.Join(lines, "\n"), nil
}
