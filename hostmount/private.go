package hostmount

import (
	"path/filepath"

	"golang.org/x/sys/unix"
)

// privateSet is what Options.Private names, resolved: the real paths, and
// the identities (device and inode) of what they are, so that a bind mount
// or a hard link of one is recognised too.
type privateSet struct {
	paths []string
	ids   map[[2]uint64]bool
}

// newPrivateSet resolves paths; those that do not exist are left out.
func newPrivateSet(paths []string) privateSet {
	ps := privateSet{ids: map[[2]uint64]bool{}}
	for _, p := range paths {
		if p == "" {
			continue
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			continue
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
		var st unix.Stat_t
		if unix.Stat(abs, &st) != nil {
			continue
		}
		ps.paths = append(ps.paths, abs)
		ps.ids[[2]uint64{st.Dev, st.Ino}] = true
	}
	return ps
}

// is reports whether st is one of the private paths.
func (ps privateSet) is(st *unix.Stat_t) bool {
	return len(ps.ids) > 0 && ps.ids[[2]uint64{st.Dev, st.Ino}]
}

// holds reports whether the real path hp is a private path or lies inside
// one.
func (ps privateSet) holds(hp string) bool {
	for _, p := range ps.paths {
		if _, ok := within(p, hp); ok {
			return true
		}
	}
	return false
}
