package policy_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/policy"
)

func TestClamp(t *testing.T) {
	for _, c := range []struct{ request, cap, want int64 }{
		{0, 0, 0},   // neither: unbounded
		{10, 0, 10}, // no cap: the request
		{0, 5, 5},   // no request: the cap
		{10, 5, 5},  // over the cap: the cap
		{3, 5, 3},   // under the cap: the request
		{-1, 5, 5},  // nonsense request: the cap
		{-1, 0, 0},  // nonsense request, no cap: unbounded
	} {
		require.Equal(t, c.want, policy.Clamp(c.request, c.cap), "Clamp(%d, %d)", c.request, c.cap)
	}
}

func TestPresets(t *testing.T) {
	require.Equal(t, []string{"aos", "default", "weakincentives", "x07"}, policy.Presets())
	for _, name := range policy.Presets() {
		p, err := policy.Preset(name)
		require.NoError(t, err)
		require.NoError(t, p.Validate())
		require.Equal(t, name, p.Name)
	}
	_, err := policy.Preset("nope")
	require.ErrorContains(t, err, "use one of aos, default, weakincentives, x07")

	p, _ := policy.Preset("weakincentives")
	p.Caps.MaxDepth = 1
	q, _ := policy.Preset("weakincentives")
	require.Equal(t, int64(16), q.Caps.MaxDepth, "presets are fresh copies")
}

func TestCheck(t *testing.T) {
	wi, _ := policy.Preset(policy.PresetWeakIncentives)
	x07, _ := policy.Preset(policy.PresetX07)
	roots := &policy.Policy{Name: "roots", Symlinks: policy.SymlinksDeny, ReadRoots: []string{"src", "/docs"}, WriteRoots: []string{"src/gen"}}
	for _, c := range []struct {
		pol    *policy.Policy
		access vfs.Access
		path   string
		ok     bool
	}{
		{wi, vfs.AccessRead, "a/b/c", true},
		{wi, vfs.AccessRead, "caf\u00e9", false},
		{wi, vfs.AccessRead, "tab\there", false},
		{wi, vfs.AccessWrite, "p/p/p/p/p/p/p/p/p/p/p/p/p/p/p/p", true},
		{wi, vfs.AccessWrite, "p/p/p/p/p/p/p/p/p/p/p/p/p/p/p/p/p", false},
		{x07, vfs.AccessRead, "a/.git/config", false},
		{x07, vfs.AccessRead, "a/b.git", true},
		{roots, vfs.AccessRead, "src/x", true},
		{roots, vfs.AccessRead, "docs", true},
		{roots, vfs.AccessRead, "srcx/y", false},
		{roots, vfs.AccessRead, "src_evil", false},
		{roots, vfs.AccessWrite, "src/x", false},
		{roots, vfs.AccessWrite, "src/gen/x.go", true},
		{roots, vfs.AccessWrite, "src/generated", false},
	} {
		err := c.pol.Check(c.access, vfs.MustPath(c.path))
		if c.ok {
			require.NoError(t, err, "%s %s %q", c.pol.Name, c.access, c.path)
		} else {
			require.ErrorIs(t, err, vfs.ErrForbidden, "%s %s %q", c.pol.Name, c.access, c.path)
		}
	}
	require.ErrorIs(t, x07.CheckInput("a/../b"), vfs.ErrForbidden)
	require.NoError(t, x07.CheckInput("a/..b"))
}

func TestValidate(t *testing.T) {
	for _, p := range []*policy.Policy{
		{Name: "no symlinks"},
		{Name: "bad symlinks", Symlinks: "sometimes"},
		{Name: "bad root", Symlinks: policy.SymlinksDeny, ReadRoots: []string{"../x"}},
		{Name: "negative", Symlinks: policy.SymlinksDeny, Caps: policy.Caps{MaxEntries: -1}},
	} {
		require.Error(t, p.Validate(), p.Name)
	}
}
