package tools_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/tools/toolstest"
	"github.com/vfsd/vfsd/vfs/policy"
)

// TestListSkipsOnlyTheHiddenFile: a hidden or ignored file leaves out that
// file alone, never the entries after it (a file's SkipDir once skipped the
// rest of its directory, and at the root the rest of the walk: under x07 a
// folder with .env listed nothing). Globs and greps walk the same trees.
func TestListSkipsOnlyTheHiddenFile(t *testing.T) {
	files := map[string]string{
		".env":       "SECRET=1\n",
		"a.txt":      "hello\n",
		"b.txt":      "hello\n",
		"sub/.env":   "SECRET=2\n",
		"sub/c.txt":  "hello\n",
		"sub/d.txt":  "hello\n",
		"sub/c0.log": "hello\n",
		"sub/e.txt":  "hello\n",
	}
	x07 := func() *policy.Policy { p, _ := policy.Preset(policy.PresetX07); return p }
	paths := func(r map[string]any, key, field string) []string {
		var out []string
		for _, e := range r[key].([]any) {
			if field == "" {
				out = append(out, e.(string))
				continue
			}
			out = append(out, e.(map[string]any)[field].(string))
		}
		return out
	}
	for _, c := range []struct {
		name   string
		pol    func() *policy.Policy
		tool   string
		params map[string]any
		key    string
		field  string
		want   []string
	}{
		{"x07 root", x07, "list_directory", map[string]any{}, "entries", "path", []string{"a.txt", "b.txt", "sub"}},
		{"x07 subdir", x07, "list_directory", map[string]any{"path": "sub"}, "entries", "path",
			[]string{"sub/c.txt", "sub/d.txt", "sub/e.txt", "sub/c0.log"}},
		{"x07 deep", x07, "list_directory", map[string]any{"depth": 2}, "entries", "path",
			[]string{"a.txt", "b.txt", "sub", "sub/c.txt", "sub/d.txt", "sub/e.txt", "sub/c0.log"}},
		{"ignored file", nil, "list_directory", map[string]any{"path": "sub", "ignore": []string{"*.log"}}, "entries", "path",
			[]string{"sub/.env", "sub/c.txt", "sub/d.txt", "sub/e.txt"}},
		{"ignored file at root", nil, "list_directory", map[string]any{"ignore": []string{".env"}, "depth": 2}, "entries", "path",
			[]string{"a.txt", "b.txt", "sub", "sub/c.txt", "sub/d.txt", "sub/e.txt", "sub/c0.log"}},
		{"x07 glob", x07, "glob", map[string]any{"pattern": "**/*.txt"}, "paths", "",
			[]string{"a.txt", "b.txt", "sub/c.txt", "sub/d.txt", "sub/e.txt"}},
		{"x07 grep", x07, "grep", map[string]any{"pattern": "hello", "output": "files_with_matches"}, "files", "path",
			[]string{"a.txt", "b.txt", "sub/c.txt", "sub/d.txt", "sub/e.txt", "sub/c0.log"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var p *policy.Policy
			if c.pol != nil {
				p = c.pol()
			}
			e := toolstest.New(t, p, files)
			resp := e.Call(c.tool, c.params)
			r := toolstest.Receipt(t, resp)
			require.Equal(t, "ok", r["status"], "receipt: %s", resp.JSON())
			require.ElementsMatch(t, c.want, paths(r, c.key, c.field), "receipt: %s", resp.JSON())
		})
	}
}
