//go:build linux

package overlay

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// The overlay xattrs of the metadata layer (Documentation/filesystems/
// overlayfs.rst, "Metadata only copy up" and "Data-only lower layers").
const (
	xattrPrefix   = "trusted.overlay."
	xattrMetacopy = xattrPrefix + "metacopy" // empty: the content is elsewhere
	xattrRedirect = xattrPrefix + "redirect" // where: a path in the data-only layer
	xattrOpaque   = xattrPrefix + "opaque"   // "y": a directory hides the lower ones
	// xattrEscape is how a session's own trusted.overlay.X attribute is
	// stored in a layer: overlayfs shows trusted.overlay.overlay.X as
	// trusted.overlay.X ("escaped xattrs").
	xattrEscape = xattrPrefix + "overlay."
)

// metaFormat names the layout BuildMeta writes; it is part of the cache key.
const metaFormat = "vfsd-overlay-meta/1"

// MetaKey is the cache key of snapshot snap's metadata layer: the digest
// of its root manifest (which names every node's metadata and content
// below it) and of the root's own node. Two snapshots of the same state
// share it.
func MetaKey(snap *snapshot.Snapshot) string {
	h := vfs.NewHasher()
	h.Write([]byte(metaFormat + "\x00"))
	h.Write(snap.Record.Root[:])
	h.Write(snap.Record.RootDir.Node)
	fmt.Fprintf(h, "\x00%d\x00%o", snap.Record.RootDir.Mode, snap.Record.RootDir.Ino)
	return vfs.SumHash(h).String()[:32]
}

// BuildMeta returns the metadata layer of snap under cacheDir, building it
// unless an earlier build of the same state is there. The layer holds one
// node per node of the tree: directories, symlinks, fifos, sockets and
// devices as themselves, and every non-empty regular file as a sparse file
// of its size that names its blob in the data-only layer
// (trusted.overlay.metacopy, and trusted.overlay.redirect = "/xx/<hash>",
// the blob's path in the store's blobs directory); all with the node's
// owner (def for nodes without one), mode, times and extended attributes,
// and hard links as hard links. Files are written by several goroutines.
// A layer is built in a temporary directory and renamed into place, so a
// layer in the cache is always whole; it is never changed afterwards.
func BuildMeta(ctx context.Context, snap *snapshot.Snapshot, cacheDir string, def vfs.Owner) (MetaReport, error) {
	start := time.Now()
	dir := filepath.Join(cacheDir, MetaKey(snap))
	rep := MetaReport{Dir: dir}
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		rep.Cached, rep.Duration = true, time.Since(start)
		return rep, nil
	}
	if err := os.MkdirAll(cacheDir, 0o700); err != nil {
		return rep, fmt.Errorf("overlay metadata layer: %w", err)
	}
	tmp, err := os.MkdirTemp(cacheDir, ".build-")
	if err != nil {
		return rep, fmt.Errorf("overlay metadata layer: %w", err)
	}
	n, err := writeMeta(ctx, snap.Tree, tmp, def)
	if err == nil {
		err = syncDir(tmp)
	}
	if err == nil {
		err = os.Rename(tmp, dir)
		if errors.Is(err, os.ErrExist) || errors.Is(err, unix.ENOTEMPTY) { // built meanwhile by another mount
			err = nil
		}
	}
	if err != nil {
		_ = os.RemoveAll(tmp)
		return rep, fmt.Errorf("overlay metadata layer %s: %w", dir, err)
	}
	_ = os.RemoveAll(tmp) // when another build won the rename
	rep.Entries, rep.Duration = n, time.Since(start)
	return rep, nil
}

// syncDir syncs the filesystem holding dir, so a layer is whole on disk
// before it is used.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Syncfs(int(f.Fd()))
}

// metaJob is one non-directory node to write.
type metaJob struct {
	p     vfs.Path
	n     vfs.Node
	group []metaJob // the files of directory p, for a job per directory
}

