//go:build linux && !vfsd_osroot

package hostmount

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// parentDir is a host directory apply writes in: an O_PATH descriptor.
type parentDir = int

// hostSpecials and hostHardLinks: Linux applies fifos, sockets, devices
// and hard links as themselves.
const hostSpecials, hostHardLinks = true, true

// openParent opens dir beneath the root, refusing symlinks anywhere on it.
func openParent(r root, dir string) (parentDir, error) {
	return openBeneath(r.fd, dir, unix.O_PATH|unix.O_DIRECTORY, true)
}

func closeParent(p parentDir) { unix.Close(p) }

// errClassOf sorts a host error for refusal.
func errClassOf(err error) int {
	switch {
	case errors.Is(err, unix.ENOTEMPTY):
		return errNotEmpty
	case errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM):
		return errDenied
	case errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT):
		return errFull
	case errors.Is(err, unix.EROFS):
		return errReadOnly
	case errors.Is(err, unix.EEXIST):
		return errExists
	case errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EISDIR):
		return errKind
	}
	return errOther
}

// conflict reports how the host's name in parent differs from what the
// import saw (before, or nothing when !existed), or "".
func (a *applier) conflict(parent int, name string, before vfs.Node, existed bool) string {
	var st unix.Stat_t
	err := unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case errors.Is(err, unix.ENOENT):
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
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return "no longer a directory on the host"
		}
	case before.IsSymlink():
		buf := make([]byte, 4096)
		n, err := unix.Readlinkat(parent, name, buf)
		if st.Mode&unix.S_IFMT != unix.S_IFLNK || err != nil || string(buf[:n]) != before.Target {
			return "the symlink changed on the host since the import"
		}
	case before.IsSpecial():
		if vfs.KindFromUnix(st.Mode) != before.Kind || (before.Kind == vfs.KindCharDev || before.Kind == vfs.KindBlockDev) && st.Rdev != before.Rdev {
			return fmt.Sprintf("no longer the same %s on the host", before.Kind)
		}
	default:
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			return "no longer a regular file on the host"
		}
		if st.Size != before.Size {
			return "modified on the host since the import (size differs)"
		}
		h, err := hashAt(parent, name)
		if err != nil {
			return "cannot read the host file: " + err.Error()
		}
		if h != before.Blob && !(before.Size == 0 && before.Blob.IsZero()) {
			return "modified on the host since the import (content differs)"
		}
	}
	return ""
}

// hashAt hashes the regular file name in parent without following links.
func hashAt(parent int, name string) (vfs.Hash, error) {
	fd, err := noAtime(func(flags int) (int, error) { return unix.Openat(parent, name, flags, 0) }, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC)
	if err != nil {
		return vfs.Hash{}, err
	}
	f := fileOf(fd, name)
	defer f.Close()
	h := vfs.NewHasher()
	if _, err := io.Copy(h, f); err != nil {
		return vfs.Hash{}, err
	}
	return vfs.SumHash(h), nil
}

// write applies one entry beneath parent, where name was before (or
// absent, when !existed) when the check passed.
func (a *applier) write(plans []*mountPlan, r root, parent int, name string, e snapshot.DiffEntry, before vfs.Node, existed bool, c *ApplyChange) error {
	action := actionOf(e)
	switch action {
	case "rmdir":
		return unix.Unlinkat(parent, name, unix.AT_REMOVEDIR)
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
		// Through a descriptor opened without following a link and
		// checked to be of the node's kind, so a name swapped for a
		// symlink cannot redirect a chown, chmod or setxattr.
		return withNode(parent, name, n.Kind, func(fd int) error {
			return setMeta(fd, before, n, e.OldOwner != nil, c)
		})
	case "mkdir":
		if err := unix.Mkdirat(parent, name, 0o700); err != nil {
			return err
		}
		return withNode(parent, name, vfs.KindDir, func(fd int) error { return setMeta(fd, vfs.Node{}, n, false, c) })
	case "link":
		if c.Note = a.linkNote(plans, r, e); c.Note == "" {
			err := a.link(plans, parent, name, e, n)
			if !errors.Is(err, errCopy) {
				return err
			}
			c.Note = "written as a copy: " + strings.TrimPrefix(err.Error(), errCopy.Error()+": ")
		}
		return a.writeFile(parent, name, n, before, existed, c)
	case "mknod", "symlink":
		// The node is made aside and renamed into place, so the host
		// never lacks the name and a racing creation is not replaced.
		tmp := tempName(name)
		var err error
		if action == "mknod" {
			err = unix.Mknodat(parent, tmp, n.UnixMode()&^0o7777|0o600, int(n.Rdev))
		} else {
			err = unix.Symlinkat(n.Target, parent, tmp)
		}
		if err == nil {
			err = withNode(parent, tmp, n.Kind, func(fd int) error { return setMeta(fd, vfs.Node{}, n, false, c) })
		}
		if err != nil {
			_ = unix.Unlinkat(parent, tmp, 0)
			return err
		}
		flags := uint(unix.RENAME_NOREPLACE)
		if e.Change == snapshot.Modified {
			flags = 0
		}
		err = unix.Renameat2(parent, tmp, parent, name, flags)
		if err != nil {
			_ = unix.Unlinkat(parent, tmp, 0)
		}
		if errors.Is(err, unix.EEXIST) {
			err = errHostChanged
		}
		return err
	}
	if e.Change == snapshot.Added && n.Nlink > 1 && c.Note == "" {
		for _, q := range a.tree.LinkNames(n.Ino) {
			if _, _, _, ok, _ := a.hostOf(plans, q); !ok {
				c.Note = fmt.Sprintf("written as a copy: its other name %s is outside the mounts", q)
				break
			}
		}
	}
	return a.writeFile(parent, name, n, before, existed, c)
}

