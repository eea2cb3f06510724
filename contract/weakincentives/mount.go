package weakincentives

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/vfsd/vfsd/contract"
	"github.com/vfsd/vfsd/vfs"
)

// HostMount is the document's HostMount: a host folder (or file) staged
// into the session when it is created. It is configuration, never a tool.
type HostMount struct {
	// HostPath is an ASCII host path: relative ("docs/") to the daemon's
	// allow-listed roots, tried in order (the first that holds it wins), or
	// absolute inside one of them.
	HostPath string `json:"host_path"`
	// MountPath is where the files land; nil mounts them at the host path
	// relative to its allow-listed root ("docs/" lands at docs).
	MountPath *VfsPath `json:"mount_path,omitempty"`
	// IncludeGlob keeps only files whose path relative to HostPath matches
	// one of these fnmatch patterns ("*" matches across "/", as Python's
	// fnmatch does); empty keeps every file.
	IncludeGlob []string `json:"include_glob,omitempty"`
	// ExcludeGlob drops files matching one of these fnmatch patterns.
	ExcludeGlob []string `json:"exclude_glob,omitempty"`
	// MaxBytes caps the content this mount pulls from disk; nil: the
	// daemon's own cap.
	MaxBytes *int64 `json:"max_bytes,omitempty"`
	// FollowSymlinks imports what symlinks point to (inside the allowed
	// root) as the files and directories they are. False (the default)
	// does not follow them: the virtual filesystem holds files and
	// implicit directories, no links, so a host symlink brings nothing in
	// and every tool agrees it is not there.
	FollowSymlinks bool `json:"follow_symlinks,omitempty"`
}

// Options are the weakincentives contract's session-creation options:
// VfsToolsSection's mounts argument.
type Options struct {
	Mounts []HostMount `json:"mounts"`
}

// MountResult is what one mount imported.
type MountResult struct {
	HostPath  string  `json:"host_path"`
	MountPath VfsPath `json:"mount_path"`
	Files     int64   `json:"files"`
	Bytes     int64   `json:"bytes"`
}

// InitSession decodes Options (strictly) and mounts them: the daemon
// calls it when a weakincentives session is created and again after a
// reset ("replays the mount initialisation").
func (Contract) InitSession(ctx context.Context, env *contract.Env, options json.RawMessage) error {
	if len(bytes.TrimSpace(options)) == 0 || string(bytes.TrimSpace(options)) == "null" {
		return nil
	}
	var o Options
	if err := decodeStrict(options, &o); err != nil {
		return fmt.Errorf("weakincentives session options: %w", err)
	}
	_, err := Mount(ctx, env, o.Mounts)
	return err
}

// maxStars bounds the "*" in one glob: an fnmatch pattern becomes 2^stars
// doublestar patterns.
const maxStars = 6

// plan is a validated mount, ready to import.
type plan struct {
	m       HostMount
	host    string   // absolute, cleaned
	mount   vfs.Path // where the files land
	include []string // doublestar
	exclude []string // doublestar
}

// Mount stages host mounts into env's session, in order: "Each HostMount
// requires an ASCII host_path, resolves it against an allow-listed root
// configured by the orchestrator, normalises it to an absolute path, and
// rejects traversal outside the approved surface. Included files are ...
// filtered through the glob include/exclude lists, and mounted under
// mount_path (or the host relative path when mount_path is None). Existing
// VFS entries at the target paths are overwritten, directory structures
// merge, and max_bytes caps the aggregate content pulled from disk."
//
// Every mount is validated before any is imported. Mount is meant for a
// session that was just created: if an import fails, the daemon discards
// the session.
func Mount(ctx context.Context, env *contract.Env, mounts []HostMount) ([]MountResult, error) {
	if len(mounts) == 0 {
		return []MountResult{}, nil
	}
	if env == nil || env.Host == nil {
		return nil, invalid("Host mounts need host access, and this daemon allows none; start it with --allow-root DIR.")
	}
	var roots []string
	if hr, ok := env.Host.(contract.HostRoots); ok {
		roots = hr.Roots()
	}
	lim := limitsOf(nil)
	if env.Tools != nil {
		lim = limitsOf(env.Tools.Policy())
	}
	plans := make([]plan, len(mounts))
	for i, m := range mounts {
		p, err := resolve(m, roots, lim)
		if err != nil {
			return nil, fmt.Errorf("mount %d (%s): %w", i+1, m.HostPath, err)
		}
		plans[i] = p
	}
	out := make([]MountResult, 0, len(plans))
	for i, p := range plans {
		var maxBytes int64
		if p.m.MaxBytes != nil {
			maxBytes = *p.m.MaxBytes
		}
		dst := string(p.mount)
		if p.mount.IsRoot() {
			dst = "/" // the session root
		}
		res, err := env.Host.Import(ctx, contract.ImportRequest{HostPath: p.host, MountPath: dst,
			Include: p.include, Exclude: p.exclude, MaxBytes: maxBytes, FollowSymlinks: p.m.FollowSymlinks,
			// The VFS holds files: a host symlink that is not followed
			// brings nothing in (FollowSymlinks).
			SkipSymlinks: !p.m.FollowSymlinks})
		if err != nil {
			var ve *vfs.Error
			if errors.As(err, &ve) && ve.Code == vfs.CodeTooLarge {
				return nil, invalid("Host mount exceeded the configured byte budget: mount %d (%s): %v", i+1, p.m.HostPath, err)
			}
			return nil, fmt.Errorf("mount %d (%s): %w", i+1, p.m.HostPath, err)
		}
		out = append(out, MountResult{HostPath: p.host, MountPath: pathOf(p.mount), Files: res.Files, Bytes: res.Bytes})
	}
	return out, nil
}

