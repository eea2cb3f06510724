//go:build linux && !vfsd_osroot

package hostmount

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/internal/ignore"
	"github.com/vfsd/vfsd/vfs"
)

func idOf(st *unix.Stat_t) fileID {
	return fileID{dev: st.Dev, ino: st.Ino, size: st.Size, mtimeNs: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
}

// scan walks the mount. The host path may pass through symlinks that stay
// inside the root; it is resolved once, to its real path beneath the root,
// and every later open starts from there and refuses symlinks.
func (sc *scanner) scan(rootRel string) error {
	fd, err := openBeneath(sc.root.fd, rootRel, unix.O_PATH, false)
	if err != nil {
		return openErr(sc.mp.hostPath, err)
	}
	defer unix.Close(fd)
	real, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	if err != nil {
		return openErr(sc.mp.hostPath, err)
	}
	if rootRel, err = realRel(sc.root, real); err != nil {
		return &vfs.Error{Op: "stage folder", Path: sc.mp.hostPath, Code: vfs.CodeForbidden, Msg: "resolves outside its allowed root"}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return openErr(sc.mp.hostPath, err)
	}
	if sc.private.holds(real) || sc.private.is(&st) {
		return &vfs.Error{Op: "stage folder", Path: sc.mp.hostPath, Code: vfs.CodeForbidden,
			Msg: "is the daemon's own data (its data directory, socket or token file) and is never staged; mount a folder outside it"}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		dfd, err := noAtime(func(flags int) (int, error) { return openBeneath(sc.root.fd, rootRel, flags, false) }, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW)
		if err != nil {
			return openErr(sc.mp.hostPath, err)
		}
		sc.add(entry{path: sc.mp.mountPath, kind: vfs.KindDir, meta: sc.meta("", &st, xattrsOfFd(dfd, false))})
		if sc.visiting != nil {
			sc.visiting[[2]uint64{st.Dev, st.Ino}] = true
		}
		var ign *ignore.Stack
		return sc.dir(dfd, "", rootRel, sc.mp.mountPath, ign)
	case unix.S_IFREG:
		sc.addFile(entry{path: sc.mp.mountPath, openRel: rootRel}, "", &st, xattrsOfFd(fd, true))
		return nil
	}
	return &vfs.Error{Op: "stage folder", Path: sc.mp.hostPath, Code: vfs.CodeInvalid, Msg: "is neither a directory nor a regular file"}
}

// realRel returns real — a resolved absolute path — relative to r.
func realRel(r root, real string) (string, error) {
	rel, ok := within(r.path, real)
	if !ok {
		return "", fmt.Errorf("%s is outside %s", real, r.path)
	}
	return rel, nil
}

// meta returns an entry's metadata, its extended attributes read through
// x, reporting those over the engine's bounds.
func (sc *scanner) meta(rel string, st *unix.Stat_t, x xattrIO) meta {
	m := metaOf(st)
	var over []string
	m.xattrs, over = readXattrs(x, sc.privileged)
	for _, name := range over {
		sc.skipped = append(sc.skipped, Skip{HostPath: sc.hostPath(rel), Reason: SkipXattr, Xattr: name})
	}
	return m
}

func (sc *scanner) add(e entry) { sc.entries = append(sc.entries, e) }

// linked marks e as a name of a multiply-linked host entry, and as a
// further name when another was seen; it reports the latter.
func (sc *scanner) linked(e *entry, st *unix.Stat_t) bool {
	if st.Nlink <= 1 {
		return false
	}
	e.link = [2]uint64{st.Dev, st.Ino}
	if sc.links == nil {
		sc.links = map[[2]uint64]bool{}
	}
	e.second = sc.links[e.link]
	sc.links[e.link] = true
	return e.second
}

func (sc *scanner) addFile(e entry, rel string, st *unix.Stat_t, x xattrIO) {
	e.kind, e.meta, e.size, e.id = vfs.KindFile, sc.meta(rel, st, x), st.Size, idOf(st)
	if sc.linked(&e, st) {
		sc.add(e) // the same content as its first name: counted once
		return
	}
	sc.add(e)
	sc.files++
	sc.bytes += st.Size
	if sc.progress != nil {
		sc.progress(sc.files, sc.bytes)
	}
}

// dir walks the directory open as dfd (which it closes): rel is its path
// relative to the host path, openRel relative to the root, spath in the
// session.
func (sc *scanner) dir(dfd int, rel, openRel string, spath vfs.Path, ign *ignore.Stack) error {
	f := fileOf(dfd, sc.hostPath(rel))
	defer f.Close()
	if err := sc.ctx.Err(); err != nil {
		return err
	}
	names, err := readNames(f)
	if err != nil {
		sc.skip(rel, SkipUnreadable)
		return nil
	}
	if sc.mp.Gitignore && slices.Contains(names, ".gitignore") {
		ign = ign.Push(rel, readIgnoreFile(dfd))
	}
	for _, name := range names {
		childRel := join(rel, name)
		childOpen := join(openRel, name)
		if !utf8.ValidString(name) {
			sc.skip(childRel, SkipNotUTF8)
			continue
		}
		if sc.asciiOnly && !isASCII(name) {
			sc.skip(childRel, SkipNotASCII)
			continue
		}
		child, err := vfs.ParsePath(string(spath.Join(name)))
		if err != nil || child.Base() != name {
			sc.skip(childRel, SkipBadName)
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if !errors.Is(err, unix.ENOENT) { // gone since listed: nothing to import
				sc.skip(childRel, SkipUnreadable)
			}
			continue
		}
		isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
		if sc.mp.excluded(childRel, isDir) || ign.Ignored(childRel, isDir) {
			continue
		}
		if err := sc.child(dfd, name, childRel, childOpen, child, &st, ign, 0); err != nil {
			return err
		}
	}
	return nil
}

// child imports one directory entry of the directory open as dfd. openRel
// is its real path relative to the root: for the target of a followed
// symlink, where the symlink leads.
func (sc *scanner) child(dfd int, name, rel, openRel string, spath vfs.Path, st *unix.Stat_t, ign *ignore.Stack, links int) error {
	if sc.private.is(st) {
		sc.skip(rel, SkipPrivate)
		return nil
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		if sc.mp.included(rel) {
			x, done := sc.xattrsOf(dfd, name, openRel, links)
			sc.addFile(entry{path: spath, openRel: openRel}, rel, st, x)
			done()
		}
	case unix.S_IFDIR:
		if sc.visiting != nil {
			key := [2]uint64{st.Dev, st.Ino}
			if sc.visiting[key] {
				sc.skip(rel, SkipLoop)
				return nil
			}
			sc.visiting[key] = true
			defer delete(sc.visiting, key)
		}
		// Opened relative to its parent's descriptor, refusing symlinks: if
		// the directory was swapped for a symlink since it was listed, the
		// open fails instead of following it. A directory reached through
		// a followed symlink is opened beneath the root instead.
		if testHookBeforeOpenDir != nil {
			testHookBeforeOpenDir(sc.hostPath(rel))
		}
		var cfd int
		var err error
		if links > 0 {
			cfd, err = noAtime(func(flags int) (int, error) { return openBeneath(sc.root.fd, openRel, flags, true) }, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW)
		} else {
			cfd, err = noAtime(func(flags int) (int, error) { return openBeneath(dfd, name, flags, true) }, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW)
		}
		if err != nil {
			sc.skip(rel, SkipChanged)
			return nil
		}
		var now unix.Stat_t
		if unix.Fstat(cfd, &now) != nil || now.Dev != st.Dev || now.Ino != st.Ino {
			unix.Close(cfd)
			sc.skip(rel, SkipChanged)
			return nil
		}
		sc.add(entry{path: spath, kind: vfs.KindDir, meta: sc.meta(rel, st, xattrsOfFd(cfd, false))})
		return sc.dir(cfd, rel, openRel, spath, ign)
	case unix.S_IFLNK:
		return sc.symlink(dfd, name, rel, openRel, spath, st, ign, links)
	case unix.S_IFIFO, unix.S_IFSOCK, unix.S_IFCHR, unix.S_IFBLK:
		sc.special(dfd, name, rel, openRel, spath, st, links)
	default:
		sc.skip(rel, SkipSpecial)
	}
	return nil
}

// special imports a fifo, socket or (as root) device as a node of its
// kind. Sockets are imported as cp -a and rsync -a copy them: the name,
// whose listener stays on the host (nothing in the session can reach it).
// Devices need root, as creating one does: a daemon that could not apply
// one back, or whose staging would hand a non-root caller a device node,
// leaves them out.
func (sc *scanner) special(dfd int, name, rel, openRel string, spath vfs.Path, st *unix.Stat_t, links int) {
	kind := vfs.KindFromUnix(st.Mode)
	if (kind == vfs.KindCharDev || kind == vfs.KindBlockDev) && !sc.privileged {
		sc.skip(rel, SkipDevice)
		return
	}
	if !sc.mp.included(rel) {
		return
	}
	x, done := sc.xattrsOf(dfd, name, openRel, links)
	defer done()
	e := entry{path: spath, kind: kind, meta: sc.meta(rel, st, x)}
	sc.linked(&e, st)
	sc.add(e)
}

// xattrsOf reads the attributes of name in dfd — or, for the target of a
// followed symlink, of openRel beneath the root, resolved again without
// symlinks. done releases what it opened.
func (sc *scanner) xattrsOf(dfd int, name, openRel string, links int) (x xattrIO, done func()) {
	if links == 0 {
		return xattrsAt(dfd, name), func() {}
	}
	fd, err := openBeneath(sc.root.fd, openRel, unix.O_PATH|unix.O_NOFOLLOW, true)
	if err != nil {
		return xattrIO{list: func([]byte) (int, error) { return 0, err }}, func() {}
	}
	return xattrsOfFd(fd, true), func() { unix.Close(fd) }
}

// symlink imports a symlink as a symlink, or what it points to when the
// mount follows symlinks and the target stays inside the root.
func (sc *scanner) symlink(dfd int, name, rel, openRel string, spath vfs.Path, lst *unix.Stat_t, ign *ignore.Stack, links int) error {
	if !sc.mp.FollowSymlinks {
		if !sc.mp.included(rel) {
			return nil
		}
		target, err := readlinkat(dfd, name)
		switch {
		case err != nil:
			sc.skip(rel, SkipChanged)
		case !utf8.ValidString(target):
			sc.skip(rel, SkipTargetUTF8)
		default:
			m := sc.meta(rel, lst, xattrsAt(dfd, name)) // lst: as listed, before readlink moved its atime
			m.mode = vfs.SymlinkMode
			sc.add(entry{path: spath, kind: vfs.KindSymlink, meta: m, target: target})
		}
		return nil
	}
	if links >= maxSymlinkDepth {
		sc.skip(rel, SkipLoop)
		return nil
	}
	// Resolve beneath the root, symlinks allowed only while they stay inside.
	fd, err := openBeneath(sc.root.fd, openRel, unix.O_PATH, false)
	if err != nil {
		switch {
		case errors.Is(err, unix.EXDEV):
			sc.skip(rel, SkipOutside)
		case errors.Is(err, unix.ENOENT):
			sc.skip(rel, SkipDangling)
		case errors.Is(err, unix.ELOOP):
			sc.skip(rel, SkipLoop)
		default:
			sc.skip(rel, SkipUnreadable)
		}
		return nil
	}
	var st unix.Stat_t
	err = unix.Fstat(fd, &st)
	real, rerr := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	unix.Close(fd)
	if err != nil || rerr != nil {
		sc.skip(rel, SkipUnreadable)
		return nil
	}
	realOpen, err := realRel(sc.root, real)
	if err != nil {
		sc.skip(rel, SkipOutside)
		return nil
	}
	isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	if isDir && (sc.mp.excluded(rel, true) || ign.Ignored(rel, true)) {
		return nil
	}
	return sc.child(dfd, name, rel, realOpen, spath, &st, ign, links+1)
}

// readIgnoreFile reads the .gitignore of the directory open as dfd,
// refusing symlinks and anything but a small regular file.
func readIgnoreFile(dfd int) *ignore.Rules {
	fd, err := openBeneath(dfd, ".gitignore", unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, true)
	if err != nil {
		return nil
	}
	f := fileOf(fd, ".gitignore")
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxIgnoreFile {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(f, maxIgnoreFile))
	if err != nil {
		return nil
	}
	return ignore.Parse(data)
}

func readlinkat(dfd int, name string) (string, error) {
	buf := make([]byte, vfs.MaxPathBytes+1)
	n, err := unix.Readlinkat(dfd, name, buf)
	if err != nil {
		return "", err
	}
	if n > vfs.MaxPathBytes {
		return "", fmt.Errorf("symlink target too long")
	}
	return string(buf[:n]), nil
}