// writeFile writes the session's file n to name in parent through a
// temporary file moved into place so that a host change racing the apply
// is never overwritten: a new file must still be absent (the move does not
// replace), and a modified one is exchanged with the host's and the host's
// checked again once it is out of the way — if it changed meanwhile, the
// exchange is undone and errHostChanged returned.
func (a *applier) writeFile(parent int, name string, n vfs.Node, before vfs.Node, existed bool, c *ApplyChange) error {
	tmp := tempName(name)
	if err := a.writeTemp(parent, tmp, n, c); err != nil {
		return err
	}
	if testHookBeforeMove != nil {
		testHookBeforeMove(name)
	}
	if !existed {
		err := unix.Renameat2(parent, tmp, parent, name, unix.RENAME_NOREPLACE)
		if errors.Is(err, unix.EEXIST) {
			err = errHostChanged
		}
		if err != nil {
			_ = unix.Unlinkat(parent, tmp, 0)
		}
		return err
	}
	switch err := unix.Renameat2(parent, tmp, parent, name, unix.RENAME_EXCHANGE); {
	case errors.Is(err, unix.ENOENT):
		_ = unix.Unlinkat(parent, tmp, 0)
		return errHostChanged
	case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS):
		// A file system without exchange: replace, as checked just before.
		err = unix.Renameat(parent, tmp, parent, name)
		if err != nil {
			_ = unix.Unlinkat(parent, tmp, 0)
		}
		return err
	case err != nil:
		_ = unix.Unlinkat(parent, tmp, 0)
		return err
	}
	// tmp is now the host's file as it was at the exchange.
	if a.conflict(parent, tmp, before, true) != "" {
		if err := unix.Renameat2(parent, tmp, parent, name, unix.RENAME_EXCHANGE); err != nil {
			return fmt.Errorf("%w; the host's version is at %s: %v", errHostChanged, tmp, err)
		}
		_ = unix.Unlinkat(parent, tmp, 0)
		return errHostChanged
	}
	return unix.Unlinkat(parent, tmp, 0)
}

// deleteFile removes name from parent unless the host changed it: the
// file is moved aside, checked, and then removed or moved back.
func (a *applier) deleteFile(parent int, name string, before vfs.Node) error {
	tmp := tempName(name)
	if testHookBeforeMove != nil {
		testHookBeforeMove(name)
	}
	switch err := unix.Renameat2(parent, name, parent, tmp, unix.RENAME_NOREPLACE); {
	case errors.Is(err, unix.ENOENT):
		return errHostChanged
	case err != nil:
		return err
	}
	if a.conflict(parent, tmp, before, true) != "" {
		if err := unix.Renameat2(parent, tmp, parent, name, unix.RENAME_NOREPLACE); err != nil {
			return fmt.Errorf("%w; the host's version is at %s: %v", errHostChanged, tmp, err)
		}
		return errHostChanged
	}
	return unix.Unlinkat(parent, tmp, 0)
}

// writeTemp writes file n's content to a new file tmp in parent, synced,
// with n's owner (as root), mode, extended attributes and times.
func (a *applier) writeTemp(parent int, tmp string, n vfs.Node, c *ApplyChange) error {
	var src io.Reader = strings.NewReader("")
	if n.Size > 0 {
		b, err := a.blobs.Open(a.ctx, n.Blob)
		if err != nil {
			return fmt.Errorf("read the session's content: %w", err)
		}
		defer b.Close()
		src = io.NewSectionReader(b, 0, n.Size)
	}
	fd, err := unix.Openat(parent, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	f := fileOf(fd, tmp)
	_, err = io.Copy(f, src)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = withNode(parent, tmp, vfs.KindFile, func(fd int) error { return setMeta(fd, vfs.Node{}, n, false, c) })
	}
	if err != nil {
		_ = unix.Unlinkat(parent, tmp, 0)
	}
	return err
}

// hostHas reports whether the host's name in parent already is what entry
// e makes it: gone for a removal, a directory for a new one, the same
// symlink target, or a regular file with the same content and mode.
func (a *applier) hostHas(parent int, name string, e snapshot.DiffEntry) bool {
	var st unix.Stat_t
	err := unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if e.Change == snapshot.Deleted {
		return errors.Is(err, unix.ENOENT)
	}
	if err != nil || e.OldKind != 0 {
		return false
	}
	switch e.Kind {
	case vfs.KindDir:
		return st.Mode&unix.S_IFMT == unix.S_IFDIR && uint32(st.Mode)&0o7777 == e.NewMode
	case vfs.KindSymlink:
		buf := make([]byte, 4096)
		n, err := unix.Readlinkat(parent, name, buf)
		return st.Mode&unix.S_IFMT == unix.S_IFLNK && err == nil && string(buf[:n]) == e.NewTarget
	case vfs.KindFile:
		if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size != e.NewSize || uint32(st.Mode)&0o7777 != e.NewMode || e.NewBlob.IsZero() {
			return false
		}
		h, err := hashAt(parent, name)
		return err == nil && h == e.NewBlob
	}
	return false
}
