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
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

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
	proc := procCreds{uid: uint32(os.Geteuid()), gid: uint32(os.Getegid()), umask: processUmask()}
	if err := parallel(ctx, groups, func(g metaJob) error {
		for _, j := range g.group {
			if err := writeNode(dir, j.p, j.n, def, proc); err != nil {
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
// A regular file gets everything through the descriptor that created it
// (no second path lookup), and only the calls that change something: it is
// created with its mode (fchmod only where the umask or special bits need
// it) and owned by this process (fchown only for another owner).
func writeNode(dir string, p vfs.Path, n vfs.Node, def vfs.Owner, proc procCreds) error {
	target := filepath.Join(dir, string(p))
	switch n.Kind {
	case vfs.KindFile:
		if n.Size > 0 && n.Blob.IsZero() {
			return fmt.Errorf("%s: content is not in the blob store; freeze the session first", p)
		}
		perm := n.UnixMode() & 0o777
		fd, err := unix.Open(target, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
		if err != nil {
			return &os.PathError{Op: "create", Path: target, Err: err}
		}
		err = writeFile(fd, n, perm, def, proc)
		if cerr := unix.Close(fd); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		return nil
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

// writeFile gives the regular file fd, just created with mode perm, n's
// size and redirect into the data-only layer, owner, extended attributes,
// mode and times.
func writeFile(fd int, n vfs.Node, perm uint32, def vfs.Owner, proc procCreds) error {
	if n.Size > 0 {
		if err := unix.Ftruncate(fd, n.Size); err != nil {
			return fmt.Errorf("truncate: %w", err)
		}
		if err := unix.Fsetxattr(fd, xattrMetacopy, nil, 0); err != nil {
			return fmt.Errorf("extended attribute %q: %w", xattrMetacopy, err)
		}
		if err := unix.Fsetxattr(fd, xattrRedirect, []byte(blobRedirect(n.Blob)), 0); err != nil {
			return fmt.Errorf("extended attribute %q: %w", xattrRedirect, err)
		}
	}
	uid, gid := n.Uid, n.Gid
	if !n.HasOwner() {
		uid, gid = def.Uid, def.Gid
	}
	// A new file is this process's (its directory is not set-group-ID
	// while the layer is built); chown clears the set-ID bits, so it goes
	// before the mode.
	if uid != proc.uid || gid != proc.gid {
		if err := unix.Fchown(fd, int(uid), int(gid)); err != nil {
			return fmt.Errorf("chown: %w", err)
		}
	}
	for name, value := range n.Xattrs.Map() {
		if err := unix.Fsetxattr(fd, layerXattrName(name), value, 0); err != nil {
			return fmt.Errorf("extended attribute %q: %w", name, err)
		}
	}
	if mode := n.UnixMode() & 0o7777; mode != perm&^proc.umask {
		if err := unix.Fchmod(fd, mode); err != nil {
			return fmt.Errorf("chmod: %w", err)
		}
	}
	ts := [2]unix.Timespec{unix.NsecToTimespec(n.Atime), unix.NsecToTimespec(n.Mtime)}
	// futimens(2): utimensat on the descriptor itself (a NULL path).
	if _, _, errno := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0); errno != 0 {
		return fmt.Errorf("set times: %w", errno)
	}
	return nil
}

// procCreds is what the files this process creates get: its effective
// user and group, and its umask.
type procCreds struct {
	uid, gid, umask uint32
}

// processUmask returns the process's umask, from /proc/self/status
// (reading it with umask(2) would change it for a moment); all bits set
// when unknown, so that every mode is set explicitly.
func processUmask() uint32 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0o7777
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Umask:"); ok {
			if m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
				return uint32(m)
			}
		}
	}
	return 0o7777
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
