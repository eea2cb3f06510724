// Package hostmount stages host folders into sessions: safely — nothing
// outside the daemon's allow-listed roots is ever read, not through "..",
// symlinks, prefix tricks or a race between checking a path and opening it
// — and fast: content goes straight into the blob store, and a cache keyed
// by file identity makes importing an unchanged tree again a stat walk.
//
// An import has two phases. The scan walks each mount with directory file
// descriptors (on Linux openat2 with RESOLVE_BENEATH from a descriptor of
// the root, O_NOFOLLOW everywhere; elsewhere os.Root, see root.go), applies the globs, ignore files and symlink
// policy, and checks the byte cap before anything is stored. The import
// then reads each file through a fresh descriptor opened beneath the root,
// checks it is the very file the scan saw, hashes it into the store, and
// commits the merged tree as a snapshot: the session's base.
package hostmount

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/vfsd/vfsd/vfs"
)

// Mount is one host folder (or file) to stage into a session. Mounts are
// configured by whoever creates the session, never by agents.
type Mount struct {
	// HostPath is the absolute host path to import. It must lie inside one
	// of the importer's allow-listed roots.
	HostPath string `json:"host_path"`
	// MountPath is where it lands in the session; the base name of
	// HostPath when empty ("/" for the session root).
	MountPath string `json:"mount_path,omitempty"`
	// Include, when not empty, imports only files whose path relative to
	// HostPath matches one of these doublestar patterns (and the
	// directories that hold them).
	Include []string `json:"include_glob,omitempty"`
	// Exclude skips files and directories (with everything in them) whose
	// path relative to HostPath matches one of these patterns. Exclude wins
	// over Include.
	Exclude []string `json:"exclude_glob,omitempty"`
	// MaxBytes caps the total size of the files imported; 0 means no cap.
	// A mount over its cap fails whole, and nothing is imported.
	MaxBytes int64 `json:"max_bytes,omitempty"`
	// FollowSymlinks imports what symlinks point to, as long as the target
	// stays inside the allow-listed root; otherwise symlinks are imported
	// as symlinks, which the session never follows.
	FollowSymlinks bool `json:"follow_symlinks,omitempty"`
	// Gitignore skips what .gitignore files in the mount ignore.
	Gitignore bool `json:"gitignore,omitempty"`
	// DefaultExcludes adds DefaultExcludes to Exclude.
	DefaultExcludes bool `json:"default_excludes,omitempty"`
}

// DefaultExcludes are the version-control, dependency and build-output
// directories (and files) a mount can opt out of with one flag.
var DefaultExcludes = []string{
	"**/.git", "**/.hg", "**/.svn",
	"**/node_modules", "**/.venv", "**/venv", "**/__pycache__", "**/.tox",
	"**/.mypy_cache", "**/.pytest_cache", "**/.ruff_cache", "**/.gradle",
	"**/.next", "**/.nuxt", "**/dist", "**/build", "**/target",
	"**/*.pyc", "**/*.o", "**/*.class", "**/.DS_Store",
}

// mountPlan is a validated mount.
type mountPlan struct {
	Mount
	hostPath  string   // cleaned
	mountPath vfs.Path // where it lands
	include   []string
	exclude   []string
}

// validate checks a mount before any I/O: patterns parse and cannot name
// anything outside the mount, and the paths are well formed.
func validate(m Mount) (*mountPlan, error) {
	mp := &mountPlan{Mount: m}
	for _, list := range []struct {
		what string
		in   []string
		out  *[]string
	}{{"include_glob", m.Include, &mp.include}, {"exclude_glob", m.Exclude, &mp.exclude}} {
		for _, pat := range list.in {
			if err := checkPattern(pat); err != nil {
				return nil, &vfs.Error{Op: "stage folder", Path: m.HostPath, Code: vfs.CodeInvalidPattern,
					Msg: fmt.Sprintf("%s %q: %v", list.what, pat, err)}
			}
			*list.out = append(*list.out, pat)
		}
	}
	if m.DefaultExcludes {
		mp.exclude = append(mp.exclude, DefaultExcludes...)
	}
	if !filepath.IsAbs(m.HostPath) {
		return nil, &vfs.Error{Op: "stage folder", Path: m.HostPath, Code: vfs.CodeInvalid, Msg: "host_path must be absolute"}
	}
	for _, seg := range strings.FieldsFunc(m.HostPath, func(c rune) bool { return c < 0x80 && os.IsPathSeparator(uint8(c)) }) {
		if seg == ".." {
			return nil, &vfs.Error{Op: "stage folder", Path: m.HostPath, Code: vfs.CodeInvalid, Msg: `host_path must not contain ".."; name the folder directly`}
		}
	}
	mp.hostPath = filepath.Clean(m.HostPath)
	if m.MaxBytes < 0 {
		return nil, &vfs.Error{Op: "stage folder", Path: m.HostPath, Code: vfs.CodeInvalid, Msg: "max_bytes must not be negative"}
	}
	dst := m.MountPath
	if dst == "" {
		dst = filepath.Base(mp.hostPath)
	}
	p, err := vfs.ParsePath(dst)
	if err != nil {
		return nil, &vfs.Error{Op: "stage folder", Path: m.HostPath, Code: vfs.CodeInvalidPath, Msg: fmt.Sprintf("mount_path %q: %v", dst, err)}
	}
	mp.mountPath = p
	return mp, nil
}

// checkPattern accepts a doublestar pattern that is relative and cannot
// climb out of the mount.
func checkPattern(pat string) error {
	switch {
	case pat == "":
		return fmt.Errorf("empty pattern")
	case strings.HasPrefix(pat, "/"):
		return fmt.Errorf("patterns are relative to host_path; drop the leading /")
	case !doublestar.ValidatePattern(pat):
		return fmt.Errorf("not a valid glob (check brackets, braces and escapes)")
	}
	for _, seg := range strings.Split(pat, "/") {
		if seg == ".." {
			return fmt.Errorf(`".." cannot match anything inside the folder`)
		}
	}
	return nil
}

// excluded reports whether rel (relative to the host path) is excluded. A
// directory is also excluded by a pattern for everything inside it, so
// "node_modules/**" keeps the walk out of node_modules.
func (mp *mountPlan) excluded(rel string, isDir bool) bool {
	for _, pat := range mp.exclude {
		if doublestar.MatchUnvalidated(pat, rel) {
			return true
		}
		if isDir && strings.HasSuffix(pat, "/**") && doublestar.MatchUnvalidated(pat[:len(pat)-3], rel) {
			return true
		}
	}
	return false
}

// included reports whether file rel passes the include patterns.
func (mp *mountPlan) included(rel string) bool {
	if len(mp.include) == 0 {
		return true
	}
	for _, pat := range mp.include {
		if doublestar.MatchUnvalidated(pat, rel) {
			return true
		}
	}
	return false
}
