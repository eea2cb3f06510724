package tools_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/tools/toolstest"
)

func TestEditFile(t *testing.T) {
	runCases(t, nil, []callCase{
		{name: "exact", tool: "edit_file", params: `{"path":"src/main.go","old_string":"println(\"hi\")","new_string":"println(\"hello\")"}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, "Updated src/main.go (1 replacement)", r["summary_text"])
				require.Equal(t, float64(1), r["replacements"])
				require.Equal(t, float64(2), r["version"])
				require.Contains(t, r["diff"], "+\tprintln(\"hello\")")
				require.Contains(t, e.Read("src/main.go"), "hello")
			}},
		{name: "dry run", tool: "edit_file", params: `{"path":"docs/a.txt","old_string":"two","new_string":"2","dry_run":true}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, "one\ntwo\nthree\nfour\nfive\n", e.Read("docs/a.txt"))
				require.Equal(t, float64(1), r["version"])
			}},
		{name: "regex characters are literal", tool: "edit_file", params: `{"path":"README.md","old_string":"# demo","new_string":"$1 \\\\n ${x}"}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, "$1 \\\\n ${x}\n", e.Read("README.md"))
			}},
		{name: "crlf kept", tool: "edit_file", params: `{"path":"crlf.txt","old_string":"a\nb","new_string":"x\ny\nz"}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, "x\r\ny\r\nz\r\n", e.Read("crlf.txt"))
			}},
		{name: "no final newline kept", tool: "edit_file", params: `{"path":"nofinal.txt","old_string":"last","new_string":"final"}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, "final line", e.Read("nofinal.txt"))
			}},
		{name: "fuzzy trim, reindented", tool: "edit_file", params: `{"path":"src/main.go","old_string":"println(\"hi\")  ","new_string":"println(\"a\")\nprintln(\"b\")"}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, "package main\n\nfunc main() {\n\tprintln(\"a\")\n\tprintln(\"b\")\n}\n", e.Read("src/main.go"))
				require.Equal(t, "trim", r["edits"].([]any)[0].(map[string]any)["match"])
			}},
		{name: "multi edit", tool: "edit_file", params: `{"path":"docs/a.txt","edits":[{"old_string":"one","new_string":"1"},{"old_string":"five","new_string":"5"}]}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, "1\ntwo\nthree\nfour\n5\n", e.Read("docs/a.txt"))
			}},
		{name: "multi edit all or nothing", tool: "edit_file", params: `{"path":"docs/a.txt","edits":[{"old_string":"one","new_string":"1"},{"old_string":"zzz","new_string":"5"}]}`, status: tools.StatusNotFound, code: tools.CodeNotFound,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, float64(1), r["edit_index"])
			}},
		{name: "ambiguous", tool: "edit_file", params: `{"path":"docs/a.txt","old_string":"o","new_string":"0"}`, status: tools.StatusAmbiguous, code: tools.CodeAmbiguous,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, []any{1.0, 2.0, 4.0}, r["candidate_lines"])
			}},
		{name: "replace all", tool: "edit_file", params: `{"path":"docs/a.txt","old_string":"o","new_string":"0","replace_all":true}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, float64(3), r["replacements"])
				require.Equal(t, "0ne\ntw0\nthree\nf0ur\nfive\n", e.Read("docs/a.txt"))
			}},
		{name: "not found shows closest", tool: "edit_file", params: `{"path":"docs/a.txt","old_string":"thre\nfuor","new_string":"x"}`, status: tools.StatusNotFound, code: tools.CodeNotFound,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				c := r["closest"].(map[string]any)
				require.Equal(t, float64(3), c["start_line"])
				require.Equal(t, float64(4), c["end_line"])
			}},
		{name: "empty old", tool: "edit_file", params: `{"path":"docs/a.txt","old_string":"","new_string":"x"}`, status: tools.StatusInvalidInput, code: tools.CodeEmptyOldString},
		{name: "missing old", tool: "edit_file", params: `{"path":"docs/a.txt","new_string":"x"}`, status: tools.StatusInvalidInput, code: tools.CodeEmptyOldString},
		{name: "no change", tool: "edit_file", params: `{"path":"docs/a.txt","old_string":"one","new_string":"one"}`, status: tools.StatusInvalidInput, code: tools.CodeInvalidInput},
		{name: "binary", tool: "edit_file", params: `{"path":"bin/blob.bin","old_string":"binary","new_string":"x"}`, status: tools.StatusInvalidInput, code: tools.CodeInvalidInput},
		{name: "directory", tool: "edit_file", params: `{"path":"src","old_string":"a","new_string":"b"}`, status: tools.StatusIsDirectory, code: tools.CodeIsDirectory},
		{name: "missing file", tool: "edit_file", params: `{"path":"nope","old_string":"a","new_string":"b"}`, status: tools.StatusNotFound, code: tools.CodeNotFound},
		{name: "version conflict", tool: "edit_file", params: `{"path":"docs/a.txt","old_string":"one","new_string":"1","expected_version":9}`, status: tools.StatusConflict, code: tools.CodeConflict},
		{name: "both forms", tool: "edit_file", params: `{"path":"docs/a.txt","old_string":"one","new_string":"1","edits":[{"old_string":"a","new_string":"b"}]}`, status: tools.StatusInvalidInput, code: tools.CodeInvalidInput},
	})
}
