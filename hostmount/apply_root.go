//go:build !linux || vfsd_osroot

package hostmount

// Apply's host access through os.Root (see root.go). The checks are
// Linux's; where Linux has renameat2 (RENAME_NOREPLACE, RENAME_EXCHANGE),
// this layer creates a name with a hard link, which never replaces what is
// there, and moves the host's file aside to check it before replacing it,
// so a host change racing the apply is never overwritten; on a file system
// without hard links a new name is checked absent just before it is moved
// in. Every name is looked up without following a symlink and checked to
// be what was looked up before it is changed.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// parentDir is a host directory apply writes in.
type parentDir = *os.Root

// hostSpecials and hostHardLinks: this layer applies neither fifos,
// sockets and devices nor hard links (written as copies).
const hostSpecials, hostHardLinks = false, false

// openParent opens dir beneath the root, refusing symlinks anywhere on it.
func openParent(r root, dir string) (parentDir, error) {
	return openDirNoFollow(r.r, dir)
}

func closeParent(p parentDir) { p.Close() }

// conflict reports how the host's name in parent differs from what the
// import saw (before, or nothing when !existed), or "".
func (a *applier) conflict(parent parentDir, name string, before vfs.Node, existed bool) string {
	fi, err := parent.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if existed {
			return "removed on the host since the import"
		}
		return ""
	case err != nil:
		return "cannot inspect the host path: " + err.Error()
	case !existed:
		return "created on the host since the import"
	}
	switch {
	case before.IsDir():
		if !fi.IsDir() {
			return "no longer a directory on the host"
		}
	case before.IsSymlink():
		target, err := parent.Readlink(name)
		if fi.Mode()&fs.ModeSymlink == 0 || err != nil || target != before.Target {
			return "the symlink changed on the host since the import"
		}
	case before.IsSpecial():
		return fmt.Sprintf("a %s: special files are applied on Linux only", before.Kind)
	default:
		if !fi.Mode().IsRegular() {
			return "no longer a regular file on the host"
		}
		if fi.Size() != before.Size {
			return "modified on the host since the import (size differs)"
		}
		h, err := hashAt(parent, name, fi)
		if err != nil {
			return "cannot read the host file: " + err.Error()
		}
		if h != before.Blob && !(before.Size == 0 && before.Blob.IsZero()) {
			return "modified on the host since the import (content differs)"
		}
	}
	return ""
}

// hashAt hashes the regular file name in parent, checked to be the one
// looked up as fi.
func hashAt(parent parentDir, name string, fi fs.FileInfo) (vfs.Hash, error) {
	f, _, err := openFileNoFollow(parent, name, func(_ *os.File, now fs.FileInfo) bool { return os.SameFile(fi, now) })
	if err != nil {
		return vfs.Hash{}, err
	}
	defer f.Close()
	h := vfs.NewHasher()
	if _, err := io.Copy(h, f); err != nil {
		return vfs.Hash{}, err
	}
	return vfs.SumHash(h), nil
}

// write applies one entry beneath parent, where name was before (or
// absent, when !existed) when the check passed.
func (a *applier) write(plans []*mountPlan, r root, parent parentDir, name string, e snapshot.DiffEntry, before vfs.Node, existed bool, c *ApplyChange) error {
	action := actionOf(e)
	switch action {
	case "rmdir":
		return a.removeDir(parent, name)
	case "delete":
		return a.deleteFile(parent, name, before)
	}
	n, ok, err := a.tree.Lookup(e.Path)
	if err != nil {
		return err // a vfs.CodeIO error: one reports it as the snapshot's, not the host's
	}
	if !ok || n.Kind != e.Kind {
		return fmt.Errorf("%s is not in the session's snapshot as a %s", e.Path, e.Kind)
	}
	n, note := a.written(before, n)
	defer func() { c.Note = joinNotes(c.Note, note) }()
	switch action {
	case "chmod", "metadata":
		if testHookBeforeMove != nil {
			testHookBeforeMove(name)
		}
		return setMeta(parent, name, before, n, c)
	case "mkdir":
		if err := parent.Mkdir(name, 0o700); err != nil {
			return err
		}
		return setMeta(parent, name, vfs.Node{}, n, c)
	case "symlink":
		// Made aside and moved into place, so the host never lacks the
		// name and a racing creation is not replaced.
		tmp := tempName(name)
		if err := parent.Symlink(n.Target, tmp); err != nil {
			return err
		}
		if e.Change == snapshot.Modified {
			// Checked just before: the host's symlink is as imported.
			err := parent.Rename(tmp, name)
			if err != nil {
				_ = parent.Remove(tmp)
			}
			return err
		}
		return placeNew(parent, tmp, name)
	case "mknod":
		return fmt.Errorf("a %s: special files are applied on Linux only", n.Kind)
	}
	if c.Note == "" && (action == "link" || e.Change == snapshot.Added && n.Nlink > 1) {
		for _, q := range a.tree.LinkNames(n.Ino) {
			if _, _, _, ok, _ := a.hostOf(plans, q); !ok && q != e.Path {
				c.Note = fmt.Sprintf("written as a copy: its other name %s is outside the mounts", q)
				break
			}
		}
		if c.Note == "" && action == "link" {
			c.Note = a.linkNote(plans, r, e)
		}
	}
	return a.writeFile(parent, name, n, before, existed, c)
}

