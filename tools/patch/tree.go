package patch

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// tree is the tree as the hunks planned so far leave it: the caller's Files
// underneath, the files those hunks wrote or deleted on top. It lets a
// hunk see what earlier hunks of the same patch did, as Codex, which
// applies hunk after hunk to the disk, sees it, without changing anything.
//
// Paths that name the same file once cleaned ("a/./b", "/a/b", "a//b")
// share one entry; the session root is "/".
type tree struct {
	base Files
	// files maps a key to the content written there, or to nil once the
	// file is deleted.
	files map[string]*[]byte
	// dirs holds the keys of the directories that writes created.
	dirs map[string]bool
}

func newTree(base Files) *tree {
	if base == nil {
		base = emptyFiles{}
	}
	return &tree{base: base, files: map[string]*[]byte{}, dirs: map[string]bool{}}
}

// key is the cleaned form of p that the overlay is keyed by: relative,
// without ".", ".." or empty segments; "" is the root.
func key(p string) string {
	return strings.TrimPrefix(path.Clean("/"+p), "/")
}

// read returns the current content of the file at p. A missing file gives
// an error matching fs.ErrNotExist, a directory one matching ErrIsDir.
func (t *tree) read(p string) ([]byte, error) {
	k := key(p)
	if k == "" || t.dirs[k] {
		return nil, ErrIsDir
	}
	if c, ok := t.files[k]; ok {
		if c == nil {
			return nil, fs.ErrNotExist
		}
		return *c, nil
	}
	return t.base.ReadFile(p)
}

// prepareWrite checks that a file can be written at p, replacing what is
// there, with its parent directories created as needed, and returns the
// content it replaces: nil when there is no file, never nil when there is.
func (t *tree) prepareWrite(p string) ([]byte, error) {
	old, err := t.read(p)
	switch {
	case err == nil:
		if old == nil {
			old = []byte{}
		}
	case errors.Is(err, fs.ErrNotExist):
		old = nil
	default:
		return nil, err
	}
	if err := t.checkParents(key(p)); err != nil {
		return nil, err
	}
	return old, nil
}

// checkParents checks that every ancestor of k is a directory or can be
// created as one: the nearest that exists must be a directory.
func (t *tree) checkParents(k string) error {
	for a := path.Dir(k); a != "." && a != "/"; a = path.Dir(a) {
		if t.dirs[a] {
			return nil
		}
		if c, ok := t.files[a]; ok {
			if c == nil {
				// A deleted file: its own parent was a directory.
				return nil
			}
			return fmt.Errorf("%w: %s is a file", ErrNotDir, a)
		}
		_, err := t.base.ReadFile(a)
		switch {
		case err == nil:
			return fmt.Errorf("%w: %s is a file", ErrNotDir, a)
		case errors.Is(err, ErrIsDir):
			return nil
		case errors.Is(err, fs.ErrNotExist):
			// Created as needed; look further up.
		default:
			return fmt.Errorf("reading %s: %w", a, err)
		}
	}
	return nil
}

// write records content as the file at p and its ancestors as
// directories.
func (t *tree) write(p string, content []byte) {
	k := key(p)
	t.files[k] = &content
	for a := path.Dir(k); a != "." && a != "/"; a = path.Dir(a) {
		if t.dirs[a] {
			break
		}
		t.dirs[a] = true
		delete(t.files, a) // a deleted file that becomes a directory
	}
}

// remove records that the file at p is gone; its directory stays.
func (t *tree) remove(p string) {
	t.files[key(p)] = nil
}

// emptyFiles is a tree with nothing in it.
type emptyFiles struct{}

func (emptyFiles) ReadFile(p string) ([]byte, error) {
	if key(p) == "" {
		return nil, ErrIsDir
	}
	return nil, fs.ErrNotExist
}
