// Package patchtest holds test support for the patch package: scenarios in
// the layout of Codex's apply-patch suite, and an in-memory tree that plays
// the file system a Result is applied to.
//
// A scenario is a directory holding patch.txt (the patch), input/ (the tree
// before; absent means empty) and expected/ (the whole tree after,
// directories included; absent means empty).
package patchtest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vfsd/vfsd/tools/patch"
)

// Scenario is one patch and the trees before and after it.
type Scenario struct {
	// Name is the scenario's directory name.
	Name string
	// Input maps each file of the tree before the patch, by slash path
	// relative to the tree, to its content.
	Input map[string][]byte
	// InputDirs lists every directory of the tree before, sorted.
	InputDirs []string
	// Patch is the patch text.
	Patch string
	// Expected maps each file of the tree after the patch to its content.
	Expected map[string][]byte
	// ExpectedDirs lists every directory of the tree after, sorted.
	ExpectedDirs []string
}

// Load reads the scenarios under dir, one per subdirectory holding a
// patch.txt, in name order. It returns (nil, nil) if dir does not exist.
func Load(dir string) ([]Scenario, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading scenarios: %w", err)
	}
	var out []Scenario
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		root := filepath.Join(dir, e.Name())
		text, err := os.ReadFile(filepath.Join(root, "patch.txt"))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w", e.Name(), err)
		}
		s := Scenario{Name: e.Name(), Patch: string(text)}
		if s.Input, s.InputDirs, err = readTree(filepath.Join(root, "input")); err != nil {
			return nil, fmt.Errorf("scenario %s: input: %w", e.Name(), err)
		}
		if s.Expected, s.ExpectedDirs, err = readTree(filepath.Join(root, "expected")); err != nil {
			return nil, fmt.Errorf("scenario %s: expected: %w", e.Name(), err)
		}
		out = append(out, s)
	}
	return out, nil
}

// readTree reads the files and directories under root; a missing root is
// an empty tree.
func readTree(root string) (map[string][]byte, []string, error) {
	files := map[string][]byte{}
	var dirs []string
	if _, err := os.Stat(root); errors.Is(err, fs.ErrNotExist) {
		return files, dirs, nil
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case rel == ".":
		case d.IsDir():
			dirs = append(dirs, rel)
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			files[rel] = b
		default:
			return fmt.Errorf("%s: not a regular file or directory", rel)
		}
		return nil
	})
	slices.Sort(dirs)
	return files, dirs, err
}

// Tree is an in-memory file tree that implements patch.Files and applies
// a patch.Result the way a file system would: writes create their parent
// directories, a delete leaves its directory, a move writes its
// destination and removes its source. Paths are cleaned, so "a/./b" and
// "/a/b" name "a/b".
type Tree struct {
	// Files maps each file's path to its content.
	Files map[string][]byte
	// Dirs holds every directory's path (the root is implicit).
	Dirs map[string]bool
}

// NewTree returns a tree holding copies of files, the directories dirs,
// and every parent directory of both.
func NewTree(files map[string][]byte, dirs []string) *Tree {
	t := &Tree{Files: map[string][]byte{}, Dirs: map[string]bool{}}
	for _, d := range dirs {
		t.mkdirAll(clean(d))
	}
	for p, b := range files {
		k := clean(p)
		t.Files[k] = slices.Clone(b)
		t.mkdirAll(path.Dir(k))
	}
	return t
}

// ReadFile implements patch.Files.
func (t *Tree) ReadFile(p string) ([]byte, error) {
	k := clean(p)
	if k == "." || t.Dirs[k] {
		return nil, &fs.PathError{Op: "read", Path: p, Err: patch.ErrIsDir}
	}
	b, ok := t.Files[k]
	if !ok {
		return nil, &fs.PathError{Op: "read", Path: p, Err: fs.ErrNotExist}
	}
	return slices.Clone(b), nil
}

// Apply applies the changes of r in order. It fails, leaving the tree
// partly changed, if a change does not fit the tree, which a Result from
// patch.Plan on this tree never does.
func (t *Tree) Apply(r *patch.Result) error {
	for i, c := range r.Changes {
		var err error
		switch {
		case c.Op == patch.OpDelete:
			err = t.remove(c.Path)
		case c.Op == patch.OpUpdate && c.MoveTo != "":
			if err = t.write(c.MoveTo, c.New); err == nil {
				err = t.remove(c.Path)
			}
		default:
			err = t.write(c.Path, c.New)
		}
		if err != nil {
			return fmt.Errorf("change %d (%s %s): %w", i, c.Op, c.Path, err)
		}
	}
	return nil
}

// DirList returns every directory's path, sorted.
func (t *Tree) DirList() []string {
	out := make([]string, 0, len(t.Dirs))
	for d := range t.Dirs {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

func (t *Tree) write(p string, content []byte) error {
	k := clean(p)
	if k == "." || t.Dirs[k] {
		return fmt.Errorf("%s is a directory", p)
	}
	for a := path.Dir(k); a != "."; a = path.Dir(a) {
		if _, ok := t.Files[a]; ok {
			return fmt.Errorf("%s is a file", a)
		}
	}
	t.mkdirAll(path.Dir(k))
	t.Files[k] = slices.Clone(content)
	return nil
}

func (t *Tree) remove(p string) error {
	k := clean(p)
	if _, ok := t.Files[k]; !ok {
		return fmt.Errorf("%s is not a file", p)
	}
	delete(t.Files, k)
	return nil
}

func (t *Tree) mkdirAll(d string) {
	for ; d != "." && d != "" && !t.Dirs[d]; d = path.Dir(d) {
		t.Dirs[d] = true
	}
}

// clean returns p relative to the root, cleaned; "." is the root.
func clean(p string) string {
	k := strings.TrimPrefix(path.Clean("/"+p), "/")
	if k == "" {
		return "."
	}
	return k
}

// RequireSharedEnv is the environment variable that makes a missing shared
// suite fail the tests instead of skipping them; .ci/run sets it, since CI
// runs with ../shared beside the repository.
const RequireSharedEnv = "VFSD_REQUIRE_SHARED"

// TB is the part of testing.TB that MissingSuite uses.
type TB interface {
	Helper()
	Logf(format string, args ...any)
	Skipf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// MissingSuite ends a test whose shared suite (Codex's scenarios, in the
// shared checkout beside the repository) is not at dir: it skips, saying
// plainly that the suite's scenarios did not run and how to run them, or,
// with RequireSharedEnv=1, fails.
func MissingSuite(t TB, dir string) {
	t.Helper()
	msg := fmt.Sprintf("NOT RUN: the Codex apply-patch conformance suite (23 scenarios) is not at %s; "+
		"put the shared checkout beside the repository (../shared) to run it", dir)
	if os.Getenv(RequireSharedEnv) == "1" {
		t.Fatalf("%s (%s=1 requires it)", msg, RequireSharedEnv)
		return
	}
	t.Skipf("%s; %s=1 turns this skip into a failure", msg, RequireSharedEnv)
}
