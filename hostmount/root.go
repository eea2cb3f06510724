//go:build !linux || vfsd_osroot

package hostmount

// Host access through os.Root: macOS, Windows and every system but Linux
// (and Linux too when built with the vfsd_osroot tag, so that the tests of
// this layer run there). An os.Root resolves every path beneath its
// directory and refuses to leave it — through "..", a symlink or a symlink
// swapped in meanwhile — which is the guarantee openat2's RESOLVE_BENEATH
// gives on Linux. On top of it, this layer never follows a symlink where
// Linux does not (it resolves symlinks itself, beneath the root, and opens
// what it found component by component, each checked to be the directory
// or file it saw), so what is imported and what is written are the same.
//
// What Linux has and this layer does not: owners (imports are ownerless,
// and apply leaves owners as the host has them), extended attributes,
// fifos, sockets and devices (skipped on import, a conflict on apply), and
// hard links written back as links (written as copies, noted).

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

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
		fi, err := os.Stat(abs)
		if err != nil {
			continue
		}
		ps.paths = append(ps.paths, abs)
		ps.infos = append(ps.infos, fi)
	}
	return ps
}

// is reports whether fi is one of the private paths (a hard link of one,
// say).
func (ps privateSet) is(fi fs.FileInfo) bool {
	for _, p := range ps.infos {
		if os.SameFile(p, fi) {
			return true
		}
	}
	return false
}

// Why a path could not be resolved beneath a root.
var (
	errOutside = errors.New("leads outside the allowed root")
	errLoop    = errors.New("too many symlinks (a loop)")
	errNotDir  = errors.New("a parent is not a directory")
	errSwapped = errors.New("changed while being opened")
)

// lstatReader is what resolveBeneath needs of a root: *os.Root has it.
type lstatReader interface {
	Lstat(name string) (fs.FileInfo, error)
	Readlink(name string) (string, error)
}

// splitRel splits a slash-separated relative path into its names.
func splitRel(rel string) []string {
	return strings.FieldsFunc(filepath.ToSlash(rel), func(c rune) bool { return c == '/' })
}

// resolveBeneath returns the real path — no symlinks, no "." or ".." —
// of what rel names beneath r, following symlinks only while they stay
// beneath it, as openat2 with RESOLVE_BENEATH does: a ".." above the root
// or an absolute symlink is errOutside, more than maxSymlinkDepth symlinks
// errLoop. Every lookup goes through r, which cannot leave the root, and
// what the result names is checked again when it is opened (openNoFollow),
// so a rename racing the resolution can make it fail, never escape.
func resolveBeneath(r lstatReader, rel string) (string, error) {
	var done []string
	todo := splitRel(rel)
	links := 0
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		switch name {
		case ".":
			continue
		case "..":
			if len(done) == 0 {
				return "", errOutside
			}
			done = done[:len(done)-1]
			continue
		}
		p := strings.Join(append(done, name), "/")
		fi, err := r.Lstat(p)
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if len(todo) > 0 && !fi.IsDir() {
				return "", errNotDir
			}
			done = append(done, name)
			continue
		}
		if links++; links > maxSymlinkDepth {
			return "", errLoop
		}
		target, err := r.Readlink(p)
		if err != nil {
			return "", err
		}
		if target == "" || filepath.IsAbs(target) || filepath.VolumeName(target) != "" || os.IsPathSeparator(target[0]) {
			return "", errOutside
		}
		todo = append(splitRel(target), todo...)
	}
	if len(done) == 0 {
		return ".", nil
	}
	return strings.Join(done, "/"), nil
}

// openDirNoFollow opens the directory rel (a real path, see resolveBeneath)
// beneath r one name at a time, refusing symlinks: each name must be a
// directory when looked up and the very one opened.
func openDirNoFollow(r *os.Root, rel string) (*os.Root, error) {
	cur, err := r.OpenRoot(".")
	if err != nil {
		return nil, err
	}
	for _, name := range splitRel(rel) {
		next, err := openChildDir(cur, name, nil)
		cur.Close()
		if err != nil {
			return nil, err
		}
		cur = next
	}
	return cur, nil
}

// openChildDir opens the directory name in d, refusing a symlink and
// anything but the directory seen as fi (looked up here when nil).
func openChildDir(d *os.Root, name string, fi fs.FileInfo) (*os.Root, error) {
	if fi == nil {
		var err error
		if fi, err = d.Lstat(name); err != nil {
			return nil, err
		}
	}
	if !fi.IsDir() {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errNotDir}
	}
	next, err := d.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	if now, err := next.Stat("."); err != nil || !os.SameFile(fi, now) {
		next.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: errSwapped}
	}
	return next, nil
}

// openFileNoFollow opens the regular file rel (a real path) beneath r for
// reading and checks it is the file seen as fi, not a symlink swapped in.
func openFileNoFollow(r *os.Root, rel string, check func(f *os.File, now fs.FileInfo) bool) (*os.File, fs.FileInfo, error) {
	f, err := r.Open(rel)
	if err != nil {
		return nil, nil, err
	}
	now, err := f.Stat()
	if err != nil || !now.Mode().IsRegular() || !check(f, now) {
		f.Close()
		return nil, nil, &fs.PathError{Op: "open", Path: rel, Err: errSwapped}
	}
	return f, now, nil
}

// openErr turns an error from resolving or opening host path hp into an
// *vfs.Error a person can act on.
func openErr(hp string, err error) error {
	switch {
	case errors.Is(err, errOutside):
		return &vfs.Error{Op: "stage folder", Path: hp, Code: vfs.CodeForbidden, Msg: "resolves outside its allowed root through a symlink"}
	case errors.Is(err, fs.ErrNotExist):
		return &vfs.Error{Op: "stage folder", Path: hp, Code: vfs.CodeNotFound, Msg: "does not exist on the host"}
	case errors.Is(err, errLoop):
		return &vfs.Error{Op: "stage folder", Path: hp, Code: vfs.CodeInvalid, Msg: "is or passes through a symlink that cannot be followed (loop)"}
	case errors.Is(err, errNotDir), errClassOf(err) == errKind:
		return &vfs.Error{Op: "stage folder", Path: hp, Code: vfs.CodeNotDir, Msg: "a parent on the host is not a directory"}
	case errors.Is(err, fs.ErrPermission):
		return &vfs.Error{Op: "stage folder", Path: hp, Code: vfs.CodeForbidden, Msg: "the daemon may not read it"}
	}
	return &vfs.Error{Op: "stage folder", Path: hp, Code: vfs.CodeIO, Msg: "cannot open it", Err: err}
}
