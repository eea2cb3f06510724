//go:build !linux || vfsd_osroot

package hostmount

// The scan and the content import through os.Root (see root.go): the same
// walk as Linux's scan.go — globs, ignore files, the symlink policy, the
// private paths, the byte cap and the cache are shared — with directories
// held as os.Root and every name opened without following a symlink.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"unicode/utf8"

	"github.com/vfsd/vfsd/internal/ignore"
	"github.com/vfsd/vfsd/vfs"
)

// scan walks the mount. The host path may pass through symlinks that stay
// inside the root; it is resolved once, to its real path beneath the root,
// and every later open starts from there and refuses symlinks.
func (sc *scanner) scan(rootRel string) error {
	real, err := resolveBeneath(sc.root.r, rootRel)
	if err != nil {
		return openErr(sc.mp.hostPath, err)
	}
	fi, err := sc.root.r.Lstat(real)
	if err != nil {
		return openErr(sc.mp.hostPath, err)
	}
	if sc.private.holds(hostJoin(sc.root.path, real)) || sc.private.is(fi) {
		return &vfs.Error{Op: "stage folder", Path: sc.mp.hostPath, Code: vfs.CodeForbidden,
			Msg: "is the daemon's own data (its data directory, socket or token file) and is never staged; mount a folder outside it"}
	}
	switch {
	case fi.IsDir():
		d, err := openDirNoFollow(sc.root.r, real)
		if err != nil {
			return openErr(sc.mp.hostPath, err)
		}
		if now, err := d.Stat("."); err != nil || !os.SameFile(now, fi) {
			d.Close()
			return &vfs.Error{Op: "stage folder", Path: sc.mp.hostPath, Code: vfs.CodeConflict, Msg: "changed on the host while being opened; import again"}
		}
		sc.add(entry{path: sc.mp.mountPath, kind: vfs.KindDir, meta: infoMeta(fi)})
		if sc.visiting != nil {
			sc.onPath = append(sc.onPath, fi)
		}
		return sc.dir(d, "", real, sc.mp.mountPath, nil)
	case fi.Mode().IsRegular():
		id, nlink, err := fileIdentity(sc.root.r, real, fi)
		if err != nil {
			return openErr(sc.mp.hostPath, err)
		}
		sc.addFile(entry{path: sc.mp.mountPath, openRel: real}, fi, id, nlink)
		return nil
	}
	return &vfs.Error{Op: "stage folder", Path: sc.mp.hostPath, Code: vfs.CodeInvalid, Msg: "is neither a directory nor a regular file"}
}

func (sc *scanner) add(e entry) { sc.entries = append(sc.entries, e) }

// addFile adds a regular file. A further name of a multiply-linked host
// file is the same node as its first name: its content is counted once.
func (sc *scanner) addFile(e entry, fi fs.FileInfo, id fileID, nlink uint64) {
	e.kind, e.meta, e.size, e.id = vfs.KindFile, infoMeta(fi), fi.Size(), id
	if nlink > 1 && id.ino != 0 {
		e.link = [2]uint64{id.dev, id.ino}
		if sc.links == nil {
			sc.links = map[[2]uint64]bool{}
		}
		e.second = sc.links[e.link]
		sc.links[e.link] = true
	}
	sc.add(e)
	if e.second {
		return
	}
	sc.files++
	sc.bytes += fi.Size()
	if sc.progress != nil {
		sc.progress(sc.files, sc.bytes)
	}
}