// resolve validates a mount and finds its host path among the roots.
func resolve(m HostMount, roots []string, lim limits) (plan, error) {
	hp := strings.TrimSpace(m.HostPath)
	if hp == "" {
		return plan{}, invalid("Host mount path must not be empty.")
	}
	if !isASCII(hp) {
		return plan{}, invalid("Host path must be ASCII text.")
	}
	if m.MaxBytes != nil && *m.MaxBytes < 1 {
		return plan{}, invalid("max_bytes must be at least 1 byte; omit it for the daemon's cap.")
	}
	p := plan{m: m}
	var err error
	if p.include, err = globs("include_glob", m.IncludeGlob); err != nil {
		return plan{}, err
	}
	if p.exclude, err = globs("exclude_glob", m.ExcludeGlob); err != nil {
		return plan{}, err
	}
	var rel string
	p.host, rel, err = hostPath(hp, roots)
	if err != nil {
		return plan{}, err
	}
	dst := VfsPath{Segments: []string{}}
	switch {
	case m.MountPath != nil:
		if dst, err = lim.normalize(*m.MountPath); err != nil {
			return plan{}, fmt.Errorf("mount_path: %w", err)
		}
		// "mounted under mount_path": a single file goes beneath it.
		if info, err := lstatBeneath(roots, p.host); err == nil && !info.IsDir() {
			dst.Segments = append(dst.Segments, filepath.Base(p.host))
			if dst, err = lim.normalize(dst); err != nil {
				return plan{}, fmt.Errorf("mount_path: %w", err)
			}
		}
	case rel != ".":
		if dst, err = lim.normalize(VfsPath{Segments: strings.Split(filepath.ToSlash(rel), "/")}); err != nil {
			return plan{}, fmt.Errorf("the host relative path %q is not a VFS path: %w; give a mount_path", rel, err)
		}
	}
	p.mount = dst.vfsPath()
	return p, nil
}

// hostPath resolves hp against the allow-listed roots: a relative path
// against each root in order, the first that holds it; an absolute one
// must lie inside a root. It returns the absolute path and the path
// relative to its root. Traversal ("..") outside the roots is refused here;
// symlinks leading outside are refused by the Host when it opens the path.
func hostPath(hp string, roots []string) (abs, rel string, err error) {
	if len(roots) == 0 {
		if filepath.IsAbs(hp) {
			// A Host that does not list its roots still checks them; the
			// mount then lands at the base name.
			return filepath.Clean(hp), filepath.Base(filepath.Clean(hp)), nil
		}
		return "", "", invalid("No allowed host roots configured for mounts; start the daemon with --allow-root DIR.")
	}
	if !filepath.IsAbs(hp) {
		clean := filepath.Clean(hp)
		if clean == ".." || strings.HasPrefix(clean, "../") {
			return "", "", invalid("Host path %q is outside the allowed roots; name a path inside %s.", hp, strings.Join(roots, ", "))
		}
		for _, root := range roots {
			if _, err := lstatBeneath([]string{root}, filepath.Join(root, clean)); err == nil {
				return filepath.Join(root, clean), clean, nil
			}
		}
		return "", "", invalid("Host path %q is outside the allowed roots or missing; it is resolved against %s.", hp, strings.Join(roots, ", "))
	}
	clean := filepath.Clean(hp)
	best, bestRel := "", ""
	for _, root := range roots {
		r := filepath.Clean(root)
		if x, err := filepath.Rel(r, clean); err == nil && x != ".." && !strings.HasPrefix(x, "../") && len(r) > len(best) {
			best, bestRel = r, x
		}
	}
	if best == "" {
		return "", "", invalid("Host path %q is outside the allowed roots %s.", hp, strings.Join(roots, ", "))
	}
	return clean, bestRel, nil
}

