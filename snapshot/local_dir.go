package snapshot

// This file holds the local store's directory: its lock, marker, fan-out
// layout, temporary files, and what the filesystem under it guarantees.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// localMarker is the name of the marker file at the root of a LocalStore.
const localMarker = "store.json"

type localMarkerFile struct {
	Format string `json:"format"`
}

// localLockDir takes an exclusive, non-blocking flock on the open directory; the
// lock lasts until the file is closed.
func localLockDir(root *os.File) error {
	rc, err := root.SyscallConn()
	if err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) {
		for {
			lerr = unix.Flock(int(fd), unix.LOCK_EX|unix.LOCK_NB)
			if lerr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	if errors.Is(lerr, unix.EWOULDBLOCK) {
		return errors.New("store is in use by another process (or another LocalStore in this one)")
	}
	if lerr != nil {
		return fmt.Errorf("lock: %w", lerr)
	}
	return nil
}

// localCheckOrCreateMarker validates dir's store.json, or writes one when dir is
// empty (durably, before anything else is created, so that a crash during
// initialisation leaves a store the next open completes).
func localCheckOrCreateMarker(dir string, root *os.File) error {
	path := filepath.Join(dir, localMarker)
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		var m localMarkerFile
		if err := json.Unmarshal(data, &m); err != nil {
			return fmt.Errorf("invalid marker %s: %w", path, err)
		}
		if m.Format != LocalFormat {
			return fmt.Errorf("marker %s: unsupported store format %q (want %q)", path, m.Format, LocalFormat)
		}
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("read marker: %w", err)
	}
	tmp := path + ".tmp" // a leftover of an interrupted creation is ignored
	names, err := root.Readdirnames(8)
	if _, serr := root.Seek(0, io.SeekStart); serr != nil && err == nil {
		err = serr
	}
	if err != nil && err != io.EOF {
		return fmt.Errorf("read directory: %w", err)
	}
	for _, name := range names {
		if name != localMarker+".tmp" {
			return fmt.Errorf("not a vfsd store: directory is not empty and has no %s (found %q)", localMarker, name)
		}
	}
	data, err = json.Marshal(localMarkerFile{Format: LocalFormat})
	if err != nil {
		return fmt.Errorf("write marker: %w", err)
	}
	data = append(data, '\n')
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("write marker: %w", err)
	}
	if err := localWriteFileSync(tmp, data, 0o444); err != nil {
		return fmt.Errorf("write marker: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write marker: %w", err)
	}
	if err := root.Sync(); err != nil {
		return fmt.Errorf("write marker: sync %s: %w", dir, err)
	}
	return nil
}

func localWriteFileSync(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// tmpSub is the temporary directory tmp/xx, xx the hex form of spread.
func (s *LocalStore) tmpSub(spread int) string {
	return filepath.Join(s.tmpDir, fmt.Sprintf("%02x", spread&0xff))
}

// makeDirs creates tmp/ and the namespace directories that are missing,
// and fsyncs the store directory if it created any. The 256 fan-out
// directories under each are created on first use (ensureDir): creating
// all of them up front cost 0.4 s per store on a slow disk, on every open
// of a fresh store.
func (s *LocalStore) makeDirs() error {
	rootDirty := false
	for _, d := range append([]string{localTmp}, namespaceNames()...) {
		created, err := localMkdirIfMissing(filepath.Join(s.dir, d))
		if err != nil {
			return err
		}
		rootDirty = rootDirty || created
	}
	if rootDirty {
		if err := s.root.Sync(); err != nil {
			return fmt.Errorf("sync %s: %w", s.dir, err)
		}
	}
	return nil
}

func namespaceNames() []string {
	names := make([]string, len(Namespaces))
	for i, ns := range Namespaces {
		names[i] = string(ns)
	}
	return names
}

// ensureDir creates the fan-out directory dir if it is missing and makes
// its entry in its parent durable, so an object published in it survives a
// crash. Concurrent callers may race to create it; both succeed. A
// directory known to exist costs a map lookup.
func (s *LocalStore) ensureDir(dir string) error {
	if _, ok := s.dirs.Load(dir); ok {
		return nil
	}
	created, err := localMkdirIfMissing(dir)
	if err != nil {
		return err
	}
	if created {
		if err := localSyncDir(filepath.Dir(dir)); err != nil {
			return err
		}
	}
	s.dirs.Store(dir, struct{}{})
	return nil
}

func localMkdirIfMissing(path string) (created bool, err error) {
	err = os.Mkdir(path, 0o700)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, fs.ErrExist) {
		fi, serr := os.Stat(path)
		if serr == nil && fi.IsDir() {
			return false, nil
		}
		if serr == nil {
			return false, fmt.Errorf("%s exists and is not a directory", path)
		}
		return false, serr
	}
	return false, err
}

// localTmpfileSafe reports whether dir's filesystem makes an unnamed file
// that was fdatasynced, linked into a directory, and the directory fsynced
// as durable as a named file fdatasynced, renamed into a directory, and the
// directory fsynced. That takes the link and the file's new link count to
// reach the disk together, as they do where metadata changes are journaled
// or logged: XFS, Btrfs, ext4 with a journal. On ext4 without one, fsyncing
// the directory leaves the link count (0 when the file was synced) unwritten
// until writeback, and fsck after a crash drops a link to a file with no
// links. tmpfs keeps nothing across a crash anyway. Other filesystems are
// not known to be safe.
func localTmpfileSafe(dir string) bool {
	var sfs unix.Statfs_t
	if err := unix.Statfs(dir, &sfs); err != nil {
		return false
	}
	switch uint32(sfs.Type) {
	case unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.TMPFS_MAGIC:
		return true
	case unix.EXT4_SUPER_MAGIC: // also ext2 and ext3
		return localExt4Journaled(dir)
	}
	return false
}

// localExt4Journaled reports whether the ext4 filesystem of dir has a
// journal: its /sys/fs/ext4/<device>/journal_task names the journal thread,
// or is "<none>". It reports false if that cannot be read (an ext2 or ext3
// filesystem mounted by another driver has no such file).
func localExt4Journaled(dir string) bool {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return false
	}
	dev, err := os.Readlink(fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev)))
	if err != nil {
		return false
	}
	task, err := os.ReadFile(filepath.Join("/sys/fs/ext4", filepath.Base(dev), "journal_task"))
	if err != nil {
		return false
	}
	t := strings.TrimSpace(string(task))
	return t != "" && t != "<none>"
}

// clearTmp removes every file under tmp/ (keeping its subdirectories):
// files there belong to Puts that never finished, and the directory lock
// guarantees none is running.
func (s *LocalStore) clearTmp() error {
	entries, err := os.ReadDir(s.tmpDir)
	if err != nil {
		return fmt.Errorf("clear temporary files: %w", err)
	}
	for _, e := range entries {
		p := filepath.Join(s.tmpDir, e.Name())
		if !e.IsDir() || len(e.Name()) != 2 {
			if err := os.RemoveAll(p); err != nil {
				return fmt.Errorf("clear temporary files: %w", err)
			}
			continue
		}
		files, err := os.ReadDir(p)
		if err != nil {
			return fmt.Errorf("clear temporary files: %w", err)
		}
		for _, f := range files {
			if err := os.RemoveAll(filepath.Join(p, f.Name())); err != nil {
				return fmt.Errorf("clear temporary files: %w", err)
			}
		}
	}
	return nil
}

func localFdatasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			serr = unix.Fdatasync(int(fd))
			if serr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return serr
}

func localSyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	err = d.Sync()
	d.Close()
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
