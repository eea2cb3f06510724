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
)

// localMarker is the name of the marker file at the root of a LocalStore.
const localMarker = "store.json"

type localMarkerFile struct {
	Format string `json:"format"`
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
	if err := localSyncDirFile(root); err != nil {
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
		if err := localSyncDirFile(s.root); err != nil {
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
