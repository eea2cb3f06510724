package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/vfs"
)

// MaterializeReport tells what Materialize wrote.
type MaterializeReport struct {
	Files    int64 `json:"files"`
	Dirs     int64 `json:"dirs"`
	Symlinks int64 `json:"symlinks"`
	Bytes    int64 `json:"bytes"`
}

// Materialize writes src — a snapshot, or a live session's current state —
// as an ordinary directory tree at dir, which must not exist or be empty:
// files with their content, modes and modification times, directories and
// symlinks. Content is copied with reflink or copy_file_range where the
// filesystem allows. It is for consumers that cannot use a FUSE mount.
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
	var dirs []vfs.Path
	err := tree.Walk(vfs.Root, func(p vfs.Path, n vfs.Node) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		target := filepath.Join(dir, string(p))
		switch n.Kind {
		case vfs.KindDir:
			dirs = append(dirs, p)
			rep.Dirs++
			if p.IsRoot() {
				return nil
			}
			return os.Mkdir(target, 0o700)
		case vfs.KindSymlink:
			rep.Symlinks++
			if err := os.Symlink(n.Target, target); err != nil {
				return err
			}
			t := unix.NsecToTimespec(n.Updated * 1e6)
			return unix.UtimesNanoAt(unix.AT_FDCWD, target, []unix.Timespec{t, t}, unix.AT_SYMLINK_NOFOLLOW)
		default:
			rep.Files++
			rep.Bytes += n.Size
			return r.materializeFile(ctx, target, n)
		}
	})
	if err != nil {
		return rep, fmt.Errorf("materialize: %w", err)
	}
	// Directory modes and times last, deepest first: writing into a
	// directory changes its mtime, and a read-only one refuses new entries.
	for _, p := range slices.Backward(dirs) {
		n, _ := tree.Get(p)
		target := filepath.Join(dir, string(p))
		if err := os.Chmod(target, n.Mode); err != nil {
			return rep, fmt.Errorf("materialize: %w", err)
		}
		if err := os.Chtimes(target, n.UpdatedAt(), n.UpdatedAt()); err != nil {
			return rep, fmt.Errorf("materialize: %w", err)
		}
	}
	return rep, nil
}

func (r *Repo) materializeFile(ctx context.Context, target string, n vfs.Node) error {
	b, err := r.store.Open(ctx, Blobs, n.Blob)
	if err != nil {
		return err
	}
	defer b.Close()
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, fs.FileMode(0o600))
	if err != nil {
		return err
	}
	err = vfs.CopyBlob(f, b, n.Size)
	if err == nil {
		err = f.Chmod(n.Mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chtimes(target, n.UpdatedAt(), n.UpdatedAt())
	}
	if err != nil {
		return errors.Join(err, os.Remove(target))
	}
	return nil
}