// dir walks the directory d (which it closes): rel is its path relative to
// the host path, openRel relative to the root, spath in the session.
func (sc *scanner) dir(d *os.Root, rel, openRel string, spath vfs.Path, ign *ignore.Stack) error {
	defer d.Close()
	if err := sc.ctx.Err(); err != nil {
		return err
	}
	f, err := d.Open(".")
	if err != nil {
		sc.skip(rel, SkipUnreadable)
		return nil
	}
	names, err := readNames(f)
	f.Close()
	if err != nil {
		sc.skip(rel, SkipUnreadable)
		return nil
	}
	if sc.mp.Gitignore && slices.Contains(names, ".gitignore") {
		ign = ign.Push(rel, readIgnoreFile(d))
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
		fi, err := d.Lstat(name)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) { // gone since listed: nothing to import
				sc.skip(childRel, SkipUnreadable)
			}
			continue
		}
		isDir := fi.IsDir()
		if sc.mp.excluded(childRel, isDir) || ign.Ignored(childRel, isDir) {
			continue
		}
		if err := sc.child(d, name, childRel, childOpen, child, fi, ign, 0); err != nil {
			return err
		}
	}
	return nil
}

// child imports one entry of directory d. openRel is its real path
// relative to the root: for the target of a followed symlink, where the
// symlink leads (and fi is the target's).
func (sc *scanner) child(d *os.Root, name, rel, openRel string, spath vfs.Path, fi fs.FileInfo, ign *ignore.Stack, links int) error {
	if sc.private.is(fi) || sc.private.holds(hostJoin(sc.root.path, openRel)) {
		sc.skip(rel, SkipPrivate)
		return nil
	}
	switch {
	case fi.Mode().IsRegular():
		if !sc.mp.included(rel) {
			return nil
		}
		var id fileID
		var nlink uint64
		var err error
		if links > 0 {
			id, nlink, err = fileIdentity(sc.root.r, openRel, fi)
		} else {
			id, nlink, err = fileIdentity(d, name, fi)
		}
		switch {
		case errors.Is(err, errSwapped) || errors.Is(err, fs.ErrNotExist):
			sc.skip(rel, SkipChanged)
			return nil
		case err != nil: // Windows opens the file for its identity: locked, say
			sc.skip(rel, SkipUnreadable)
			return nil
		}
		sc.addFile(entry{path: spath, openRel: openRel}, fi, id, nlink)
	case fi.IsDir():
		if sc.visiting != nil {
			for _, on := range sc.onPath {
				if os.SameFile(on, fi) {
					sc.skip(rel, SkipLoop)
					return nil
				}
			}
			sc.onPath = append(sc.onPath, fi)
			defer func() { sc.onPath = sc.onPath[:len(sc.onPath)-1] }()
		}
		// Opened without following a symlink and checked to be the
		// directory listed: if it was swapped for a symlink (or another
		// directory) since, it is skipped instead of followed. A directory
		// reached through a followed symlink is opened beneath the root by
		// its real path, the same way.
		if testHookBeforeOpenDir != nil {
			testHookBeforeOpenDir(sc.hostPath(rel))
		}
		var cd *os.Root
		var err error
		if links > 0 {
			cd, err = openDirNoFollow(sc.root.r, openRel)
			if err == nil {
				if now, serr := cd.Stat("."); serr != nil || !os.SameFile(now, fi) {
					cd.Close()
					err = errSwapped
				}
			}
		} else {
			cd, err = openChildDir(d, name, fi)
		}
		if err != nil {
			sc.skip(rel, SkipChanged)
			return nil
		}
		sc.add(entry{path: spath, kind: vfs.KindDir, meta: infoMeta(fi)})
		return sc.dir(cd, rel, openRel, spath, ign)
	case fi.Mode()&fs.ModeSymlink != 0:
		if links > 0 { // the target changed into a symlink since it was resolved
			sc.skip(rel, SkipChanged)
			return nil
		}
		return sc.symlink(d, name, rel, openRel, spath, fi, ign)
	case fi.Mode()&(fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice|fs.ModeCharDevice) != 0:
		sc.skip(rel, SkipSpecialHere)
	default:
		sc.skip(rel, SkipSpecial)
	}
	return nil
}

