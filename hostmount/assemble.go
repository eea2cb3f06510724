package hostmount

import (
	"slices"

	"github.com/vfsd/vfsd/vfs"
)

// assemble merges the mounts' entries into one tree, in mount order: a
// later mount's entry replaces an earlier one at the same path (with
// everything beneath it), except that two directories merge, the later
// one's attributes winning. Parents missing above a mount point are
// created (owned by the session's default owner, mode 0755). Inodes are
// numbered in that order, so the result is deterministic. Names of one
// mount that are hard links of one host entry share one node. Files the
// import skipped are left out. now is in Unix ms.
func assemble(all []scanned, done map[*entry]imported, now int64, rep *Report) vfs.Tree {
	nowNs := now * 1e6
	parent := func() vfs.Node {
		return vfs.Node{Kind: vfs.KindDir, Mode: vfs.DefaultDirMode, Version: 1, Uid: vfs.NoOwner, Gid: vfs.NoOwner,
			Atime: nowNs, Mtime: nowNs, Ctime: nowNs, Btime: nowNs}
	}
	rootNode := parent()
	rootNode.Ino = 1
	tb := vfs.NewTreeBuilder(rootNode)
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
			d := parent()
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
		if n.Ino == 0 {
			ino++
			n.Ino = ino
		}
		tb.Set(p, n)
	}
	for _, s := range all {
		mr := MountReport{HostPath: s.mp.hostPath, MountPath: s.mp.mountPath.String()}
		linkIno := map[[2]uint64]uint64{}       // host identity → the node's inode
		linkContent := map[[2]uint64]imported{} // host identity → its first name's content
		for i := range s.entries {
			e := &s.entries[i]
			n := e.meta.node(e.kind)
			switch e.kind {
			case vfs.KindDir:
				put(e.path, n)
				continue
			case vfs.KindSymlink:
				n.Size, n.Target = int64(len(e.target)), e.target
			case vfs.KindFile:
				c, ok := done[e]
				if e.second {
					c, ok = linkContent[e.link]
				}
				if !ok {
					continue
				}
				if e.link != ([2]uint64{}) {
					linkContent[e.link] = c
				}
				n.Size, n.Blob, n.Encoding = c.size, c.hash, c.enc
				mr.Files++
				if !e.second {
					mr.Bytes += c.size
				}
			}
			if e.link != ([2]uint64{}) {
				if linkIno[e.link] == 0 {
					ino++
					linkIno[e.link] = ino
				}
				n.Ino, n.Nlink = linkIno[e.link], 2 // joined by the builder, which counts the names
			}
			put(e.path, n)
		}
		rep.Mounts = append(rep.Mounts, mr)
	}
	t := tb.Tree()
	rep.Files, rep.Bytes = t.Files(), t.Bytes()
	seen := map[uint64]bool{}
	_ = t.Walk(vfs.Root, func(_ vfs.Path, n vfs.Node) error {
		if !n.IsDir() && n.Nlink > 1 {
			if seen[n.Ino] {
				rep.Links++
				return nil
			}
			seen[n.Ino] = true
		}
		switch {
		case n.Kind == vfs.KindDir:
			rep.Dirs++
		case n.Kind == vfs.KindSymlink:
			rep.Symlinks++
		case n.IsSpecial():
			rep.Special++
		}
		return nil
	})
	return t
}
