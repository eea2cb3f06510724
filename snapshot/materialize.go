package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/vfsd/vfsd/vfs"
)

// MaterializeReport tells what Materialize wrote.
type MaterializeReport struct {
	Files    int64 `json:"files"`
	Dirs     int64 `json:"dirs"`
	Symlinks int64 `json:"symlinks"`
	Special  int64 `json:"special,omitempty"` // fifos, sockets and devices
	Links    int64 `json:"links,omitempty"`   // further names of hard-linked files
	Bytes    int64 `json:"bytes"`
	// Skipped lists what could not be written as the session has it:
	// devices and other owners when not root, extended attributes the
	// target file system or the caller's privileges refuse.
	Skipped []MaterializeSkip `json:"skipped,omitempty"`
}

// MaterializeSkip is one thing Materialize left out, and why.
type MaterializeSkip struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Materialize writes src — a snapshot, or a live session's current state —
// as an ordinary directory tree at dir, which must not exist or be empty:
// files with their content, directories, symlinks, fifos, sockets and (as
// root) devices, with their modes (setuid, setgid and sticky included),
// owners (as root), extended attributes, access and modification times,
// and hard links as hard links (later names linked to the first written).
// Content is copied with reflink or copy_file_range where the filesystem
// allows. It is for consumers that cannot use a FUSE mount. What cannot be
// written (a device or another owner without root, an attribute the file
// system refuses) is listed in the report's Skipped, not an error.
func (r *Repo) Materialize(ctx context.Context, src Source, dir string) (MaterializeReport, error) {
	var rep MaterializeReport
	tree := vfs.Tree{}
	if src.Session != nil {
		f, err := src.Session.Freeze(ctx)
		if err != nil {
			return rep, fmt.Errorf("materialize: %w", err)
		}
		defer f.Release()
		tree = f.Tree
	} else {
		snap, err := r.Get(ctx, src.Snapshot)
		if err != nil {
			return rep, fmt.Errorf("materialize: %w", err)
		}
		tree = snap.Tree
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return rep, fmt.Errorf("materialize: %w", err)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) > 0 {
		return rep, &vfs.Error{Op: "materialize", Path: dir, Code: vfs.CodeExists, Msg: "target directory is not empty; choose a new or empty directory"}
	}
	// Every node is written: read the whole tree now, so that a directory
	// that cannot be read fails here, not halfway.
	tree, err := tree.Expand()
	if err != nil {
		return rep, fmt.Errorf("materialize: %w", err)
	}
	m := &materializer{rep: &rep, root: os.Geteuid() == 0, tree: tree}
	var dirs []vfs.Path
	first := map[uint64]string{} // hard-linked inode → its first name written
	err = tree.Walk(vfs.Root, func(p vfs.Path, n vfs.Node) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		target := filepath.Join(dir, string(p))
		if !n.IsDir() && n.Nlink > 1 {
			if name, ok := first[n.Ino]; ok {
				rep.Links++
				return os.Link(name, target)
			}
			first[n.Ino] = target
		}
		switch n.Kind {
		case vfs.KindDir:
			dirs = append(dirs, p)
			rep.Dirs++
			if p.IsRoot() {
				return nil
			}
			return os.Mkdir(target, 0o700)
		case vfs.KindSymlink:
			made, err := m.symlink(p, target, n)
			if err != nil || !made {
				return err
			}
			rep.Symlinks++
		case vfs.KindFile:
			rep.Files++
			rep.Bytes += n.Size
			if err := r.materializeFile(ctx, target, n); err != nil {
				return err
			}
		default:
			made, err := m.special(p, target, n)
			if err != nil || !made {
				return err
			}
			rep.Special++
		}
		return m.meta(p, target, n)
	})
	if err != nil {
		return rep, fmt.Errorf("materialize: %w", err)
	}
	// Directory modes and times last, deepest first: writing into a
	// directory changes its mtime, and a read-only one refuses new entries.
	for _, p := range slices.Backward(dirs) {
		n, _, err := tree.Lookup(p) // expanded above: nothing left to read
		if err != nil {
			return rep, fmt.Errorf("materialize: %w", err)
		}
		if err := m.meta(p, filepath.Join(dir, string(p)), n); err != nil {
			return rep, fmt.Errorf("materialize: %w", err)
		}
	}
	return rep, nil
}

// materializer carries one Materialize.
type materializer struct {
	rep  *MaterializeReport
	root bool     // the process may chown, create devices and set trusted.*
	tree vfs.Tree // what is materialized (Windows links to directories by what they point to)
}

func (m *materializer) skip(p vfs.Path, reason string) {
	m.rep.Skipped = append(m.rep.Skipped, MaterializeSkip{Path: string(p), Reason: reason})
}

// meta gives the just-created target (never followed if a symlink) n's
// owner, extended attributes, mode and times — the owner first, as chown
// clears setuid and setgid.
func (m *materializer) meta(p vfs.Path, target string, n vfs.Node) error {
	if err := m.ownerXattrs(p, target, n); err != nil {
		return err
	}
	if n.Kind != vfs.KindSymlink {
		if err := os.Chmod(target, n.FileMode()&vfs.PermBits); err != nil {
			return err
		}
	}
	return setTimes(target, n)
}

func (r *Repo) materializeFile(ctx context.Context, target string, n vfs.Node) error {
	b, err := r.openObject(ctx, Blobs, n.Blob)
	if err != nil {
		return err
	}
	defer b.Close()
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow, fs.FileMode(0o600))
	if err != nil {
		return err
	}
	err = vfs.CopyBlob(f, b, n.Size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errors.Join(err, os.Remove(target))
	}
	return nil
}
