//go:build linux

package bench

import (
	"archive/tar"
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// treeStats counts what a tree holds.
type treeStats struct {
	Files, Dirs, Symlinks, Bytes int64
}

// add counts one entry.
func (st *treeStats) add(mode fs.FileMode, size int64) {
	switch {
	case mode.IsDir():
		st.Dirs++
	case mode&fs.ModeSymlink != 0:
		st.Symlinks++
	case mode.IsRegular():
		st.Files++
		st.Bytes += size
	}
}

// scanTree counts the files, directories, symlinks and bytes of tree.
func scanTree(ctx context.Context, tree string) (treeStats, error) {
	var st treeStats
	err := filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		st.add(info.Mode(), info.Size())
		return nil
	})
	return st, err
}

// checkSpace fails unless the filesystem of work has room for the run: the
// tarball, and on every target twice the tree (a copy-on-write store may
// hold content twice), the large file and the small files.
func checkSpace(work string, tree treeStats, opts MountOptions, targets int) error {
	var sfs unix.Statfs_t
	if err := unix.Statfs(work, &sfs); err != nil {
		return fmt.Errorf("statfs %s: %w", work, err)
	}
	free := int64(sfs.Bavail) * int64(sfs.Bsize)
	perTarget := 2*tree.Bytes + int64(tree.Files+tree.Dirs)*4096 + int64(opts.WriteMB)<<20 + int64(opts.Creates)*4096
	need := tree.Bytes + int64(tree.Files)*1024 + int64(targets)*perTarget
	if free < need {
		return fmt.Errorf("not enough free space in %s (df): %.1f GB free, about %.1f GB needed "+
			"(the tarball, and per target (%d) twice the tree, the %d MiB file and %d small files); "+
			"free some space, pass --dir on a bigger filesystem, or lower --write-mb",
			work, float64(free)/1e9, float64(need)/1e9, targets, opts.WriteMB, opts.Creates)
	}
	return nil
}

// writeTarball packs tree into a tar file at dst, under the name srcName:
// directories, regular files (hard links as copies) and symlinks; other
// kinds are left out. It returns what it packed.
func writeTarball(ctx context.Context, tree, dst string) (treeStats, error) {
	var st treeStats
	f, err := os.Create(dst)
	if err != nil {
		return st, err
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	tw := tar.NewWriter(bw)
	err = filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(tree, p)
		if err != nil {
			return err
		}
		name := path.Join(srcName, filepath.ToSlash(rel))
		var link string
		switch mode := info.Mode(); {
		case mode.IsDir():
			name += "/"
		case mode&fs.ModeSymlink != 0:
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		case !mode.IsRegular():
			return nil // sockets, devices, pipes
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		hdr.Name, hdr.Uname, hdr.Gname = name, "", ""
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		st.add(info.Mode(), info.Size())
		if !info.Mode().IsRegular() {
			return nil
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		if n, err := io.Copy(tw, src); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		} else if n != info.Size() {
			return fmt.Errorf("%s: changed while packing (%d bytes, then %d)", p, info.Size(), n)
		}
		return nil
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Close()
	}
	return st, err
}