// writeMeta writes tree under dir (which exists and stands for the root):
// directories first (parents before children), then the other nodes in
// parallel (the first name of each hard-linked node, then its other
// names), then the directories' metadata, deepest first.
func writeMeta(ctx context.Context, tree vfs.Tree, dir string, def vfs.Owner) (int, error) {
	var dirs []metaJob
	var files, links []metaJob
	first := map[uint64]bool{}
	err := tree.Walk(vfs.Root, func(p vfs.Path, n vfs.Node) error {
		switch {
		case n.IsDir():
			dirs = append(dirs, metaJob{p: p, n: n})
		case n.Nlink > 1 && first[n.Ino]:
			links = append(links, metaJob{p: p, n: n})
		default:
			if n.Nlink > 1 {
				first[n.Ino] = true
			}
			files = append(files, metaJob{p: p, n: n})
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, d := range dirs {
		if d.p.IsRoot() {
			continue
		}
		if err := os.Mkdir(filepath.Join(dir, string(d.p)), 0o700); err != nil {
			return 0, err
		}
	}
	// One directory per job: creating files in one directory from several
	// threads only contends for its lock.
	var groups []metaJob
	for i := 0; i < len(files); {
		j := i
		for j < len(files) && files[j].p.Parent() == files[i].p.Parent() {
			j++
		}
		groups = append(groups, metaJob{p: files[i].p.Parent(), group: files[i:j]})
		i = j
	}
	if err := parallel(ctx, groups, func(g metaJob) error {
		for _, j := range g.group {
			if err := writeNode(dir, j.p, j.n, def); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return 0, err
	}
	names := map[uint64]string{}
	for _, f := range files {
		if f.n.Nlink > 1 {
			names[f.n.Ino] = filepath.Join(dir, string(f.p))
		}
	}
	for _, l := range links {
		if err := os.Link(names[l.n.Ino], filepath.Join(dir, string(l.p))); err != nil {
			return 0, err
		}
	}
	slices.Reverse(dirs)
	if err := parallel(ctx, dirs, func(j metaJob) error { return setMeta(filepath.Join(dir, string(j.p)), j.n, def) }); err != nil {
		return 0, err
	}
	return len(dirs) + len(files) + len(links), nil
}

// parallel runs fn on every job with GOMAXPROCS goroutines; the first error
// stops it.
func parallel(ctx context.Context, jobs []metaJob, fn func(metaJob) error) error {
	workers := min(runtime.GOMAXPROCS(0)*2, len(jobs))
	if workers <= 1 {
		for _, j := range jobs {
			if err := fn(j); err != nil {
				return err
			}
		}
		return ctx.Err()
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		ferr error
		next int
	)
	take := func() (metaJob, bool) {
		mu.Lock()
		defer mu.Unlock()
		if ferr != nil || next >= len(jobs) {
			return metaJob{}, false
		}
		if err := ctx.Err(); err != nil {
			ferr = err
			return metaJob{}, false
		}
		next++
		return jobs[next-1], true
	}
	for range workers {
		wg.Go(func() {
			for j, ok := take(); ok; j, ok = take() {
				if err := fn(j); err != nil {
					mu.Lock()
					if ferr == nil {
						ferr = err
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return ferr
}

// blobRedirect is the redirect of a file whose content is blob h: its path
// in the store's blobs directory, the data-only layer.
func blobRedirect(h vfs.Hash) string {
	hx := h.String()
	return "/" + hx[:2] + "/" + hx
}

// writeNode creates the non-directory node n at dir/p, with its metadata.
func writeNode(dir string, p vfs.Path, n vfs.Node, def vfs.Owner) error {
	target := filepath.Join(dir, string(p))
	switch n.Kind {
	case vfs.KindFile:
		f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		if n.Size > 0 {
			if n.Blob.IsZero() {
				f.Close()
				return fmt.Errorf("%s: content is not in the blob store; freeze the session first", p)
			}
			err = f.Truncate(n.Size)
			if err == nil {
				err = unix.Fsetxattr(int(f.Fd()), xattrMetacopy, nil, 0)
			}
			if err == nil {
				err = unix.Fsetxattr(int(f.Fd()), xattrRedirect, []byte(blobRedirect(n.Blob)), 0)
			}
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	case vfs.KindSymlink:
		if err := os.Symlink(n.Target, target); err != nil {
			return err
		}
	default:
		if err := unix.Mknod(target, n.UnixMode()&^0o7777|0o600, int(n.Rdev)); err != nil {
			return fmt.Errorf("%s: mknod: %w", p, err)
		}
	}
	return setMeta(target, n, def)
}

// setMeta gives target (never followed) n's owner, extended attributes,
// mode and times; the owner first, as chown clears setuid and setgid.
func setMeta(target string, n vfs.Node, def vfs.Owner) error {
	uid, gid := n.Uid, n.Gid
	if !n.HasOwner() {
		uid, gid = def.Uid, def.Gid
	}
	if err := os.Lchown(target, int(uid), int(gid)); err != nil {
		return err
	}
	for name, value := range n.Xattrs.Map() {
		if err := unix.Lsetxattr(target, layerXattrName(name), value, 0); err != nil {
			return fmt.Errorf("%s: extended attribute %q: %w", target, name, err)
		}
	}
	if n.Kind != vfs.KindSymlink {
		if err := unix.Chmod(target, n.UnixMode()&0o7777); err != nil {
			return err
		}
	}
	ts := []unix.Timespec{unix.NsecToTimespec(n.Atime), unix.NsecToTimespec(n.Mtime)}
	return unix.UtimesNanoAt(unix.AT_FDCWD, target, ts, unix.AT_SYMLINK_NOFOLLOW)
}

// layerXattrName is the name under which a session attribute is stored in
// a layer: its own, except trusted.overlay.X, escaped.
func layerXattrName(name string) string {
	if rest, ok := strings.CutPrefix(name, xattrPrefix); ok {
		return xattrEscape + rest
	}
	return name
}

// sessionXattrName is the inverse of layerXattrName; ok is false for the
// overlay's own attributes, which are not the session's.
func sessionXattrName(name string) (string, bool) {
	if rest, ok := strings.CutPrefix(name, xattrEscape); ok {
		return xattrPrefix + rest, true
	}
	if strings.HasPrefix(name, xattrPrefix) {
		return "", false
	}
	return name, true
}
