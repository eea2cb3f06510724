// Package osfile opens the files vfsd keeps open while other code renames
// or removes them: session journals and upper files, store objects. On
// Unix it is os.OpenFile. On Windows os.OpenFile shares reading and writing
// but not deletion, so a file open anywhere in the process can be neither
// removed nor renamed; this package's opens share deletion too, which gives
// Unix's "remove or rename while open" for these files.
package osfile

import "os"

// Open opens name for reading (see OpenFile).
func Open(name string) (*os.File, error) { return OpenFile(name, os.O_RDONLY, 0) }