// symlink imports a symlink as a symlink, or what it points to when the
// mount follows symlinks and the target stays inside the root.
func (sc *scanner) symlink(d *os.Root, name, rel, openRel string, spath vfs.Path, lfi fs.FileInfo, ign *ignore.Stack) error {
	if !sc.mp.FollowSymlinks {
		if !sc.mp.included(rel) {
			return nil
		}
		target, err := d.Readlink(name)
		switch {
		case err != nil:
			sc.skip(rel, SkipChanged)
		case !utf8.ValidString(target):
			sc.skip(rel, SkipTargetUTF8)
		case len(target) > vfs.MaxPathBytes:
			sc.skip(rel, SkipBadName)
		default:
			m := infoMeta(lfi)
			m.mode = vfs.SymlinkMode
			sc.add(entry{path: spath, kind: vfs.KindSymlink, meta: m, target: target})
		}
		return nil
	}
	real, err := resolveBeneath(sc.root.r, openRel)
	if err != nil {
		switch {
		case errors.Is(err, errOutside):
			sc.skip(rel, SkipOutside)
		case errors.Is(err, fs.ErrNotExist):
			sc.skip(rel, SkipDangling)
		case errors.Is(err, errLoop):
			sc.skip(rel, SkipLoop)
		default:
			sc.skip(rel, SkipUnreadable)
		}
		return nil
	}
	fi, err := sc.root.r.Lstat(real)
	if err != nil {
		sc.skip(rel, SkipUnreadable)
		return nil
	}
	if fi.IsDir() && (sc.mp.excluded(rel, true) || ign.Ignored(rel, true)) {
		return nil
	}
	return sc.child(d, name, rel, real, spath, fi, ign, 1)
}

// readIgnoreFile reads the .gitignore of directory d, refusing symlinks
// and anything but a small regular file.
func readIgnoreFile(d *os.Root) *ignore.Rules {
	fi, err := d.Lstat(".gitignore")
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxIgnoreFile {
		return nil
	}
	f, _, err := openFileNoFollow(d, ".gitignore", func(_ *os.File, now fs.FileInfo) bool { return os.SameFile(fi, now) })
	if err != nil {
		return nil
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxIgnoreFile))
	if err != nil {
		return nil
	}
	return ignore.Parse(data)
}

// file imports one file's content: from the cache when its identity is
// unchanged and the blob still stored, else by reading it opened beneath
// the root by its real path and checked to be the file the scan saw.
func (ci *contentImport) file(ctx context.Context, s *scanned, e *entry) error {
	if e.id.ino != 0 { // no identity, no cache (systems without file IDs)
		if h, enc, ok := ci.im.cache.lookup(e.id); ok {
			unpin, ok, err := ci.repo.Adopt(ctx, h)
			if err != nil {
				return err
			}
			if ok {
				ci.finish(s, e, imported{hash: h, size: e.id.size, enc: enc}, unpin, true, 0)
				return nil
			}
		}
	}
	if testHookBeforeOpenFile != nil {
		testHookBeforeOpenFile(hostJoin(s.root.path, e.openRel))
	}
	var before fileID
	f, _, err := openFileNoFollow(s.root.r, e.openRel, func(f *os.File, now fs.FileInfo) bool {
		id, err := openedIdentity(f, now)
		before = id
		return err == nil && id.dev == e.id.dev && id.ino == e.id.ino
	})
	if err != nil {
		ci.skip(s, e, SkipChanged)
		return nil
	}
	defer f.Close()
	sn := vfs.NewSniffer(f)
	counting, counted := ci.reading(sn)
	h, size, unpin, err := ci.repo.Blobs().Put(ctx, counting, true)
	if err != nil {
		ci.unread(*counted)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errClassOf(err) == errDenied || errors.Is(err, fs.ErrPermission) {
			ci.skip(s, e, SkipUnreadable)
			return nil
		}
		return fmt.Errorf("import %s: %w", hostJoin(s.root.path, e.openRel), err)
	}
	if now, err := f.Stat(); err == nil && before.ino != 0 {
		if after, err := openedIdentity(f, now); err == nil && after == before {
			ci.im.cache.store(before, h, sn.Encoding())
		}
	}
	ci.finish(s, e, imported{hash: h, size: size, enc: sn.Encoding()}, unpin, false, *counted)
	return nil
}
