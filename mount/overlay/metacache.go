//go:build linux

package overlay

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vfsd/vfsd/internal/mountinfo"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// DefaultMetaCacheKeep is how many metadata layers no mount uses a cache
// keeps when Options.MetaCacheKeep is zero.
const DefaultMetaCacheKeep = 4

// lruDir is the cache's directory of last-use marks: an empty file per
// layer, whose mtime is when a mount last used it (the layer itself is
// never changed once built: it may be mounted).
const lruDir = ".used"

// layerGrace is how recently used a layer must not have been to be
// collected: it covers a mount between building (or finding) its layer
// and holding it.
var layerGrace = time.Minute

// held counts, per layer directory, the mounts of this process that use
// it; collect never removes those, nor the layers overlay mounts of any
// process show in /proc/self/mountinfo.
var held = struct {
	sync.Mutex
	n map[string]int
}{n: map[string]int{}}

// holdMeta builds or finds snap's layer in cacheDir (BuildMeta), marks it
// used and holds it for a mount; release lets it go.
func holdMeta(ctx context.Context, snap *snapshot.Snapshot, cacheDir string, def vfs.Owner) (MetaReport, func(), error) {
	rep, err := BuildMeta(ctx, snap, cacheDir, def)
	if err != nil {
		return rep, nil, err
	}
	held.Lock()
	held.n[rep.Dir]++
	held.Unlock()
	markUsed(cacheDir, filepath.Base(rep.Dir))
	var once sync.Once
	return rep, func() {
		once.Do(func() {
			held.Lock()
			if held.n[rep.Dir]--; held.n[rep.Dir] <= 0 {
				delete(held.n, rep.Dir)
			}
			held.Unlock()
		})
	}, nil
}

// markUsed records that the layer key of cacheDir was used now.
func markUsed(cacheDir, key string) {
	mark := filepath.Join(cacheDir, lruDir, key)
	now := time.Now()
	if err := os.Chtimes(mark, now, now); err == nil {
		return
	}
	if err := os.MkdirAll(filepath.Dir(mark), 0o700); err == nil {
		_ = os.WriteFile(mark, nil, 0o600)
	}
}

// CollectReport tells what CollectMeta did.
type CollectReport struct {
	Kept    int      `json:"kept"`    // layers left in the cache (held ones included)
	Removed []string `json:"removed"` // the layers removed
}

// CollectMeta removes from cacheDir the metadata layers beyond the keep
// most recently used that no mount uses: neither a mount of this process
// nor any overlay mounted on this machine (from /proc/self/mountinfo), nor
// one used in the last minute. keep 0 means DefaultMetaCacheKeep; a
// negative keep removes nothing. It also removes the leftovers of builds
// that died (older than an hour). Layers are rebuilt when needed again.
func CollectMeta(cacheDir string, keep int) (CollectReport, error) {
	var rep CollectReport
	if keep == 0 {
		keep = DefaultMetaCacheKeep
	}
	entries, err := os.ReadDir(cacheDir)
	if errors.Is(err, fs.ErrNotExist) {
		return rep, nil
	}
	if err != nil {
		return rep, fmt.Errorf("collect overlay metadata layers: %w", err)
	}
	mounted := mountedLowers()
	type layer struct {
		key  string
		used time.Time
	}
	var free []layer
	var errs []error
	for _, e := range entries {
		name := e.Name()
		dir := filepath.Join(cacheDir, name)
		if !e.IsDir() || name == lruDir {
			continue
		}
		if strings.HasPrefix(name, ".build-") {
			if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > time.Hour {
				errs = append(errs, os.RemoveAll(dir))
			}
			continue
		}
		held.Lock()
		inUse := held.n[dir] > 0
		held.Unlock()
		if inUse || mounted[dir] {
			rep.Kept++
			continue
		}
		used := time.Time{}
		if fi, err := os.Stat(filepath.Join(cacheDir, lruDir, name)); err == nil {
			used = fi.ModTime()
		} else if fi, err := e.Info(); err == nil {
			used = fi.ModTime()
		}
		free = append(free, layer{key: name, used: used})
	}
	slices.SortFunc(free, func(a, b layer) int { return b.used.Compare(a.used) }) // newest first
	for i, l := range free {
		if keep < 0 || i < keep || time.Since(l.used) < layerGrace {
			rep.Kept++
			continue
		}
		dir := filepath.Join(cacheDir, l.key)
		// Out of the cache first (one rename), so a mount never finds
		// half a layer; then removed.
		trash := filepath.Join(cacheDir, ".build-gone-"+l.key)
		if err := os.Rename(dir, trash); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := os.RemoveAll(trash); err != nil {
			errs = append(errs, err)
		}
		_ = os.Remove(filepath.Join(cacheDir, lruDir, l.key))
		rep.Removed = append(rep.Removed, dir)
	}
	if err := errors.Join(errs...); err != nil {
		return rep, fmt.Errorf("collect overlay metadata layers in %s: %w", cacheDir, err)
	}
	return rep, nil
}

// mountedLowers returns the lower directories of the overlays mounted on
// this machine (as this process's mount namespace shows them).
func mountedLowers() map[string]bool {
	out := map[string]bool{}
	ms, _ := mountinfo.Read()
	for _, m := range ms {
		if m.FSType != "overlay" {
			continue
		}
		for _, v := range m.SuperOption("lowerdir") {
			for _, d := range strings.Split(v, ":") {
				if d != "" {
					out[filepath.Clean(d)] = true
				}
			}
		}
	}
	return out
}
