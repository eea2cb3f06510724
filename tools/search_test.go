package tools_test

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/tools/toolstest"
)

var searchFiles = map[string]string{
	"a.go":            "package a\n\nfunc ServeHandler() {}\nfunc other() {}\n",
	"b/b.go":          "package b\n// serveHandler is lower case\nfunc (x) ServeHandler() {}\n",
	"b/notes.md":      "ServeHandler in prose\n",
	"gen/out.go":      "package gen\nfunc ServeHandler() {}\n",
	".gitignore":      "gen/\n",
	"bin/x.bin":       "\x00ServeHandler",
	".hidden/h.go":    "func ServeHandler() {}\n",
	"regex.txt":       "a.b\naxb\n(a+)\n",
	"empty.txt":       "",
	"deep/x/y/z/w.go": "package w\n",
}

func TestGrepAndGlob(t *testing.T) {
	cases := []callCase{
		{name: "content", tool: "grep", params: `{"pattern":"func \\w*Handler"}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, ".hidden/h.go:1:func ServeHandler() {}\na.go:3:func ServeHandler() {}\n", text, "gitignored gen/ and binary files skipped")
			}},
		{name: "no ignore", tool: "grep", params: `{"pattern":"ServeHandler","respect_gitignore":false,"output":"files_with_matches"}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Contains(t, text, "gen/out.go\n")
			}},
		{name: "case insensitive count", tool: "grep", params: `{"pattern":"servehandler","case_insensitive":true,"output":"count","glob":"*.go"}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, []any{
					map[string]any{"path": ".hidden/h.go", "count": 1.0},
					map[string]any{"path": "a.go", "count": 1.0},
					map[string]any{"path": "b/b.go", "count": 2.0},
				}, r["files"])
			}},
		{name: "fixed strings", tool: "grep", params: `{"pattern":"a.b","fixed_strings":true,"path":"regex.txt"}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, "regex.txt:1:a.b\n", text)
			}},
		{name: "context", tool: "grep", params: `{"pattern":"other","context":1,"path":"a.go"}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, "a.go-3-func ServeHandler() {}\na.go:4:func other() {}\n", text)
			}},
		{name: "max results", tool: "grep", params: `{"pattern":".","max_results":2}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, true, r["truncated"])
				require.Len(t, r["matches"], 2)
			}},
		{name: "invalid regex", tool: "grep", params: `{"pattern":"(unclosed"}`, status: tools.StatusInvalidRegex, code: tools.CodeInvalidRegex},
		{name: "invalid glob filter", tool: "grep", params: `{"pattern":"x","glob":"[x"}`, status: tools.StatusInvalidPattern, code: tools.CodeInvalidPattern},
		{name: "missing path", tool: "grep", params: `{"pattern":"x","path":"nope"}`, status: tools.StatusNotFound, code: tools.CodeNotFound},
		{name: "no pattern", tool: "grep", params: `{}`, status: tools.StatusInvalidInput, code: tools.CodeInvalidInput},
		{name: "glob by path", tool: "glob", params: `{"pattern":"**/*.go","sort":"path"}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, []any{".hidden/h.go", "a.go", "b/b.go", "deep/x/y/z/w.go"}, r["paths"])
			}},
		{name: "glob by mtime", tool: "glob", params: `{"pattern":"**/*.go","path":"b"}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, []any{"b/b.go"}, r["paths"])
			}},
		{name: "glob truncated", tool: "glob", params: `{"pattern":"**","max_results":1}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, true, r["truncated"])
			}},
		{name: "glob invalid", tool: "glob", params: `{"pattern":"{a,"}`, status: tools.StatusInvalidPattern, code: tools.CodeInvalidPattern},
		{name: "glob bad sort", tool: "glob", params: `{"pattern":"*","sort":"size"}`, status: tools.StatusInvalidInput, code: tools.CodeInvalidInput},
	}
	for _, engine := range []string{"rg", "native"} {
		t.Run(engine, func(t *testing.T) {
			if engine == "rg" {
				if _, err := exec.LookPath("rg"); err != nil {
					t.Skip("rg is not installed (apt-get install ripgrep); the native engine is tested below")
				}
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					e := toolstest.New(t, nil, searchFiles, func(o *tools.Options) { o.GrepEngine = engine })
					before := e.State()
					resp := e.Call(c.tool, c.params)
					r := toolstest.Receipt(t, resp)
					require.Equal(t, string(c.status), r["status"], "receipt: %s", resp.JSON())
					if c.status != tools.StatusOK {
						require.Equal(t, string(c.code), r["error_code"], "receipt: %s", resp.JSON())
					}
					require.Equal(t, before, e.State())
					if c.check != nil {
						c.check(t, e, r, resp.Text)
					}
				})
			}
		})
	}
}

// TestGrepEnginesAgree compares whole receipts of both engines.
func TestGrepEnginesAgree(t *testing.T) {
	if _, err := exec.LookPath("rg"); err != nil {
		t.Skip("rg is not installed (apt-get install ripgrep)")
	}
	rg := toolstest.New(t, nil, searchFiles, func(o *tools.Options) { o.GrepEngine = "rg" })
	native := toolstest.New(t, nil, searchFiles, func(o *tools.Options) { o.GrepEngine = "native" })
	for _, params := range []string{
		`{"pattern":"Handler"}`, `{"pattern":"^$"}`, `{"pattern":"a.b","context":2}`,
		`{"pattern":"(?i)SERVE","output":"count"}`, `{"pattern":"x","output":"files_with_matches","respect_gitignore":false}`,
	} {
		require.Equal(t, string(native.Call("grep", params).JSON()), string(rg.Call("grep", params).JSON()), params)
	}
}
