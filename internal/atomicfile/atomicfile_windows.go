package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// File is a pending file: written, then CloseAtomicallyReplace puts it in
// place, or Cleanup (always deferred) removes it.
type File struct {
	*os.File
	path string
	done bool
}

// New creates the pending file for filename with permission perm (on
// Windows only its write bit counts); dir, when not empty, is where the
// temporary file is created.
func New(filename string, perm os.FileMode, dir string) (*File, error) {
	if dir == "" {
		dir = filepath.Dir(filename)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(filename)+".*.tmp")
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return &File{File: f, path: filename}, nil
}

// Cleanup removes the temporary file unless it was put in place.
func (t *File) Cleanup() error {
	if t.done {
		return nil
	}
	t.done = true
	t.File.Close()
	return os.Remove(t.File.Name())
}

// CloseAtomicallyReplace syncs and closes the file and renames it over the
// target.
func (t *File) CloseAtomicallyReplace() error {
	if err := t.File.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", t.File.Name(), err)
	}
	if err := t.File.Close(); err != nil {
		return err
	}
	if err := os.Rename(t.File.Name(), t.path); err != nil {
		return err
	}
	t.done = true
	return nil
}

// WriteFile atomically replaces filename with data, with permission perm.
// dir, when not empty, is where the temporary file is created (it must be
// on the same filesystem as filename); else filename's directory.
func WriteFile(filename string, data []byte, perm os.FileMode, dir string) error {
	t, err := New(filename, perm, dir)
	if err != nil {
		return err
	}
	defer t.Cleanup()
	if _, err := t.Write(data); err != nil {
		return err
	}
	return t.CloseAtomicallyReplace()
}
