package tools_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/tools/toolstest"
	"github.com/vfsd/vfsd/vfs/policy"
)

// manyFiles is a tree of 3000 files, each with a matching line.
func manyFiles() map[string]string {
	files := make(map[string]string, 3000)
	for i := range 3000 {
		files[fmt.Sprintf("d%02d/sub/file%04d.txt", i%30, i)] = fmt.Sprintf("needle %d %s\nhay\nneedle again\n", i, strings.Repeat("x", 60))
	}
	files["long/line.txt"] = "needle " + strings.Repeat("y", 1<<20) + "\n"
	return files
}

// TestBoundedLists: every list-shaped output stops at the caps and at the
// inline limit, says it was truncated and how to narrow the query, under
// the default preset and without caps (aos) alike (issue 11: a grep with
// max_results 1000000 returned 180 MB).
func TestBoundedLists(t *testing.T) {
	base := toolstest.New(t, nil, manyFiles()) // one session for both: 3000 files cost (most under Wine)
	for _, name := range []string{policy.PresetDefault, policy.PresetAOS} {
		e := base.WithPolicy(preset(t, name))
		limit := policy.DefaultInlineBytes
		for _, c := range []struct {
			name, tool string
			params     map[string]any
			list       string
			cap        int64
		}{
			{"grep content", "grep", map[string]any{"pattern": "needle", "max_results": 1000000}, "matches", e.Tools.Policy().Caps.MaxGrepResults},
			{"grep context", "grep", map[string]any{"pattern": "needle", "max_results": 1000000, "context": 5}, "matches", 0},
			{"grep files", "grep", map[string]any{"pattern": "needle", "max_results": 1000000, "output": "files_with_matches"}, "files", e.Tools.Policy().Caps.MaxGrepResults},
			{"grep count", "grep", map[string]any{"pattern": "needle", "max_results": 1000000, "output": "count"}, "files", e.Tools.Policy().Caps.MaxGrepResults},
			{"glob", "glob", map[string]any{"pattern": "**", "max_results": 1000000}, "paths", e.Tools.Policy().Caps.MaxGlobResults},
			{"list_directory", "list_directory", map[string]any{"depth": 10, "max_entries": 1000000}, "entries", e.Tools.Policy().Caps.MaxEntries},
		} {
			t.Run(name+"/"+c.name, func(t *testing.T) {
				resp := e.Call(c.tool, c.params)
				require.True(t, resp.OK(), "%.2000s", resp.JSON())
				require.LessOrEqual(t, len(resp.JSON()), limit, "the receipt's JSON stays under the inline limit")
				require.LessOrEqual(t, len(resp.Text), limit+1024, "so does its text")
				r := toolstest.Receipt(t, resp)
				require.Equal(t, true, r["truncated"])
				require.NotEmpty(t, r[c.list])
				if c.cap > 0 {
					require.LessOrEqual(t, int64(len(r[c.list].([]any))), c.cap)
				}
				require.Regexp(t, "narrow|subdirectory|max_", r["summary_text"])
			})
		}
		t.Run(name+"/long line clipped", func(t *testing.T) {
			resp := e.Call("grep", map[string]any{"pattern": "needle y", "path": "long"})
			require.True(t, resp.OK(), "%.2000s", resp.JSON())
			r := toolstest.Receipt(t, resp)
			m := r["matches"].([]any)
			require.Len(t, m, 1)
			require.Less(t, len(m[0].(map[string]any)["text"].(string)), 4096)
		})
	}
}

// TestDefaultPresetBounds: the default preset bounds every list and read;
// the other presets keep what their documents ask for.
func TestDefaultPresetBounds(t *testing.T) {
	c := preset(t, policy.PresetDefault).Caps
	for name, v := range map[string]int64{
		"read": c.MaxReadBytes, "inline": c.MaxInlineBytes, "grep": c.MaxGrepResults, "glob": c.MaxGlobResults,
		"entries": c.MaxEntries, "scanned files": c.MaxScannedFiles, "scanned bytes": c.MaxScannedBytes,
	} {
		require.Positive(t, v, "default preset caps %s", name)
	}
	wi := preset(t, policy.PresetWeakIncentives).Caps
	require.Equal(t, int64(48000), wi.MaxWriteChars)
	require.Equal(t, int64(16), wi.MaxDepth)
	require.Equal(t, int64(80), wi.MaxSegmentLen)
}

// TestGrepScanCaps: the scanned files/bytes caps count what the search
// would read, after ignore rules, and refuse before reading anything.
func TestGrepScanCaps(t *testing.T) {
	files := map[string]string{".gitignore": "vendor/\n", "src/a.go": "needle\n", "src/b.go": "needle\n"}
	for i := range 50 {
		files[fmt.Sprintf("vendor/v%02d.go", i)] = "needle " + strings.Repeat("v", 1000) + "\n"
	}
	pol := policy.Default()
	pol.Caps.MaxScannedFiles = 5
	pol.Caps.MaxScannedBytes = 10 << 10
	e := toolstest.New(t, pol, files)
	resp := e.Call("grep", map[string]any{"pattern": "needle"})
	require.True(t, resp.OK(), "ignored files do not count: %s", resp.JSON())
	for _, c := range []struct {
		name   string
		params map[string]any
		found  float64
	}{
		{"files", map[string]any{"pattern": "needle", "respect_gitignore": false}, 53},
		{"bytes", map[string]any{"pattern": "needle", "path": "vendor", "glob": "v0*.go", "respect_gitignore": false}, 10 * 1008},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "bytes" {
				e.Tools.Policy().Caps.MaxScannedFiles = 0
				e.Tools.Policy().Caps.MaxScannedBytes = 5 << 10
			}
			r := toolstest.Receipt(t, e.Call("grep", c.params))
			require.Equal(t, "too_large", r["error_code"], "%v", r)
			require.Equal(t, c.found, r["found"])
			require.Contains(t, r["summary_text"], "search a subdirectory")
		})
	}
}