// placeNew moves tmp to name in parent unless name exists: a hard link,
// which never replaces, then tmp's removal. Where the file system has no
// hard links, name is checked absent just before tmp is renamed over it.
// tmp is gone afterwards either way.
func placeNew(parent parentDir, tmp, name string) error {
	err := parent.Link(tmp, name)
	switch {
	case err == nil:
		return parent.Remove(tmp)
	case errors.Is(err, fs.ErrExist):
		_ = parent.Remove(tmp)
		return errHostChanged
	}
	if _, lerr := parent.Lstat(name); !errors.Is(lerr, fs.ErrNotExist) {
		_ = parent.Remove(tmp)
		if lerr == nil {
			return errHostChanged
		}
		return lerr
	}
	if err := parent.Rename(tmp, name); err != nil {
		_ = parent.Remove(tmp)
		return err
	}
	return nil
}

// writeFile writes the session's file n to name in parent through a
// temporary file moved into place so that a host change racing the apply
// is never overwritten: a new file must still be absent (placeNew), and a
// modified one is moved aside, checked again, and only then replaced — if
// it changed meanwhile, it is moved back and errHostChanged returned.
func (a *applier) writeFile(parent parentDir, name string, n vfs.Node, before vfs.Node, existed bool, c *ApplyChange) error {
	tmp := tempName(name)
	if err := a.writeTemp(parent, tmp, n); err != nil {
		return err
	}
	if testHookBeforeMove != nil {
		testHookBeforeMove(name)
	}
	if !existed {
		if err := placeNew(parent, tmp, name); err != nil {
			return err
		}
		keepMode(parent, name, n, c)
		return nil
	}
	aside, err := a.moveAside(parent, name, before)
	if err != nil {
		_ = parent.Remove(tmp)
		return err
	}
	if err := placeNew(parent, tmp, name); err != nil {
		// Someone created name since it was moved aside: theirs stays;
		// ours was the import's version, which they replaced.
		if errors.Is(err, errHostChanged) {
			_ = parent.Remove(aside)
			return err
		}
		if perr := placeNew(parent, aside, name); perr != nil {
			return fmt.Errorf("%w; the host's version is at %s: %v", err, aside, perr)
		}
		return err
	}
	if err := parent.Remove(aside); err != nil {
		// The session's file is in place: the change is applied.
		c.Note = fmt.Sprintf("the host's previous version is left beside it as %s (%v); remove it by hand", aside, err)
	}
	keepMode(parent, name, n, c)
	return nil
}

// keepMode gives the file just moved to name n's mode again if removing
// its temporary name took it away: where Windows cannot delete a read-only
// name directly, Go clears the read-only attribute first, which the other
// name of the file shares.
func keepMode(parent parentDir, name string, n vfs.Node, c *ApplyChange) {
	fi, err := parent.Lstat(name)
	if err != nil || !fi.Mode().IsRegular() || hostModeBits(fi.Mode()&vfs.PermBits) == hostModeBits(n.Mode&vfs.PermBits) {
		return
	}
	if err := parent.Chmod(name, n.Mode&vfs.PermBits); err != nil && c.Note == "" {
		c.Note = fmt.Sprintf("written with mode %04o, not %04o as in the session (%v)", uint32(fi.Mode().Perm()), uint32(n.Mode.Perm()), err)
	}
}

// moveAside renames name in parent to a fresh name and checks that what
// was moved is still what the import saw (before): if not, it is moved
// back and errHostChanged returned. It returns the fresh name.
func (a *applier) moveAside(parent parentDir, name string, before vfs.Node) (string, error) {
	aside := tempName(name)
	switch err := parent.Rename(name, aside); {
	case errors.Is(err, fs.ErrNotExist):
		return "", errHostChanged
	case err != nil:
		return "", err
	}
	if a.conflict(parent, aside, before, true) != "" {
		if err := placeNew(parent, aside, name); err != nil {
			return "", fmt.Errorf("%w; the host's version is at %s: %v", errHostChanged, aside, err)
		}
		return "", errHostChanged
	}
	return aside, nil
}

// deleteFile removes name from parent unless the host changed it: the
// file is moved aside, checked, and then removed or moved back.
func (a *applier) deleteFile(parent parentDir, name string, before vfs.Node) error {
	if testHookBeforeMove != nil {
		testHookBeforeMove(name)
	}
	aside, err := a.moveAside(parent, name, before)
	if err != nil {
		return err
	}
	return parent.Remove(aside)
}

