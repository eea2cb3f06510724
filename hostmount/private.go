//go:build linux && !vfsd_osroot

package hostmount

import (
	"path/filepath"

	"golang.org/x/sys/unix"
)

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
