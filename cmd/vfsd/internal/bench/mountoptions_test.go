package bench

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/mount"
)

// TestParseVariant: each lever turns its option on, names default to the
// levers, and an unknown lever is refused with the list of known ones.
func TestParseVariant(t *testing.T) {
	for _, c := range []struct {
		spec string
		want MountVariant
	}{
		{"wb=writeback", MountVariant{Name: "wb", Options: mount.Options{Writeback: true}}},
		{"no-cache-dir", MountVariant{Name: "no_cache_dir", Options: mount.Options{NoCacheDir: true}}},
		{"dirs=no-cache-dir,full-readdirplus", MountVariant{Name: "dirs", Options: mount.Options{NoCacheDir: true, FullReaddirPlus: true}}},
		{"no-readdirplus", MountVariant{Name: "no_readdirplus", Options: mount.Options{NoReaddirPlus: true}}},
		{"old=no-cache-fill,no-negative-cache,splice", MountVariant{Name: "old",
			Options: mount.Options{NoCacheFill: true, NoNegativeCache: true, Splice: true}}},
	} {
		got, err := ParseVariant(c.spec)
		require.NoError(t, err, c.spec)
		require.Equal(t, c.want, got, c.spec)
	}
	_, err := ParseVariant("x=warp-speed")
	require.ErrorContains(t, err, "no-cache-dir")
}
