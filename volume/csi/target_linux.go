package csi

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/internal/beneath"
)

// resolveTarget is how target paths are resolved beneath the target root:
// no component may be a symlink or lead out of it. (Mount points on the
// way are fine: the kubelet's directories may be mounts of their own.)
const resolveTarget = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// openTargetParent opens the parent directory of target beneath the
// target root, and returns it with target's last component.
func (drv *Driver) openTargetParent(target string) (int, string, error) {
	rel, err := drv.targetRel(target)
	if err != nil {
		return -1, "", err
	}
	root, err := beneath.OpenRoot(drv.opts.TargetRoot)
	if err != nil {
		return -1, "", err
	}
	defer root.Close()
	dir, name := filepath.Split(rel)
	if dir == "" {
		dir = "."
	}
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: resolveTarget}
	for {
		fd, err := unix.Openat2(root.Fd(), filepath.Clean(dir), &how)
		if err == unix.EAGAIN || err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1, "", fmt.Errorf("open %s beneath %s (no symlinks): %w", filepath.Clean(dir), drv.opts.TargetRoot, err)
		}
		return fd, name, nil
	}
}

// makeTarget creates the target directory (mode 0750) unless it exists,
// reaching its parent beneath the target root without following a
// symlink; made says whether it created it.
func (drv *Driver) makeTarget(target string) (made bool, err error) {
	fd, name, err := drv.openTargetParent(target)
	if err != nil {
		return false, err
	}
	defer unix.Close(fd)
	if err := unix.Mkdirat(fd, name, 0o750); err == nil {
		return true, nil
	} else if !errors.Is(err, unix.EEXIST) {
		return false, &os.PathError{Op: "mkdir", Path: target, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return false, &os.PathError{Op: "stat", Path: target, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return false, fmt.Errorf("%s exists and is not a directory", target)
	}
	return false, nil
}

// removeTarget removes the (empty, unmounted) target directory; a target
// that is gone is fine.
func (drv *Driver) removeTarget(target string) error {
	fd, name, err := drv.openTargetParent(target)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Unlinkat(fd, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		return &os.PathError{Op: "rmdir", Path: target, Err: err}
	}
	return nil
}

// servedAt says whether the file system at p answers.
func servedAt(p string) error {
	var st unix.Statfs_t
	return unix.Statfs(p, &st)
}
