package tools_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/tools/toolstest"
	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/policy"
)

// callCase is one tool call and what it must return.
type callCase struct {
	name   string
	tool   string
	params any
	status tools.Status
	code   tools.Code // for failures
	check  func(t *testing.T, e *toolstest.Env, r map[string]any, text string)
}

var baseFiles = map[string]string{
	"README.md":         "# demo\n",
	"src/main.go":       "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n",
	"src/util/util.go":  "package util\n",
	"docs/a.txt":        "one\ntwo\nthree\nfour\nfive\n",
	"empty/":            "",
	"bin/blob.bin":      "\x00\x01\x02binary",
	".hidden/secret":    "s3cret\n",
	"crlf.txt":          "a\r\nb\r\n",
	"nofinal.txt":       "last line",
	"zero.txt":          "",
	"unicode/héllo.txt": "héllo wörld\n",
}

// runCases runs each case on a fresh session and checks that every failed
// call left the session exactly as it was.
func runCases(t *testing.T, pol func() *policy.Policy, cases []callCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var p *policy.Policy
			if pol != nil {
				p = pol()
			}
			e := toolstest.New(t, p, baseFiles)
			before := e.State()
			resp := e.Call(c.tool, c.params)
			r := toolstest.Receipt(t, resp)
			require.Equal(t, string(c.status), r["status"], "receipt: %s", resp.JSON())
			if c.status != tools.StatusOK {
				require.Equal(t, string(c.code), r["error_code"], "receipt: %s", resp.JSON())
				require.NotEmpty(t, r["summary_text"])
				require.Equal(t, before, e.State(), "a failed call changes nothing")
			}
			require.NotEmpty(t, resp.Text)
			if c.check != nil {
				c.check(t, e, r, resp.Text)
			}
		})
	}
}

func TestCallRejectsBadEnvelopes(t *testing.T) {
	e := toolstest.New(t, nil, baseFiles)
	before := e.State()
	r := e.Tools.Call(t.Context(), "other-session", "read_file", []byte(`{"path":"README.md"}`))
	require.Equal(t, tools.StatusForbidden, r.Status())
	require.Contains(t, string(r.JSON()), `"error_code":"session_mismatch"`)

	for _, c := range []struct {
		tool, params string
		code         tools.Code
	}{
		{"nope", `{}`, tools.CodeUnknownTool},
		{"read_file", `{"path":"README.md","bogus":1}`, tools.CodeInvalidInput},
		{"read_file", `{"path":3}`, tools.CodeInvalidInput},
		{"read_file", `[1,2]`, tools.CodeInvalidInput},
		{"read_file", `{"path":"README.md"} {}`, tools.CodeInvalidInput},
		{"write_file", `{"path":"x","inline_text":"a","inline_bytes":"YQ=="}`, tools.CodeInvalidInput},
		{"write_file", `{"path":"x"}`, tools.CodeInvalidInput},
		{"write_file", `{"path":"../x","inline_text":"a"}`, tools.CodeInvalidPath},
		{"write_file", `{"path":"x","inline_text":"a","mode":"sideways"}`, tools.CodeInvalidInput},
	} {
		r := e.Call(c.tool, c.params)
		require.Equal(t, string(c.code), toolstest.Receipt(t, r)["error_code"], "%s %s: %s", c.tool, c.params, r.JSON())
	}
	require.Equal(t, before, e.State())
}

func TestReceiptsAreDeterministic(t *testing.T) {
	run := func() []string {
		e := toolstest.New(t, nil, baseFiles)
		var out []string
		for _, c := range []struct{ tool, params string }{
			{"list_directory", `{"depth":3}`},
			{"read_file", `{"path":"docs/a.txt","start_line":2,"line_count":2}`},
			{"write_file", `{"path":"new/x.txt","inline_text":"x"}`},
			{"stat", `{"path":"new/x.txt"}`},
			{"rename", `{"from":"new","to":"old"}`},
			{"delete_file", `{"path":"old","recursive":true}`},
		} {
			out = append(out, string(e.Call(c.tool, c.params).JSON()))
		}
		return out
	}
	require.Equal(t, run(), run())
}

