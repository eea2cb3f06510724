package tools_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/tools/toolstest"
	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/policy"
)

// TestPatchSymlinkAliases is the attack of issue 11 (finding 1): a patch or
// a rename whose two paths name the same file through a symlink must never
// report success while losing content. Either the result holds every
// change the receipt claims, or the call fails and the session is exactly
// as it was.
func TestPatchSymlinkAliases(t *testing.T) {
	setup := func(t *testing.T) *toolstest.Env {
		p, err := policy.Preset(policy.PresetDefault)
		require.NoError(t, err)
		p.Symlinks = policy.SymlinksWithinRoot
		e := toolstest.New(t, p, map[string]string{"x.txt": "one\n", "d/f.txt": "eff\n", "keep.txt": "keep\n"})
		for link, target := range map[string]string{"y.txt": "x.txt", "l": "d", "k.txt": "keep.txt"} {
			_, err := e.S.Symlink(t.Context(), target, vfs.MustPath(link))
			require.NoError(t, err)
		}
		return e
	}
	// reachable checks that path names a file whose content is want, through
	// any symlinks.
	reachable := func(t *testing.T, e *toolstest.Env, path, want string) {
		t.Helper()
		r := toolstest.Receipt(t, e.Call("read_file", map[string]any{"path": path}))
		require.Equal(t, "ok", r["status"], "%s must still be readable: %v", path, r)
		require.Equal(t, want+"\n", r["inline_text"], "%s", path)
	}
	cases := []struct {
		name  string
		tool  string
		args  map[string]any
		check func(t *testing.T, e *toolstest.Env) // when the call succeeds
	}{
		{name: "move onto a symlink to itself", tool: "apply_patch",
			args:  map[string]any{"patch": "*** Begin Patch\n*** Update File: x.txt\n*** Move to: y.txt\n@@\n-one\n+two\n*** End Patch"},
			check: func(t *testing.T, e *toolstest.Env) { reachable(t, e, "y.txt", "two") }},
		{name: "move onto itself through a linked directory", tool: "apply_patch",
			args:  map[string]any{"patch": "*** Begin Patch\n*** Update File: l/f.txt\n*** Move to: d/f.txt\n@@\n-eff\n+EFF\n*** End Patch"},
			check: func(t *testing.T, e *toolstest.Env) { reachable(t, e, "d/f.txt", "EFF") }},
		{name: "two updates of one file by two names", tool: "apply_patch",
			args: map[string]any{"patch": "*** Begin Patch\n*** Update File: y.txt\n@@\n-one\n+two\n*** Update File: x.txt\n@@\n-one\n+three\n*** End Patch"},
			check: func(t *testing.T, e *toolstest.Env) {
				t.Fatalf("both hunks edit the line \"one\" of one file; one change would be lost, so the patch must be rejected; x.txt is %q", e.Read("x.txt"))
			}},
		{name: "update through a symlink edits its target", tool: "apply_patch",
			args: map[string]any{"patch": "*** Begin Patch\n*** Update File: y.txt\n@@\n-one\n+two\n*** End Patch"},
			check: func(t *testing.T, e *toolstest.Env) {
				require.Equal(t, "two\n", e.Read("x.txt"))
				n, ok, _ := e.S.Tree().Lookup(vfs.MustPath("y.txt"))
				require.True(t, ok && n.IsSymlink(), "the link stays a link")
			}},
		{name: "add through a symlink then delete its target", tool: "apply_patch",
			args: map[string]any{"patch": "*** Begin Patch\n*** Add File: y.txt\n+new\n*** Delete File: x.txt\n*** End Patch"},
			check: func(t *testing.T, e *toolstest.Env) {
				// The add writes x.txt through y.txt, and the delete then
				// removes it: the receipt names the one file both touched.
				_, ok, _ := e.S.Tree().Lookup(vfs.MustPath("x.txt"))
				require.False(t, ok)
			}},
		{name: "delete a symlink", tool: "apply_patch",
			args:  map[string]any{"patch": "*** Begin Patch\n*** Delete File: k.txt\n*** End Patch"},
			check: func(t *testing.T, e *toolstest.Env) { reachable(t, e, "keep.txt", "keep") }},
		{name: "rename onto a symlink to itself", tool: "rename",
			args:  map[string]any{"from": "x.txt", "to": "y.txt", "overwrite": true},
			check: func(t *testing.T, e *toolstest.Env) { reachable(t, e, "y.txt", "one") }},
		{name: "rename onto itself through a linked directory", tool: "rename",
			args:  map[string]any{"from": "l/f.txt", "to": "d/f.txt", "overwrite": true},
			check: func(t *testing.T, e *toolstest.Env) { reachable(t, e, "d/f.txt", "eff") }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := setup(t)
			before := e.State()
			r := e.Call(c.tool, c.args)
			if !r.OK() {
				require.Equal(t, before, e.State(), "a failed call changes nothing: %s", r.JSON())
				return
			}
			c.check(t, e)
		})
	}
}