// lstatBeneath describes host path abs through the root that holds it,
// never leaving the root (os.Root: no "..", no symlink out of it).
func lstatBeneath(roots []string, abs string) (os.FileInfo, error) {
	for _, root := range roots {
		rel, err := filepath.Rel(filepath.Clean(root), abs)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			continue
		}
		r, err := os.OpenRoot(root)
		if err != nil {
			return nil, err
		}
		info, err := r.Lstat(rel)
		r.Close()
		return info, err
	}
	return nil, os.ErrNotExist
}

// globs checks fnmatch patterns and turns each into the doublestar
// patterns that match exactly the same paths: fnmatch's "*" matches any
// run of characters, "/" included, which is doublestar's "*" (no "/") or
// "*/**/*" (at least one "/").
func globs(field string, pats []string) ([]string, error) {
	var out []string
	for _, pat := range pats {
		pat = strings.TrimSpace(pat)
		if pat == "" {
			continue
		}
		if !isASCII(pat) {
			return nil, invalid("%s must be ASCII text: %q.", field, pat)
		}
		stars := strings.Count(pat, "*")
		if stars > maxStars {
			return nil, invalid("%s pattern %q has %d '*'; use at most %d.", field, pat, stars, maxStars)
		}
		for _, d := range expandStars(pat) {
			if !doublestar.ValidatePattern(d) {
				return nil, invalid("%s pattern %q is not a valid glob; check its brackets.", field, pat)
			}
			out = append(out, d)
		}
	}
	return out, nil
}

// expandStars returns the doublestar patterns for fnmatch pattern pat.
func expandStars(pat string) []string {
	// Runs of "*" are one "*" to fnmatch.
	for strings.Contains(pat, "**") {
		pat = strings.ReplaceAll(pat, "**", "*")
	}
	parts := strings.Split(pat, "*")
	out := []string{parts[0]}
	for _, part := range parts[1:] {
		next := make([]string, 0, 2*len(out))
		for _, prefix := range out {
			next = append(next, prefix+"*"+part, prefix+"*/**/*"+part)
		}
		out = next
	}
	return out
}

// VirtualFileSystem is the document's snapshot of the session: the
// session's files, sorted by path segments, and root_path, "the absolute
// path to the session-scoped temporary directory on disk".
type VirtualFileSystem struct {
	RootPath string    `json:"root_path"`
	Files    []VfsFile `json:"files"`
}

// State is the document's select_latest(session, VirtualFileSystem): the
// session's current files. rootPath is where the session's files are on
// disk (contract.RootDirectory: the daemon's FUSE mount of the session,
// or its refreshed copy), "" when the caller has none.
func State(ctx context.Context, env *contract.Env, rootPath string) (*VirtualFileSystem, error) {
	if err := checkEnv(env); err != nil {
		return nil, err
	}
	st := &VirtualFileSystem{RootPath: rootPath, Files: []VfsFile{}}
	pol := env.Tools.Policy()
	err := env.Session.Tree().Walk(vfs.Root, func(p vfs.Path, n vfs.Node) error {
		if p.IsRoot() {
			return nil
		}
		if pol.Hidden(p) {
			if n.IsDir() {
				return vfs.SkipDir
			}
			return nil
		}
		if n.IsSymlink() {
			// A link shows as the file it leads to (followLink); one to a
			// directory, or to nothing, holds no file of its own here.
			t, ok := followLink(ctx, env, p)
			if !ok || t.IsDir() {
				return nil
			}
			n = t
		}
		if n.IsDir() || !n.IsFile() {
			return nil
		}
		f := VfsFile{Path: pathOf(p), SizeBytes: n.Size, Version: n.Version,
			CreatedAt: Timestamp(n.CreatedAt()), UpdatedAt: Timestamp(n.UpdatedAt())}
		switch n.Encoding {
		case vfs.EncodingUTF8, vfs.EncodingBinary:
			e := n.Encoding.String()
			f.Encoding = &e
		}
		st.Files = append(st.Files, f)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("weakincentives state: %w", err)
	}
	sortFiles(st.Files)
	return st, nil
}

// sortFiles sorts files "lexicographically by path segments".
func sortFiles(files []VfsFile) {
	slices.SortFunc(files, func(a, b VfsFile) int { return slices.Compare(a.Path.Segments, b.Path.Segments) })
}
