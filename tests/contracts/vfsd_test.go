package contracts

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/contract"
	"github.com/vfsd/vfsd/contract/contracttest"
)

// vfsdCases are clauses of vfsd's own contract (DESIGN.md, docs/api.md):
// what the default contract promises on every transport.
var vfsdCases = []contracttest.Case{
	{
		Clause: `read_file "returns the file's text, size and version"`,
		Files:  map[string]string{"a.txt": "one\ntwo\n"},
		Steps: []contracttest.Step{{Tool: "read_file", Params: `{"path":"a.txt"}`, WantStatus: "ok",
			WantBody: `{"status":"ok","path":"a.txt","size_bytes":8,"total_lines":2,"truncated":false}`,
			Check: func(t testing.TB, r contract.Result, _ map[string]string) {
				require.Contains(t, r.Text, "two")
			}}},
	},
	{
		Clause: `read_file "a 1-based line range (start_line, line_count)"`,
		Files:  map[string]string{"a.txt": "l1\nl2\nl3\nl4\n"},
		Steps: []contracttest.Step{{Tool: "read_file", Params: `{"path":"a.txt","start_line":2,"line_count":2}`,
			WantBody: `{"status":"ok","start_line":2,"end_line":3,"truncated":true}`}},
	},
	{
		Clause: `read_file of a missing file "fails with not_found"`,
		Steps: []contracttest.Step{{Tool: "read_file", Params: `{"path":"missing.txt"}`, WantError: true, WantStatus: "not_found",
			WantBody: `{"status":"not_found","error_code":"not_found"}`}},
	},
	{
		Clause: `policy preset x07 "numeric_codes": each error_number is the X07 code that means the same (FS v1's table), none where X07 has none`,
		Policy: `"x07"`,
		Files:  map[string]string{"a.txt": "x", ".env": "s", "d/": ""},
		Steps: []contracttest.Step{
			{Tool: "read_file", Params: `{"path":"missing.txt"}`, WantError: true, WantStatus: "not_found",
				WantBody: `{"error_code":"not_found","error_number":60010}`}, // FS_ERR_NOT_FOUND, not 60001 FS_ERR_POLICY_DENY
			{Tool: "read_file", Params: `{"path":".env"}`, WantError: true, WantStatus: "forbidden",
				WantBody: `{"error_code":"forbidden","error_number":60001}`}, // FS_ERR_POLICY_DENY
			{Tool: "read_file", Params: `{"path":"d"}`, WantError: true, WantBody: `{"error_code":"is_directory","error_number":60013}`}, // FS_ERR_IS_DIR
			{Tool: "edit_file", Params: `{"path":"a.txt","old_string":"","new_string":"y"}`, WantError: true,
				Check: func(t testing.TB, r contract.Result, _ map[string]string) {
					require.Equal(t, "invalid_input_empty_old_string", body(t, r)["error_code"])
					require.NotContains(t, body(t, r), "error_number", "X07's table has no such code: %s", r.Body)
				}},
		},
	},
	{
		Clause: `paths "relative to the workspace root, without ..": d/../u.txt is invalid_path in every tool, apply_patch included, even where it stays inside`,
		Files:  map[string]string{"u.txt": "u\n", "d/x.txt": "x"},
		Steps: []contracttest.Step{
			{Tool: "read_file", Params: `{"path":"d/../u.txt"}`, WantError: true, WantStatus: "invalid_input", WantBody: `{"error_code":"invalid_path"}`},
			{Tool: "write_file", Params: `{"path":"../u.txt","inline_text":"x"}`, WantError: true, WantBody: `{"error_code":"invalid_path"}`},
			{Tool: "apply_patch", Params: `{"patch":"*** Begin Patch\n*** Update File: d/../u.txt\n@@\n-u\n+v\n*** End Patch\n"}`, WantError: true, WantBody: `{"error_code":"invalid_path"}`},
			{Tool: "apply_patch", Params: `{"patch":"*** Begin Patch\n*** Add File: ../evil.txt\n+x\n*** End Patch\n"}`, WantError: true, WantBody: `{"error_code":"invalid_path"}`,
				Check: func(t testing.TB, _ contract.Result, files map[string]string) {
					require.Equal(t, "u\n", files["/u.txt"])
				}},
		},
	},
	{
		Clause: `read_file of a directory "fails with is_directory"`,
		Files:  map[string]string{"d/": ""},
		Steps:  []contracttest.Step{{Tool: "read_file", Params: `{"path":"d"}`, WantError: true, WantStatus: "is_directory"}},
	},
	{
		Clause: `parameters "are decoded strictly: an unknown field is invalid_input"`,
		Files:  map[string]string{"a.txt": "x"},
		Steps: []contracttest.Step{{Tool: "read_file", Params: `{"path":"a.txt","bogus":1}`, WantError: true, WantStatus: "invalid_input",
			WantBody: `{"error_code":"invalid_input"}`}},
	},
	{
		Clause: `an unknown tool "is invalid_input with error_code unknown_tool"`,
		Steps: []contracttest.Step{{Tool: "no_such_tool", WantError: true, WantStatus: "invalid_input",
			WantBody: `{"error_code":"unknown_tool"}`}},
	},
	{
		Clause: `write_file "creates the file and its parents"`,
		Steps: []contracttest.Step{{Tool: "write_file", Params: `{"path":"src/new.go","inline_text":"package x\n"}`,
			WantBody: `{"status":"ok","path":"src/new.go","created":true,"written_bytes":10,"version":1}`,
			Check: func(t testing.TB, _ contract.Result, files map[string]string) {
				require.Equal(t, "package x\n", files["/src/new.go"])
				require.Contains(t, files, "/src/")
			}}},
	},
	{
		Clause: `write_file mode create_new "fails with already_exists when the file exists"`,
		Files:  map[string]string{"a.txt": "old"},
		Steps: []contracttest.Step{{Tool: "write_file", Params: `{"path":"a.txt","inline_text":"new","mode":"create_new"}`,
			WantError: true, WantStatus: "already_exists",
			Check: func(t testing.TB, _ contract.Result, files map[string]string) {
				require.Equal(t, "old", files["/a.txt"], "a failed write changes nothing")
			}}},
	},
	{
		Clause: `write_file with expected_version "fails with conflict unless the file is at that version"`,
		Files:  map[string]string{"a.txt": "old"},
		Steps: []contracttest.Step{
			{Tool: "write_file", Params: `{"path":"a.txt","inline_text":"v2"}`, WantBody: `{"version":2}`},
			{Tool: "write_file", Params: `{"path":"a.txt","inline_text":"v3","expected_version":1}`, WantError: true, WantStatus: "conflict",
				Check: func(t testing.TB, _ contract.Result, files map[string]string) {
					require.Equal(t, "v2", files["/a.txt"])
				}},
		},
	},
	{
		Clause: `edit_file "replaces the one match and returns a unified diff"`,
		Files:  map[string]string{"m.go": "const Name = \"old\"\n"},
		Steps: []contracttest.Step{{Tool: "edit_file", Params: `{"path":"m.go","old_string":"\"old\"","new_string":"\"new\""}`,
			WantBody: `{"status":"ok","replacements":1}`,
			Check: func(t testing.TB, r contract.Result, files map[string]string) {
				require.Equal(t, "const Name = \"new\"\n", files["/m.go"])
				require.Contains(t, string(r.Body), `+const Name = \"new\"`)
			}}},
	},
	{
		Clause: `edit_file "old_string must match exactly one place": ambiguous`,
		Files:  map[string]string{"m.txt": "x\nx\n"},
		Steps: []contracttest.Step{{Tool: "edit_file", Params: `{"path":"m.txt","old_string":"x","new_string":"y"}`,
			WantError: true, WantStatus: "ambiguous", WantBody: `{"candidate_lines":[1,2]}`,
			Check: func(t testing.TB, _ contract.Result, files map[string]string) {
				require.Equal(t, "x\nx\n", files["/m.txt"])
			}}},
	},
	{
		Clause: `apply_patch "all or nothing"`,
		Files:  map[string]string{"a.txt": "one\n"},
		Steps: []contracttest.Step{{Tool: "apply_patch",
			Params:    `{"patch":"*** Begin Patch\n*** Add File: b.txt\n+two\n*** Update File: a.txt\n@@\n-nothing like this\n+x\n*** End Patch"}`,
			WantError: true,
			Check: func(t testing.TB, _ contract.Result, files map[string]string) {
				require.NotContains(t, files, "/b.txt", "a failed patch adds nothing")
				require.Equal(t, "one\n", files["/a.txt"])
			}}},
	},
	{
		Clause: `delete_file of a non-empty directory "needs recursive"`,
		Files:  map[string]string{"d/f.txt": "x"},
		Steps: []contracttest.Step{
			{Tool: "delete_file", Params: `{"path":"d"}`, WantError: true, WantStatus: "invalid_input", WantBody: `{"error_code":"directory_not_empty"}`},
			{Tool: "delete_file", Params: `{"path":"d","recursive":true}`, WantBody: `{"status":"ok","deleted":true,"removed":2}`,
				Check: func(t testing.TB, _ contract.Result, files map[string]string) {
					require.Empty(t, files)
				}},
		},
	},
	{
		Clause: `rename "fails if the destination exists unless overwrite"`,
		Files:  map[string]string{"a.txt": "a", "b.txt": "b"},
		Steps: []contracttest.Step{
			{Tool: "rename", Params: `{"from":"a.txt","to":"b.txt"}`, WantError: true, WantStatus: "already_exists"},
			{Tool: "rename", Params: `{"from":"a.txt","to":"b.txt","overwrite":true}`, WantStatus: "ok",
				Check: func(t testing.TB, _ contract.Result, files map[string]string) {
					require.Equal(t, map[string]string{"/b.txt": "a"}, files)
				}},
		},
	},
	{
		Clause: `list_directory "entries sorted by path", mkdir "succeeds if the directory exists"`,
		Files:  map[string]string{"b.txt": "", "a/": ""},
		Steps: []contracttest.Step{
			{Tool: "mkdir", Params: `{"path":"a"}`, WantBody: `{"status":"ok","created":false}`},
			{Tool: "list_directory", Params: `{}`, WantBody: `{"status":"ok"}`,
				Check: func(t testing.TB, r contract.Result, _ map[string]string) {
					require.Regexp(t, `(?s)"path":"a".*"path":"b.txt"`, string(r.Body))
				}},
		},
	},
}

// TestVfsdContract runs vfsd's own contract through the Go API, the HTTP
// API and MCP.
func TestVfsdContract(t *testing.T) {
	runAll(t, contract.Default, vfsdCases)
}