func TestNumericCodesUnderX07(t *testing.T) {
	pol, err := policy.Preset(policy.PresetX07)
	require.NoError(t, err)
	e := toolstest.New(t, pol, baseFiles)
	r := toolstest.Receipt(t, e.Call("read_file", `{"path":"missing.txt"}`))
	require.Equal(t, float64(60010), r["error_number"], "X07's FS_ERR_NOT_FOUND")
	r = toolstest.Receipt(t, e.Call("edit_file", `{"path":"README.md","old_string":"","new_string":"x"}`))
	require.Equal(t, "invalid_input_empty_old_string", r["error_code"])
	require.NotContains(t, r, "error_number", "X07's table has no code for it")
	// Each number means in X07's table (FS v1) what the code means.
	x07 := map[int]string{60001: "FS_ERR_POLICY_DENY", 60003: "FS_ERR_BAD_PATH", 60010: "FS_ERR_NOT_FOUND",
		60011: "FS_ERR_ALREADY_EXISTS", 60012: "FS_ERR_NOT_DIR", 60013: "FS_ERR_IS_DIR", 60015: "FS_ERR_IO",
		60016: "FS_ERR_TOO_LARGE", 60020: "FS_ERR_UNSUPPORTED"}
	want := map[tools.Code]string{
		tools.CodeForbidden: "FS_ERR_POLICY_DENY", tools.CodeInvalidPath: "FS_ERR_BAD_PATH", tools.CodeInvalidPattern: "FS_ERR_BAD_PATH",
		tools.CodeNotFound: "FS_ERR_NOT_FOUND", tools.CodeAlreadyExists: "FS_ERR_ALREADY_EXISTS", tools.CodeDirectoryNotEmpty: "FS_ERR_ALREADY_EXISTS",
		tools.CodeNotDirectory: "FS_ERR_NOT_DIR", tools.CodeIsDirectory: "FS_ERR_IS_DIR", tools.CodeInternal: "FS_ERR_IO",
		tools.CodeTooLarge: "FS_ERR_TOO_LARGE", tools.CodeInlineRequiredTooLarge: "FS_ERR_TOO_LARGE", tools.CodeUnknownTool: "FS_ERR_UNSUPPORTED",
	}
	for _, c := range tools.Codes() {
		require.NotEmpty(t, c.Status())
		require.Equal(t, want[c], x07[c.Number()], "%s is numbered %d", c, c.Number())
	}
}

