package tools_test

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/tools/toolstest"
	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/policy"
)

// allocated returns the bytes fn allocated on the heap: a sanity check
// that a request's memory is bounded by its window, not the file's or the
// output's size (never a timing assertion).
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func preset(t *testing.T, name string) *policy.Policy {
	t.Helper()
	p, err := policy.Preset(name)
	require.NoError(t, err)
	return p
}

// sparse makes path a sparse file of size bytes in the session, as
// `truncate -s` through the FUSE mount does.
func sparse(t *testing.T, e *toolstest.Env, path string, size int64) {
	t.Helper()
	ctx := context.Background()
	_, err := e.S.WriteFile(ctx, vfs.MustPath(path), strings.NewReader("x"), vfs.WriteOptions{CreateParents: true})
	require.NoError(t, err)
	_, err = e.S.Truncate(ctx, vfs.MustPath(path), size)
	require.NoError(t, err)
}

// TestBoundedEdit: an edit's output size and replacement count are checked
// before the text is built, under every preset, so that a small request
// cannot make the daemon allocate without bound (issue 11: 36 chained
// A→AA replace_all edits grew a 2 KB request to 2^36 bytes and killed the
// daemon).
func TestBoundedEdit(t *testing.T) {
	chain := make([]map[string]any, 36)
	for i := range chain {
		chain[i] = map[string]any{"old_string": "A", "new_string": "AA", "replace_all": true}
	}
	longChain := make([]map[string]any, 36)
	for i := range longChain {
		longChain[i] = map[string]any{"old_string": "AAAAAAAA", "new_string": "AAAAAAAAAAAAAAAA", "replace_all": true}
	}
	for _, c := range []struct {
		name   string
		preset string
		files  map[string]string
		params map[string]any
		code   tools.Code
	}{
		{"36 chained A→AA, default", policy.PresetDefault, map[string]string{"f.txt": "A\n"},
			map[string]any{"path": "f.txt", "edits": chain}, tools.CodeTooLarge},
		{"36 chained A→AA, aos (no caps)", policy.PresetAOS, map[string]string{"f.txt": "A\n"},
			map[string]any{"path": "f.txt", "edits": chain}, tools.CodeTooLarge},
		{"36 chained 8→16 bytes, aos (no caps)", policy.PresetAOS, map[string]string{"f.txt": "AAAAAAAA\n"},
			map[string]any{"path": "f.txt", "edits": longChain}, tools.CodeTooLarge},
		{"one replace_all past the ceiling, aos", policy.PresetAOS, map[string]string{"f.txt": strings.Repeat("A", 1<<20)},
			map[string]any{"path": "f.txt", "old_string": "A", "new_string": strings.Repeat("B", 200), "replace_all": true}, tools.CodeTooLarge},
		{"not found with a long old_string shows a clipped region", policy.PresetAOS, map[string]string{"f.txt": strings.Repeat("some line of the file\n", 100000)},
			map[string]any{"path": "f.txt", "old_string": strings.Repeat("some line of thi file\n", 20000), "new_string": "y"}, tools.CodeNotFound},
		{"ambiguous in a huge file lists few candidates", policy.PresetAOS, map[string]string{"f.txt": strings.Repeat("x\n", 1<<20)},
			map[string]any{"path": "f.txt", "old_string": "x", "new_string": "y"}, tools.CodeAmbiguous},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := toolstest.New(t, preset(t, c.preset), c.files)
			before := e.State()
			var resp *tools.Response
			n := allocated(func() { resp = e.Call("edit_file", c.params) })
			r := toolstest.Receipt(t, resp)
			require.Equal(t, string(c.code), r["error_code"], "%.2000s", resp.JSON())
			require.Less(t, n, uint64(512<<20), "the refused edit allocated %d bytes", n)
			require.Less(t, len(resp.JSON()), 64<<10, "the receipt stays small")
			require.Equal(t, before, e.State(), "a refused edit changes nothing")
			if c.code == tools.CodeTooLarge {
				require.Contains(t, r["summary_text"], "limit")
				require.NotZero(t, r["limit"])
			}
		})
	}
}

// TestBoundedEditOfHugeFile: edit_file refuses a file larger than it may
// build before reading it.
func TestBoundedEditOfHugeFile(t *testing.T) {
	e := toolstest.New(t, nil, nil)
	sparse(t, e, "huge.txt", 100<<30)
	var resp *tools.Response
	n := allocated(func() {
		resp = e.Call("edit_file", map[string]any{"path": "huge.txt", "old_string": "a", "new_string": "b"})
	})
	r := toolstest.Receipt(t, resp)
	require.Equal(t, string(tools.CodeTooLarge), r["error_code"], "%s", resp.JSON())
	require.Less(t, n, uint64(64<<20))
}
