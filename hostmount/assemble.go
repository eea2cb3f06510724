package hostmount

import (
	"io/fs"
	"slices"

	"github.com/vfsd/vfsd/vfs"
)

func vfsMode(m uint32) fs.FileMode { return fs.FileMode(m) & fs.ModePerm }

// assemble merges the mounts' entries into one tree, in mount order: a
// later mount's entry replaces an earlier one at the same path (with
// everything beneath it), except that two directories merge, the later
// one's attributes winning. Parents missing above a mount point are
// created. Inodes are numbered in that order, so the result is
// deterministic. Files the import skipped are left out.
func assemble(all []scanned, done map[*entry]imported, now int64, rep *Report) vfs.Tree {
	dir := func(mode uint32, mtime int64) vfs.Node {
		return vfs.Node{Kind: vfs.KindDir, Mode: vfsMode(mode), Version: 1, Created: mtime, Updated: mtime, Uid: vfs.NoOwner, Gid: vfs.NoOwner}
	}
	tb := vfs.NewTreeBuilder(vfs.Node{Kind: vfs.KindDir, Mode: vfs.DefaultDirMode, Version: 1, Ino: 1, Created: now, Updated: now,
		Uid: vfs.NoOwner, Gid: vfs.NoOwner})
	ino := uint64(1)
	put := func(p vfs.Path, n vfs.Node) {
		var parents []vfs.Path
		p.Ancestors(func(a vfs.Path) bool {
			if a != vfs.Root {
				parents = append(parents, a)
			}
			return true
		})
		for _, a := range slices.Backward(parents) {
			if cur, ok := tb.Get(a); ok && cur.IsDir() {
				continue
			} else if ok {
				tb.DeleteSubtree(a)
			}
			ino++
			d := dir(uint32(vfs.DefaultDirMode), now)
			d.Ino = ino
			tb.Set(a, d)
		}
		if cur, ok := tb.Get(p); ok {
			if cur.IsDir() && n.IsDir() {
				n.Ino = cur.Ino
				tb.Set(p, n)
				return
			}
			tb.DeleteSubtree(p)
		}
		ino++
		n.Ino = ino
		tb.Set(p, n)
	}
	for _, s := range all {
		mr := MountReport{HostPath: s.mp.hostPath, MountPath: s.mp.mountPath.String()}
		for i := range s.entries {
			e := &s.entries[i]
			switch e.kind {
			case vfs.KindDir:
				put(e.path, dir(uint32(e.mode), e.mtime))
			case vfs.KindSymlink:
				put(e.path, vfs.Node{Kind: vfs.KindSymlink, Mode: vfs.SymlinkMode, Size: int64(len(e.target)), Version: 1,
					Created: e.mtime, Updated: e.mtime, Target: e.target, Uid: vfs.NoOwner, Gid: vfs.NoOwner})
			case vfs.KindFile:
				c, ok := done[e]
				if !ok {
					continue
				}
				put(e.path, vfs.Node{Kind: vfs.KindFile, Mode: e.mode, Size: c.size, Version: 1, Created: e.mtime,
					Updated: e.mtime, Blob: c.hash, Encoding: c.enc, Uid: vfs.NoOwner, Gid: vfs.NoOwner})
				mr.Files++
				mr.Bytes += c.size
			}
		}
		rep.Mounts = append(rep.Mounts, mr)
	}
	t := tb.Tree()
	rep.Files, rep.Bytes = t.Files(), t.Bytes()
	_ = t.Walk(vfs.Root, func(_ vfs.Path, n vfs.Node) error {
		switch n.Kind {
		case vfs.KindDir:
			rep.Dirs++
		case vfs.KindSymlink:
			rep.Symlinks++
		}
		return nil
	})
	return t
}