func TestFileSystemTools(t *testing.T) {
	runCases(t, nil, []callCase{
		{name: "list root", tool: "list_directory", params: `{}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Contains(t, text, "[DIR] src/\n")
				require.Contains(t, text, "[FILE] README.md (7 bytes)\n")
				require.NotContains(t, text, "main.go", "depth 1")
			}},
		{name: "list depth and ignore", tool: "list_directory", params: `{"path":"src","depth":5,"ignore":["util"]}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, "[FILE] src/main.go (45 bytes)\n", text)
			}},
		{name: "list truncated", tool: "list_directory", params: `{"depth":9,"max_entries":2}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, true, r["truncated"])
				require.Len(t, r["entries"], 2)
			}},
		{name: "list a file", tool: "list_directory", params: `{"path":"README.md"}`, status: tools.StatusNotDirectory, code: tools.CodeNotDirectory},
		{name: "list missing", tool: "list_directory", params: `{"path":"nope"}`, status: tools.StatusNotFound, code: tools.CodeNotFound},
		{name: "list bad ignore", tool: "list_directory", params: `{"ignore":["[x"]}`, status: tools.StatusInvalidPattern, code: tools.CodeInvalidPattern},
		{name: "list depth 0", tool: "list_directory", params: `{"depth":0}`, status: tools.StatusInvalidInput, code: tools.CodeInvalidInput},
		{name: "stat file", tool: "stat", params: `{"path":"/src/main.go"}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, "src/main.go", r["path"])
				require.Equal(t, "file", r["kind"])
				require.Equal(t, "0644", r["mode"])
				require.Equal(t, "utf-8", r["encoding"])
			}},
		{name: "stat missing", tool: "stat", params: `{"path":"x"}`, status: tools.StatusNotFound, code: tools.CodeNotFound},
		{name: "exists yes", tool: "exists", params: `{"path":"src"}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, true, r["exists"])
				require.Equal(t, "dir", r["kind"])
			}},
		{name: "exists no", tool: "exists", params: `{"path":"src/nope"}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, false, r["exists"])
			}},
		{name: "mkdir parents", tool: "mkdir", params: `{"path":"a/b/c"}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, true, r["created"])
			}},
		{name: "mkdir existing", tool: "mkdir", params: `{"path":"src"}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, false, r["created"])
			}},
		{name: "mkdir without parents", tool: "mkdir", params: `{"path":"x/y","parents":false}`, status: tools.StatusNotFound, code: tools.CodeNotFound},
		{name: "mkdir over file", tool: "mkdir", params: `{"path":"README.md"}`, status: tools.StatusAlreadyExists, code: tools.CodeAlreadyExists},
		{name: "delete file", tool: "delete_file", params: `{"path":"README.md"}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, true, r["deleted"])
				require.Equal(t, false, toolstest.Receipt(t, e.Call("exists", `{"path":"README.md"}`))["exists"])
			}},
		{name: "delete dir needs recursive", tool: "delete_file", params: `{"path":"src"}`, status: tools.StatusInvalidInput, code: tools.CodeDirectoryNotEmpty},
		{name: "delete dir recursive", tool: "delete_file", params: `{"path":"src","recursive":true}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, float64(4), r["removed"])
			}},
		{name: "delete empty dir", tool: "delete_file", params: `{"path":"empty"}`, status: tools.StatusOK},
		{name: "delete missing", tool: "delete_file", params: `{"path":"nope"}`, status: tools.StatusNotFound, code: tools.CodeNotFound},
		{name: "delete missing allowed", tool: "delete_file", params: `{"path":"nope","allow_missing":true}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, false, r["deleted"])
			}},
		{name: "delete root", tool: "delete_file", params: `{"path":"/","recursive":true}`, status: tools.StatusForbidden, code: tools.CodeForbidden},
		{name: "rename file", tool: "rename", params: `{"from":"README.md","to":"docs/README.md"}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, "# demo\n", e.Read("docs/README.md"))
			}},
		{name: "rename dir into new parents", tool: "rename", params: `{"from":"src","to":"lib/go/src"}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, "package util\n", e.Read("lib/go/src/util/util.go"))
			}},
		{name: "rename onto existing", tool: "rename", params: `{"from":"README.md","to":"docs/a.txt"}`, status: tools.StatusAlreadyExists, code: tools.CodeAlreadyExists},
		{name: "rename overwrite", tool: "rename", params: `{"from":"README.md","to":"docs/a.txt","overwrite":true}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, "# demo\n", e.Read("docs/a.txt"))
			}},
		{name: "rename dir over non-empty dir", tool: "rename", params: `{"from":"docs","to":"src","overwrite":true}`, status: tools.StatusInvalidInput, code: tools.CodeDirectoryNotEmpty},
		{name: "rename into itself", tool: "rename", params: `{"from":"src","to":"src/util/x"}`, status: tools.StatusInvalidInput, code: tools.CodeInvalidInput},
		{name: "rename missing", tool: "rename", params: `{"from":"nope","to":"x"}`, status: tools.StatusNotFound, code: tools.CodeNotFound},
	})
}

