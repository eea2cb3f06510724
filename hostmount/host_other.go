//go:build !linux

package hostmount

// Host access outside Linux. The allowed roots are held open as os.Root,
// which resolves every path beneath its directory and refuses to leave it
// (the traversal-safe access openat2 gives on Linux). Scanning and applying
// through it are not written yet: Import, Stage, Restage and Apply fail
// with an error that says so, and touch nothing.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// root is an allow-listed host directory, held open for the importer's
// life so that what it is cannot change under the importer.
type root struct {
	path  string   // absolute, symlinks resolved, cleaned
	alias string   // absolute as configured, when that differs from path
	r     *os.Root // the directory
}

// openRoots resolves and opens the allow-listed roots.
func openRoots(paths []string) ([]root, error) {
	var roots []root
	for _, p := range paths {
		given, err := filepath.Abs(p)
		real := given
		if err == nil {
			real, err = filepath.EvalSymlinks(given)
		}
		var r *os.Root
		if err == nil {
			r, err = os.OpenRoot(real)
		}
		if err != nil {
			closeRoots(roots)
			return nil, fmt.Errorf("allowed root %s: %w", p, err)
		}
		rt := root{path: real, r: r}
		if given != real {
			rt.alias = given
		}
		roots = append(roots, rt)
	}
	return roots, nil
}

func closeRoots(roots []root) {
	for _, r := range roots {
		r.r.Close()
	}
}

// newPrivateSet resolves paths; those that do not exist are left out.
func newPrivateSet(paths []string) privateSet {
	ps := privateSet{ids: map[[2]uint64]bool{}}
	for _, p := range paths {
		if p == "" {
			continue
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			continue
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
		if _, err := os.Stat(abs); err != nil {
			continue
		}
		ps.paths = append(ps.paths, abs)
	}
	return ps
}

// errNoHostAccess is what host import and apply return outside Linux.
func errNoHostAccess(op, hp string) error {
	return &vfs.Error{Op: op, Path: hp, Code: vfs.CodeInvalid,
		Msg: fmt.Sprintf("host folders can be imported and applied only on Linux for now (this daemon runs on %s); write the files through the tools or the API instead", runtime.GOOS)}
}

// scan refuses: see errNoHostAccess.
func (sc *scanner) scan(rootRel string) error { return errNoHostAccess("mount", sc.mp.hostPath) }

// file is never reached: scan refused first.
func (ci *contentImport) file(ctx context.Context, s *scanned, e *entry) error {
	return errNoHostAccess("mount", join(s.root.path, e.openRel))
}

// Apply refuses: see errNoHostAccess. It writes nothing.
func (im *Importer) Apply(ctx context.Context, repo *snapshot.Repo, base string, s *vfs.Session, mounts []Mount, opts ApplyOptions) (*ApplyReport, error) {
	for _, m := range mounts {
		if _, err := validate(m); err != nil {
			return nil, err
		}
	}
	return nil, errNoHostAccess("apply", "")
}
