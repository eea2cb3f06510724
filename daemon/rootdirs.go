package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/contract"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// The directory on disk a session of a contract.RootDirectory contract
// has (weakincentives' root_path).
//
// Each session gets a private directory C, made with mode 0700 under the
// operating system's temporary directory (Config.RootDirParent), and its
// files are at C/root: the session mounted there with FUSE, live both
// ways (a program's write is a session change at once, a tool's write is
// in the directory at once). Where the daemon cannot mount — no FUSE
// (macOS, Windows, a container without /dev/fuse), or Config.RootDirs
// "copy" — C/root is a copy of the session, written out again whenever the
// contract's state is read after the session changed: the moment the
// caller learns root_path; what programs change in a copy does not reach
// the session (and is replaced at the next refresh). Changes of the
// copy happen inside C, which only the daemon can write, by materialising
// the session beside C/root and swapping it in. Closing the session
// unmounts C/root and removes C.

// Root directory modes (Config.RootDirs).
const (
	RootDirsFUSE = "fuse" // mount the session (the default); a copy where that fails
	RootDirsCopy = "copy" // always a copy
)

// rootDirName is the name of the session's directory inside C.
const rootDirName = "root"

// provisionRootDir makes session e's directory, if its contract asks for
// one (contract.RootDirectory) and it has none yet, mounts the session
// there (or falls back to a copy), and returns its path ("" when the
// contract asks for none). A directory that exists but is no longer
// mounted (unmounted through the API, or not mounted again at a restart)
// is mounted again. The caller holds e.hostMu.
func (d *Daemon) provisionRootDir(e *entry) (string, error) {
	rd, ok := e.k.(contract.RootDirectory)
	if !ok {
		return "", nil
	}
	e.mu.Lock()
	dir, copyMode := e.meta.RootDir, e.meta.RootDirCopy
	_, mounted := e.fuse[dir]
	e.mu.Unlock()
	switch {
	case dir != "" && existsDir(dir) && (copyMode || mounted):
		return dir, nil
	case dir == "" || !existsDir(dir):
		parent := d.cfg.RootDirParent
		if parent == "" {
			parent = os.TempDir()
		}
		c, err := os.MkdirTemp(parent, rd.RootDirectoryPrefix()+e.id+"-")
		if err != nil {
			return "", fmt.Errorf("session %s: make its directory on disk: %w", e.id, err)
		}
		dir = filepath.Join(c, rootDirName)
		if err := os.Mkdir(dir, 0o700); err != nil {
			return "", errors.Join(fmt.Errorf("session %s: make its directory on disk: %w", e.id, err), os.Remove(c))
		}
	}
	copyMode = d.cfg.RootDirs == RootDirsCopy
	if !copyMode {
		if err := d.mountRootDir(e, dir); err != nil {
			d.log.Warn("the session's directory on disk cannot be a mount; it is a copy, written out when the contract's state is read",
				"session", e.id, "dir", dir, "err", err)
			copyMode = true
		}
	}
	err := d.updateMeta(e, func(m *sessionMeta) {
		m.RootDir, m.RootDirCopy = dir, copyMode
		m.Fuse = slices.DeleteFunc(m.Fuse, func(fm api.FuseMount) bool { return fm.Dir == dir })
		if !copyMode {
			m.Fuse = append(m.Fuse, rootDirMount(dir))
		}
	})
	if err != nil {
		return "", errors.Join(err, d.unmountFuse(e, dir))
	}
	return dir, nil
}

// rootDirMount is the FUSE mount of a session's directory on disk: the
// daemon's user only, permissions checked by the kernel, nosuid and nodev.
func rootDirMount(dir string) api.FuseMount {
	return api.FuseMount{Dir: dir, DefaultPermissions: true}
}

// mountRootDir mounts e at dir. The caller holds e.hostMu.
func (d *Daemon) mountRootDir(e *entry, dir string) error {
	if name, err := firstEntry(dir); err != nil {
		return err
	} else if name != "" {
		return fmt.Errorf("%s is not empty (it holds %q)", dir, name)
	}
	return d.mountFuse(e, rootDirMount(dir))
}

func existsDir(dir string) bool {
	fi, err := os.Stat(dir)
	return err == nil && fi.IsDir()
}

// rootDir returns session e's directory on disk for its contract's state,
// making it if it has none (a session from before directories were made,
// or whose mount did not come back at a restart), and writing the copy out
// again in copy mode. "" when the contract asks for none.
func (d *Daemon) rootDir(ctx context.Context, e *entry) (string, error) {
	if _, ok := e.k.(contract.RootDirectory); !ok {
		return "", nil
	}
	e.hostMu.Lock()
	defer e.hostMu.Unlock()
	dir, err := d.provisionRootDir(e)
	if err != nil {
		return "", err
	}
	e.mu.Lock()
	copyMode := e.meta.RootDirCopy
	e.mu.Unlock()
	if !copyMode {
		return dir, nil
	}
	if e.rootCopyWatch == nil {
		// The copy is written out again only after the session changed:
		// reading the state over and over costs nothing more.
		e.rootCopyWatch = e.s.Subscribe(func(vfs.Notice) { e.rootCopyStale.Store(true) })
		e.rootCopyStale.Store(true)
	}
	if e.rootCopyStale.Swap(false) {
		if err := d.refreshRootCopy(ctx, e, dir); err != nil {
			e.rootCopyStale.Store(true)
			return "", err
		}
	}
	return dir, nil
}

// refreshRootCopy writes session e's files out as dir: materialised into
// a fresh directory beside it (inside the session's private directory),
// then swapped in; the old copy is removed through descriptors.
func (d *Daemon) refreshRootCopy(ctx context.Context, e *entry, dir string) error {
	c := filepath.Dir(dir)
	next, err := os.MkdirTemp(c, rootDirName+".next-")
	if err != nil {
		return fmt.Errorf("session %s: write its files out: %w", e.id, err)
	}
	if _, err := d.repo.Materialize(ctx, snapshot.Source{Session: e.s}, next); err != nil {
		return errors.Join(fmt.Errorf("session %s: write its files out: %w", e.id, err), removeTree(next))
	}
	old, err := os.MkdirTemp(c, rootDirName+".old-")
	if err != nil {
		return errors.Join(fmt.Errorf("session %s: write its files out: %w", e.id, err), removeTree(next))
	}
	if err := os.Rename(dir, filepath.Join(old, rootDirName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return errors.Join(fmt.Errorf("session %s: write its files out: %w", e.id, err), removeTree(next), os.Remove(old))
	}
	if err := os.Rename(next, dir); err != nil {
		return errors.Join(fmt.Errorf("session %s: write its files out: %w", e.id, err), removeTree(next))
	}
	return removeTree(old)
}

// removeRootDir removes session e's directory on disk, once the session
// is closed and its mounts are down: the session's private directory and
// everything in it, through descriptors (a program may have changed the
// copy). A directory still mounted is left (logged): removing through a
// live mount would remove what it serves.
func (d *Daemon) removeRootDir(id string, m *sessionMeta) error {
	if m.RootDir == "" {
		return nil
	}
	if mounted, _ := mountedAt(m.RootDir); mounted {
		d.log.Error("the session's directory on disk is still mounted; it is left in place", "session", id, "dir", m.RootDir)
		return nil
	}
	if err := removeTree(filepath.Dir(m.RootDir)); err != nil {
		return fmt.Errorf("session %s: remove its directory on disk: %w", id, err)
	}
	return nil
}