// removeDir removes the empty directory name from parent. os.Root's Remove
// removes whatever the name is, so the directory is moved aside first and
// checked to be a directory; a directory that is not empty (or anything
// else swapped in) is moved back.
func (a *applier) removeDir(parent parentDir, name string) error {
	aside := tempName(name)
	switch err := parent.Rename(name, aside); {
	case errors.Is(err, fs.ErrNotExist):
		return errHostChanged
	case err != nil:
		return err
	}
	back := func() error {
		fi, err := parent.Lstat(aside)
		if err == nil && !fi.IsDir() {
			err = placeNew(parent, aside, name)
		} else if err == nil {
			if _, lerr := parent.Lstat(name); lerr == nil {
				return fmt.Errorf("%w; the host's directory is at %s", errHostChanged, aside)
			}
			err = parent.Rename(aside, name)
		}
		if err != nil {
			return fmt.Errorf("%w; the host's version is at %s: %v", errHostChanged, aside, err)
		}
		return nil
	}
	fi, err := parent.Lstat(aside)
	if err != nil || !fi.IsDir() {
		if berr := back(); berr != nil {
			return berr
		}
		return errHostChanged
	}
	if err := parent.Remove(aside); err != nil {
		if berr := back(); berr != nil {
			return berr
		}
		return err
	}
	return nil
}

// writeTemp writes file n's content to a new file tmp in parent, synced,
// with n's mode and times.
func (a *applier) writeTemp(parent parentDir, tmp string, n vfs.Node) error {
	var src io.Reader = strings.NewReader("")
	if n.Size > 0 {
		b, err := a.blobs.Open(a.ctx, n.Blob)
		if err != nil {
			return fmt.Errorf("read the session's content: %w", err)
		}
		defer b.Close()
		src = io.NewSectionReader(b, 0, n.Size)
	}
	f, err := parent.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, src)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = setMeta(parent, tmp, vfs.Node{}, n, nil)
	}
	if err != nil {
		_ = parent.Remove(tmp)
	}
	return err
}

// setMeta gives name in parent n's mode and (but to a directory) times,
// where they differ from before (the node as the import saw it; the zero
// Node for one apply creates). The name is looked up without following a
// symlink and must be of n's kind; a symlink's own mode and times are left
// as the host makes them. A mode the session changed must still be as the
// import saw it on the host, as far as the host keeps modes (on Windows:
// writable or read-only). Owners and extended attributes are Linux's.
func setMeta(parent parentDir, name string, before, n vfs.Node, _ *ApplyChange) error {
	fi, err := parent.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return errHostChanged
	}
	if err != nil {
		return err
	}
	if vfs.KindFromFileMode(fi.Mode()) != n.Kind {
		return errHostChanged
	}
	if n.Kind == vfs.KindSymlink {
		return nil
	}
	have, want := hostModeBits(fi.Mode()&vfs.PermBits), hostModeBits(n.Mode&vfs.PermBits)
	if before.Kind != 0 {
		if was := hostModeBits(before.Mode & vfs.PermBits); have != was && want != was {
			return fmt.Errorf("%w: its mode is %04o on the host, %04o when imported", errHostMeta, uint32(have), uint32(was))
		}
	}
	if fi.Mode()&vfs.PermBits != n.Mode&vfs.PermBits {
		if err := parent.Chmod(name, n.Mode&vfs.PermBits); err != nil {
			return fmt.Errorf("chmod %04o: %w", uint32(n.Mode&fs.ModePerm), err)
		}
	}
	if n.Kind != vfs.KindDir {
		if err := parent.Chtimes(name, time.Unix(0, n.Atime), time.Unix(0, n.Mtime)); err != nil {
			return fmt.Errorf("set times: %w", err)
		}
	}
	return nil
}

// hostHas reports whether the host's name in parent already is what entry
// e makes it: gone for a removal, a directory for a new one, the same
// symlink target, or a regular file with the same content and mode.
func (a *applier) hostHas(parent parentDir, name string, e snapshot.DiffEntry) bool {
	fi, err := parent.Lstat(name)
	if e.Change == snapshot.Deleted {
		return errors.Is(err, fs.ErrNotExist)
	}
	if err != nil || e.OldKind != 0 {
		return false
	}
	switch e.Kind {
	case vfs.KindDir:
		return fi.IsDir() && (runtime.GOOS == "windows" || uint32(fi.Mode().Perm()) == e.NewMode&0o777)
	case vfs.KindSymlink:
		target, err := parent.Readlink(name)
		return fi.Mode()&fs.ModeSymlink != 0 && err == nil && target == e.NewTarget
	case vfs.KindFile:
		if !fi.Mode().IsRegular() || fi.Size() != e.NewSize || e.NewBlob.IsZero() {
			return false
		}
		if runtime.GOOS != "windows" && uint32(fi.Mode().Perm()) != e.NewMode&0o777 {
			return false
		}
		h, err := hashAt(parent, name, fi)
		return err == nil && h == e.NewBlob
	}
	return false
}