func TestReadFile(t *testing.T) {
	runCases(t, nil, []callCase{
		{name: "whole", tool: "read_file", params: `{"path":"docs/a.txt"}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, "one\ntwo\nthree\nfour\nfive\n", r["inline_text"])
				require.Equal(t, float64(5), r["total_lines"])
				require.Equal(t, false, r["truncated"])
				require.Equal(t, float64(1), r["version"])
			}},
		{name: "line range", tool: "read_file", params: `{"path":"docs/a.txt","start_line":2,"line_count":2,"line_numbers":true}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, "two\nthree\n", r["inline_text"])
				require.Equal(t, "     2\ttwo\n     3\tthree\n[... showing lines 2-3 of 5; read on with start_line=4]\n", text)
				require.Equal(t, true, r["truncated"])
				require.Equal(t, float64(4), r["offset_bytes"])
			}},
		{name: "offset limit aliases", tool: "read_file", params: `{"path":"docs/a.txt","offset":5,"limit":10}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, "five\n", r["inline_text"])
				require.Equal(t, false, r["truncated"])
			}},
		{name: "byte range", tool: "read_file", params: `{"path":"docs/a.txt","offset_bytes":4,"max_bytes":3}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, "two", r["inline_text"])
				require.Equal(t, true, r["truncated"])
			}},
		{name: "binary", tool: "read_file", params: `{"path":"bin/blob.bin"}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, "binary", r["encoding"])
				require.Equal(t, "AAECYmluYXJ5", r["inline_bytes"])
			}},
		{name: "encoding bytes", tool: "read_file", params: `{"path":"README.md","encoding":"bytes"}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, "IyBkZW1vCg==", r["inline_bytes"])
			}},
		{name: "empty file", tool: "read_file", params: `{"path":"zero.txt"}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, "", r["inline_text"])
			}},
		{name: "past the end", tool: "read_file", params: `{"path":"docs/a.txt","start_line":9}`, status: tools.StatusInvalidInput, code: tools.CodeInvalidInput},
		{name: "both modes", tool: "read_file", params: `{"path":"docs/a.txt","start_line":1,"max_bytes":2}`, status: tools.StatusInvalidInput, code: tools.CodeInvalidInput},
		{name: "directory", tool: "read_file", params: `{"path":"src"}`, status: tools.StatusIsDirectory, code: tools.CodeIsDirectory},
		{name: "missing", tool: "read_file", params: `{"path":"src/nope.go"}`, status: tools.StatusNotFound, code: tools.CodeNotFound},
		{name: "no path", tool: "read_file", params: `{}`, status: tools.StatusInvalidInput, code: tools.CodeInvalidInput},
		{name: "dotdot", tool: "read_file", params: `{"path":"src/../../etc/passwd"}`, status: tools.StatusInvalidInput, code: tools.CodeInvalidPath},
	})
}

func TestOutputModes(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 8<<10) // 128 KiB
	e := toolstest.New(t, nil, map[string]string{"big.txt": big, "small.txt": "x"}, func(o *tools.Options) { o.InlineBytes = 1 << 10 })
	r := toolstest.Receipt(t, e.Call("read_file", `{"path":"big.txt","offset_bytes":0}`))
	blob := r["blob"].(map[string]any)
	require.Equal(t, float64(len(big)), blob["size_bytes"])
	require.Equal(t, big[:512], blob["preview"])
	ref := blob["blob_ref"].(string)
	require.True(t, strings.HasPrefix(ref, "blake3:"))

	require.Equal(t, "vfsd://blobs/"+strings.TrimPrefix(ref, "blake3:"), blob["uri"])
	r = toolstest.Receipt(t, e.Call("read_file", `{"path":"big.txt","offset_bytes":0,"output_mode":"require_inline"}`))
	require.Equal(t, "inline_required_too_large", r["error_code"])
	require.Equal(t, "too_large", r["status"])

	// A blob is usable as write_file content.
	w := e.Call("write_file", map[string]any{"path": "copy.txt", "blob_ref": ref})
	require.True(t, w.OK(), "%s", w.JSON())
	require.Equal(t, big, e.Read("copy.txt"))
	r = toolstest.Receipt(t, e.Call("write_file", map[string]any{"path": "c2.txt", "blob_ref": "blake3:" + strings.Repeat("0", 64)}))
	require.Equal(t, "not_found", r["error_code"])
	r = toolstest.Receipt(t, e.Call("write_file", map[string]any{"path": "c2.txt", "blob_ref": "nope"}))
	require.Equal(t, "invalid_input", r["error_code"])
}

func vfsPath(s string) vfs.Path { return vfs.MustPath(s) }
