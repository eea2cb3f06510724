//go:build !windows

package atomicfile

import (
	"os"

	"github.com/google/renameio/v2"
)

// File is a pending file: written, then CloseAtomicallyReplace puts it in
// place, or Cleanup (always deferred) removes it.
type File struct{ *renameio.PendingFile }

// New creates the pending file for filename with permission perm; dir,
// when not empty, is where the temporary file is created.
func New(filename string, perm os.FileMode, dir string) (*File, error) {
	opts := []renameio.Option{renameio.WithPermissions(perm)}
	if dir != "" {
		opts = append(opts, renameio.WithTempDir(dir))
	}
	t, err := renameio.NewPendingFile(filename, opts...)
	if err != nil {
		return nil, err
	}
	return &File{t}, nil
}

// WriteFile atomically replaces filename with data, with permission perm
// (an existing file keeps its own). dir, when not empty, is where the
// temporary file is created (it must be on the same filesystem as
// filename); else filename's directory.
func WriteFile(filename string, data []byte, perm os.FileMode, dir string) error {
	var opts []renameio.Option
	if dir != "" {
		opts = append(opts, renameio.WithTempDir(dir))
	}
	return renameio.WriteFile(filename, data, perm, opts...)
}
