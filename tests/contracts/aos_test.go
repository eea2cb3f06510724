package contracts

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/contract"
	"github.com/vfsd/vfsd/contract/aos"
	"github.com/vfsd/vfsd/contract/contracttest"
	"github.com/vfsd/vfsd/vfs"
)

// The AOS documents: 000 (host.fs.*, ../shared/seeds/000_4807e654a7c6d649.txt)
// and 001 (process.fs.*, 001_3f910a6a39eb5600.txt). Each case names its
// clause: the document, the section and a short quote.

// aosPolicy is an aos policy object (the document's fs capability
// fields), checked here so that a typo fails at once; the case gives it as
// data, decoded by the daemon (or contract.DecodePolicy) on every
// transport.
func aosPolicy(t testing.TB, js string) string {
	_, err := aos.DecodePolicy(json.RawMessage(js))
	require.NoError(t, err)
	return js
}

func blobRefOf(content string) string { return "blake3:" + vfs.HashOf([]byte(content)).String() }

// wantFile checks one file's content after a step.
func wantFile(path, content string) func(testing.TB, contract.Result, map[string]string) {
	return func(t testing.TB, _ contract.Result, files map[string]string) {
		got, ok := lookup(files, path)
		require.True(t, ok, "%s does not exist", path)
		require.Equal(t, content, got)
	}
}

func wantNoFile(path string) func(testing.TB, contract.Result, map[string]string) {
	return func(t testing.TB, _ contract.Result, files map[string]string) {
		_, ok := lookup(files, path)
		require.False(t, ok, "%s exists", path)
	}
}

// lookup finds a session file by its path with or without the leading
// "/" the session listing gives.
func lookup(files map[string]string, path string) (string, bool) {
	if c, ok := files[path]; ok {
		return c, true
	}
	c, ok := files["/"+path]
	return c, ok
}

func aosCases(t *testing.T) []contracttest.Case {
	big := strings.Repeat("0123456789abcdef\n", 5000) // 85,000 bytes: over the 64 KiB inline limit
	patch := "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+ONE\n*** End Patch\n"
	addPatch := "*** Begin Patch\n*** Add File: new.txt\n+hello\n*** End Patch\n"
	tiny := aosPolicy(t, `{"max_inline_bytes":16}`)
	roots := aosPolicy(t, `{"fs_roots":["src"]}`)
	return []contracttest.Case{
		// --- Minimal Contract Shape ---
		{Clause: `000 §Minimal Contract Shape "All new host.fs.* params include session_id"`, Files: map[string]string{"a.txt": "hi\n"},
			Steps: []contracttest.Step{{Tool: "host.fs.read_file", Params: `{"session_id":"test-session","path":"a.txt"}`, WantStatus: "ok",
				WantBody: `{"status":"ok","content":{"inline_text":{"text":"hi\n"}},"truncated":false,"size_bytes":3}`}}},
		{Clause: `001 §Minimal Contract Shape "All new process.fs.* params include session_id"`, Files: map[string]string{"a.txt": "hi\n"},
			Steps: []contracttest.Step{{Tool: "process.fs.read_file", Params: `{"session_id":"test-session","path":"a.txt"}`, WantStatus: "ok",
				WantBody: `{"content":{"inline_text":{"text":"hi\n"}},"truncated":false,"size_bytes":3}`}}},
		{Clause: `000 §Adapter Behavior "resolve session and validate active": another session_id is refused`, Files: map[string]string{"a.txt": "hi\n"},
			Steps: []contracttest.Step{{Tool: "host.fs.read_file", Params: `{"session_id":"other","path":"a.txt"}`, WantError: true, WantStatus: "error",
				WantBody: `{"status":"error","error_code":"session_not_found"}`}}},
		{Clause: `000 §Tool Mapping "read_file -> host.fs.read_file" (SDK name and file_path)`, Files: map[string]string{"a.txt": "hi\n"},
			Steps: []contracttest.Step{{Tool: "read_file", Params: `{"file_path":"a.txt"}`, WantStatus: "ok", WantBody: `{"content":{"inline_text":{"text":"hi\n"}}}`}}},
		{Clause: `000 §Minimal Contract Shape: a field no document names is ignored, as the AOS param types decode`, Files: map[string]string{"a.txt": "hi\n"},
			Steps: []contracttest.Step{{Tool: "host.fs.read_file", Params: `{"path":"a.txt","intent_id":"x"}`, WantStatus: "ok",
				Check: func(t testing.TB, r contract.Result, _ map[string]string) { require.Contains(t, r.Text, "intent_id") }}}},
		{Clause: `000 "Under auto, adapters may return inline payloads for small data"; "Default output_mode is auto"`, Files: map[string]string{"a.txt": "small"},
			Steps: []contracttest.Step{{Tool: "host.fs.read_file", Params: `{"path":"a.txt"}`, WantBody: `{"content":{"inline_text":{"text":"small"}}}`}}},
		{Clause: `000 "For large or non-inline-safe payloads, return blob deterministically" (read_file)`, Files: map[string]string{"big.txt": big},
			Steps: []contracttest.Step{{Tool: "host.fs.read_file", Params: `{"path":"big.txt"}`, WantStatus: "ok",
				WantBody: `{"content":{"blob":{"blob_ref":"` + blobRefOf(big) + `","size_bytes":85000}},"truncated":false,"size_bytes":85000}`,
				Check: func(t testing.TB, r contract.Result, _ map[string]string) {
					c := body(t, r)["content"].(map[string]any)["blob"].(map[string]any)
					require.NotEmpty(t, c["preview_bytes"], "preview_bytes")
				}}}},
		{Clause: `000 "Under require_inline, adapters must ... fail with status: error and error_code inline_required_too_large" (read_file)`, Files: map[string]string{"big.txt": big},
			Steps: []contracttest.Step{{Tool: "host.fs.read_file", Params: `{"path":"big.txt","output_mode":"require_inline"}`, WantError: true, WantStatus: "error",
				WantBody: `{"status":"error","error_code":"inline_required_too_large"}`}}},
		// --- host.fs.read_file ---
		{Clause: `000 §host.fs.read_file "offset_bytes?" "max_bytes?" "truncated?"`, Files: map[string]string{"a.txt": "0123456789"},
			Steps: []contracttest.Step{{Tool: "host.fs.read_file", Params: `{"path":"a.txt","offset_bytes":2,"max_bytes":3}`,
				WantBody: `{"status":"ok","content":{"inline_text":{"text":"234"}},"truncated":true,"size_bytes":10}`}}},
		{Clause: `001 §process.fs.read_file "offset?" "limit?" (byte mode, the one kept stable)`, Files: map[string]string{"a.txt": "0123456789"},
			Steps: []contracttest.Step{{Tool: "process.fs.read_file", Params: `{"path":"a.txt","offset":5,"limit":2}`,
				WantBody: `{"content":{"inline_text":{"text":"56"}},"truncated":true,"size_bytes":10}`}}},
		{Clause: `000 §host.fs.read_file "encoding? (utf8|bytes)": bytes come back as inline_bytes`, Files: map[string]string{"a.txt": "hi"},
			Steps: []contracttest.Step{{Tool: "host.fs.read_file", Params: `{"path":"a.txt","encoding":"bytes"}`,
				WantBody: `{"status":"ok","content":{"inline_bytes":{"bytes":"aGk="}}}`}}},
		{Clause: `000 §host.fs.read_file status "not_found"`, Steps: []contracttest.Step{{Tool: "host.fs.read_file", Params: `{"path":"missing.txt"}`,
			WantError: true, WantStatus: "not_found", WantBody: `{"status":"not_found"}`}}},
		{Clause: `000 §host.fs.read_file status "is_directory"`, Files: map[string]string{"d/": ""},
			Steps: []contracttest.Step{{Tool: "host.fs.read_file", Params: `{"path":"d"}`, WantError: true, WantStatus: "is_directory"}}},
		{Clause: `000 §Capability "fs_roots" + Enforcer "fail closed on path escaping": a read outside the root is forbidden`, Policy: roots,
			Files: map[string]string{"src/a.txt": "in", "secret.txt": "out"},
			Steps: []contracttest.Step{
				{Tool: "host.fs.read_file", Params: `{"path":"secret.txt"}`, WantError: true, WantStatus: "forbidden", WantBody: `{"status":"forbidden","error_code":"path_not_allowed"}`},
				{Tool: "host.fs.read_file", Params: `{"path":"src/../secret.txt"}`, WantError: true},
				{Tool: "host.fs.read_file", Params: `{"path":"src/a.txt"}`, WantStatus: "ok", WantBody: `{"content":{"inline_text":{"text":"in"}}}`},
			}},
		// --- host.fs.write_file ---
		{Clause: `000 §host.fs.write_file content "inline_text { text }"; receipt "written_bytes?" "created?" "new_mtime_ns?"`,
			Steps: []contracttest.Step{{Tool: "host.fs.write_file", Params: `{"path":"a.txt","content":{"inline_text":{"text":"hello"}}}`, WantStatus: "ok",
				WantBody: `{"status":"ok","written_bytes":5,"created":true}`,
				Check: func(t testing.TB, r contract.Result, files map[string]string) {
					require.Greater(t, body(t, r)["new_mtime_ns"], float64(0))
					requireFile(t, files, "a.txt", "hello")
				}}}},
		{Clause: `000 §host.fs.write_file content "inline_bytes { bytes }"`,
			Steps: []contracttest.Step{{Tool: "host.fs.write_file", Params: `{"path":"b.bin","content":{"inline_bytes":{"bytes":"AAEC"}}}`, WantStatus: "ok",
				WantBody: `{"written_bytes":3}`, Check: wantFile("b.bin", "\x00\x01\x02")}}},
		{Clause: `000 §host.fs.write_file content "blob_ref { blob_ref }"`, Files: map[string]string{"big.txt": big},
			Steps: []contracttest.Step{{Tool: "host.fs.write_file", Params: `{"path":"copy.txt","content":{"blob_ref":{"blob_ref":"` + blobRefOf(big) + `"}}}`,
				WantStatus: "ok", WantBody: `{"written_bytes":85000,"created":true}`, Check: wantFile("copy.txt", big)}}},
		{Clause: `001 §process.fs.write_file content variant "text | bytes | blob_ref"`, Files: map[string]string{"big.txt": big},
			Steps: []contracttest.Step{
				{Tool: "process.fs.write_file", Params: `{"path":"t.txt","content":{"text":"T"}}`, WantBody: `{"written_bytes":1,"created":true}`, Check: wantFile("t.txt", "T")},
				{Tool: "process.fs.write_file", Params: `{"path":"b.bin","content":{"bytes":[1,2]}}`, WantBody: `{"written_bytes":2,"created":true}`, Check: wantFile("b.bin", "\x01\x02")},
				{Tool: "process.fs.write_file", Params: `{"path":"c.txt","content":{"blob_ref":"` + blobRefOf(big) + `"}}`, WantBody: `{"written_bytes":85000}`, Check: wantFile("c.txt", big)},
			}},
		{Clause: `000 §host.fs.write_file "mode? (overwrite|create_new)": overwrite of a new file creates it`,
			Steps: []contracttest.Step{{Tool: "host.fs.write_file", Params: `{"path":"n.txt","content":{"inline_text":{"text":"x"}},"mode":"overwrite"}`,
				WantStatus: "ok", WantBody: `{"created":true}`, Check: wantFile("n.txt", "x")}}},
		{Clause: `000 §host.fs.write_file "mode? (overwrite|create_new)": overwrite replaces, created false`, Files: map[string]string{"a.txt": "old"},
			Steps: []contracttest.Step{{Tool: "host.fs.write_file", Params: `{"path":"a.txt","content":{"inline_text":{"text":"new"}}}`,
				WantBody: `{"status":"ok","created":false,"written_bytes":3}`, Check: wantFile("a.txt", "new")}}},
		{Clause: `000 §host.fs.write_file status "conflict" (create_new on an existing file)`, Files: map[string]string{"a.txt": "old"},
			Steps: []contracttest.Step{{Tool: "host.fs.write_file", Params: `{"path":"a.txt","content":{"inline_text":{"text":"new"}},"mode":"create_new"}`,
				WantError: true, WantStatus: "conflict", WantBody: `{"status":"conflict","error_code":"file_exists"}`, Check: wantFile("a.txt", "old")}}},
		{Clause: `000 §host.fs.write_file "create_parents?"`,
			Steps: []contracttest.Step{
				{Tool: "host.fs.write_file", Params: `{"path":"d/e/f.txt","content":{"inline_text":{"text":"x"}}}`, WantError: true, WantStatus: "error",
					WantBody: `{"error_code":"parent_not_found"}`, Check: wantNoFile("d/e/f.txt")},
				{Tool: "host.fs.write_file", Params: `{"path":"d/e/f.txt","content":{"inline_text":{"text":"x"}},"create_parents":true}`, WantStatus: "ok", Check: wantFile("d/e/f.txt", "x")},
			}},
		{Clause: `000 §host.fs.write_file status "forbidden" (outside fs_roots)`, Policy: roots,
			Steps: []contracttest.Step{{Tool: "host.fs.write_file", Params: `{"path":"x.txt","content":{"inline_text":{"text":"x"}}}`,
				WantError: true, WantStatus: "forbidden", Check: wantNoFile("x.txt")}}},
		// --- host.fs.edit_file ---
		{Clause: `000 §host.fs.edit_file "first attempt exact match search"; summary_text "Updated <path> (<N> replacements)"`, Files: map[string]string{"a.go": "x := 1\ny := 2\n"},
			Steps: []contracttest.Step{{Tool: "host.fs.edit_file", Params: `{"path":"a.go","old_string":"y := 2","new_string":"y := 3"}`, WantStatus: "ok",
				WantBody: `{"status":"ok","replacements":1,"applied":true,"summary_text":"Updated a.go (1 replacement)"}`, Check: wantFile("a.go", "x := 1\ny := 3\n")}}},
		{Clause: `000 §host.fs.edit_file "path (SDK tool arg file_path maps here)"`, Files: map[string]string{"a.go": "a\n"},
			Steps: []contracttest.Step{{Tool: "edit_file", Params: `{"file_path":"a.go","old_string":"a","new_string":"b"}`, WantStatus: "ok", Check: wantFile("a.go", "b\n")}}},
		{Clause: `000 §host.fs.edit_file fuzzy "whitespace-normalized comparison" inside a line`, Files: map[string]string{"a.py": "if f(a,   b):\n    pass\n"},
			Steps: []contracttest.Step{{Tool: "host.fs.edit_file", Params: `{"path":"a.py","old_string":"f(a, b)","new_string":"g(a, b)"}`, WantStatus: "ok",
				WantBody: `{"replacements":1,"applied":true}`, Check: wantFile("a.py", "if g(a, b):\n    pass\n")}}},
		{Clause: `000 §host.fs.edit_file fuzzy "whitespace-normalized comparison" across lines`, Files: map[string]string{"a.py": "def f():\n\treturn  1\n"},
			Steps: []contracttest.Step{{Tool: "host.fs.edit_file", Params: `{"path":"a.py","old_string":"def f(): return 1","new_string":"def f():\n\treturn 2"}`, WantStatus: "ok",
				Check: wantFile("a.py", "def f():\n\treturn 2\n")}}},
		{Clause: `000 §host.fs.edit_file fuzzy "quote/dash normalization equivalence" inside a line`, Files: map[string]string{"a.md": "He said “hi” — then left.\n"},
			Steps: []contracttest.Step{{Tool: "host.fs.edit_file", Params: `{"path":"a.md","old_string":"said \"hi\" - then","new_string":"said \"bye\" - then"}`, WantStatus: "ok",
				Check: wantFile("a.md", "He said \"bye\" - then left.\n")}}},
		{Clause: `000 §host.fs.edit_file "multiple candidate matches ... replace_all=false, return status: ambiguous with a precise error_code"`, Files: map[string]string{"a.txt": "x\nx\n"},
			Steps: []contracttest.Step{{Tool: "host.fs.edit_file", Params: `{"path":"a.txt","old_string":"x","new_string":"y"}`, WantError: true, WantStatus: "ambiguous",
				WantBody: `{"status":"ambiguous","error_code":"ambiguous_matches","applied":false}`, Check: wantFile("a.txt", "x\nx\n")}}},
		{Clause: `000 §host.fs.edit_file "If replace_all=true, replace all exact matches"`, Files: map[string]string{"a.txt": "x x x\n"},
			Steps: []contracttest.Step{{Tool: "host.fs.edit_file", Params: `{"path":"a.txt","old_string":"x","new_string":"y","replace_all":true}`,
				WantBody: `{"replacements":3,"applied":true}`, Check: wantFile("a.txt", "y y y\n")}}},
		{Clause: `000 §host.fs.edit_file "if exact has zero matches, replace all accepted fuzzy matches"`, Files: map[string]string{"a.txt": "a  =  1\nb\na = 1\n"},
			Steps: []contracttest.Step{{Tool: "host.fs.edit_file", Params: `{"path":"a.txt","old_string":"a =   1","new_string":"a = 2","replace_all":true}`,
				WantBody: `{"replacements":2}`, Check: wantFile("a.txt", "a = 2\nb\na = 2\n")}}},
		{Clause: `000 §host.fs.edit_file "If no match exists, return status: not_found"`, Files: map[string]string{"a.txt": "abc\n"},
			Steps: []contracttest.Step{{Tool: "host.fs.edit_file", Params: `{"path":"a.txt","old_string":"zzz","new_string":"y"}`, WantError: true, WantStatus: "not_found",
				WantBody: `{"status":"not_found","error_code":"edit_target_not_found","applied":false,"replacements":0}`}}},
		{Clause: `000 §host.fs.edit_file "If old_string is empty, return status: error with error_code: invalid_input_empty_old_string"`, Files: map[string]string{"a.txt": "abc\n"},
			Steps: []contracttest.Step{{Tool: "host.fs.edit_file", Params: `{"path":"a.txt","old_string":"","new_string":"y"}`, WantError: true, WantStatus: "error",
				WantBody: `{"status":"error","error_code":"invalid_input_empty_old_string"}`}}},
		{Clause: `000 §host.fs.edit_file "replacements ... MUST be stable for the same file content + params"`, Files: map[string]string{"a.txt": "q q\n"},
			Steps: []contracttest.Step{
				{Tool: "host.fs.edit_file", Params: `{"path":"a.txt","old_string":"q","new_string":"r","replace_all":true}`, WantBody: `{"replacements":2}`},
				{Tool: "host.fs.write_file", Params: `{"path":"a.txt","content":{"inline_text":{"text":"q q\n"}}}`},
				{Tool: "host.fs.edit_file", Params: `{"path":"a.txt","old_string":"q","new_string":"r","replace_all":true}`, WantBody: `{"replacements":2}`},
			}},
		{Clause: `000 §host.fs.edit_file status "not_found" (no such file)`,
			Steps: []contracttest.Step{{Tool: "host.fs.edit_file", Params: `{"path":"nope.txt","old_string":"a","new_string":"b"}`, WantError: true, WantStatus: "not_found"}}},
		{Clause: `001 §process.fs.edit_file receipt "replacements" "applied"`, Files: map[string]string{"a.txt": "a\n"},
			Steps: []contracttest.Step{{Tool: "process.fs.edit_file", Params: `{"path":"a.txt","old_string":"a","new_string":"b"}`, WantBody: `{"replacements":1,"applied":true}`}}},
		// --- host.fs.apply_patch ---
		{Clause: `000 §host.fs.apply_patch patch "inline_text { text }"; receipt files_changed, changed_paths, ops, summary_text`, Files: map[string]string{"a.txt": "one\ntwo\n"},
			Steps: []contracttest.Step{{Tool: "host.fs.apply_patch", Params: `{"patch":{"inline_text":{"text":` + jsonString(patch) + `}}}`, WantStatus: "ok",
				WantBody: `{"status":"ok","files_changed":1,"changed_paths":["a.txt"],"ops":{"add":0,"update":1,"delete":0,"move":0}}`,
				Check: func(t testing.TB, r contract.Result, files map[string]string) {
					requireFile(t, files, "a.txt", "ONE\ntwo\n")
					require.Contains(t, body(t, r)["summary_text"], "Applied patch")
				}}}},
		{Clause: `000 §host.fs.apply_patch "inline_text { text } (SDK tool arg patch maps here)"`, Files: map[string]string{"a.txt": "one\n"},
			Steps: []contracttest.Step{{Tool: "apply_patch", Params: `{"patch":` + jsonString(patch) + `}`, WantStatus: "ok", Check: wantFile("a.txt", "ONE\n")}}},
		{Clause: `000 §host.fs.apply_patch patch "blob_ref { blob_ref }"`, Files: map[string]string{"a.txt": "one\n", "p.patch": patch},
			Steps: []contracttest.Step{{Tool: "host.fs.apply_patch", Params: `{"patch":{"blob_ref":{"blob_ref":"` + blobRefOf(patch) + `"}}}`, WantStatus: "ok", Check: wantFile("a.txt", "ONE\n")}}},
		{Clause: `001 §process.fs.apply_patch "patch_text (v4a-compatible in v0.12)"; receipt "files_changed" "ops"`, Files: map[string]string{"a.txt": "one\n"},
			Steps: []contracttest.Step{{Tool: "process.fs.apply_patch", Params: `{"patch_text":` + jsonString(patch) + `}`,
				WantBody: `{"files_changed":1,"ops":{"add":0,"update":1,"delete":0,"move":0}}`, Check: wantFile("a.txt", "ONE\n")}}},
		{Clause: `000 §host.fs.apply_patch "patch_format? (optional, default v4a)"`, Files: map[string]string{"a.txt": "one\n"},
			Steps: []contracttest.Step{
				{Tool: "host.fs.apply_patch", Params: `{"patch":{"inline_text":{"text":` + jsonString(patch) + `}},"patch_format":"v4a"}`, WantStatus: "ok"},
				{Tool: "host.fs.apply_patch", Params: `{"patch":{"inline_text":{"text":` + jsonString(patch) + `}},"patch_format":"unified"}`, WantError: true,
					WantStatus: "error", WantBody: `{"error_code":"unsupported_patch_format"}`},
			}},
		{Clause: `000 §host.fs.apply_patch "dry_run=true validates/applies in memory ... without committing writes"`, Files: map[string]string{"a.txt": "one\n"},
			Steps: []contracttest.Step{{Tool: "host.fs.apply_patch", Params: `{"patch":{"inline_text":{"text":` + jsonString(patch) + `}},"dry_run":true}`, WantStatus: "ok",
				WantBody: `{"files_changed":1}`, Check: wantFile("a.txt", "one\n")}}},
		{Clause: `000 §host.fs.apply_patch status "parse_error"; "do not emit partial writes"`, Files: map[string]string{"a.txt": "one\n"},
			Steps: []contracttest.Step{{Tool: "host.fs.apply_patch", Params: `{"patch":{"inline_text":{"text":"not a patch"}}}`, WantError: true, WantStatus: "parse_error",
				WantBody: `{"status":"parse_error","error_code":"patch_parse_error"}`,
				Check: func(t testing.TB, r contract.Result, files map[string]string) {
					require.NotEmpty(t, body(t, r)["errors"])
					requireFile(t, files, "a.txt", "one\n")
				}}}},
		{Clause: `000 §host.fs.apply_patch status "reject" (context not found; no partial write)`, Files: map[string]string{"a.txt": "one\n"},
			Steps: []contracttest.Step{{Tool: "host.fs.apply_patch", Params: `{"patch":{"inline_text":{"text":` +
				jsonString("*** Begin Patch\n*** Add File: n.txt\n+x\n*** Update File: a.txt\n@@\n-zzz\n+ONE\n*** End Patch\n") + `}}}`,
				WantError: true, WantStatus: "reject", Check: func(t testing.TB, r contract.Result, files map[string]string) {
					requireFile(t, files, "a.txt", "one\n")
					_, ok := lookup(files, "n.txt")
					require.False(t, ok)
				}}}},
		{Clause: `000 §host.fs.apply_patch status "not_found" (update of a missing file)`,
			Steps: []contracttest.Step{{Tool: "host.fs.apply_patch", Params: `{"patch":{"inline_text":{"text":` +
				jsonString("*** Begin Patch\n*** Update File: gone.txt\n@@\n-a\n+b\n*** End Patch\n") + `}}}`, WantError: true, WantStatus: "not_found"}}},
		{Clause: `000 §host.fs.apply_patch "patch (required, non-empty)"`,
			Steps: []contracttest.Step{{Tool: "host.fs.apply_patch", Params: `{"patch":{"inline_text":{"text":"  "}}}`, WantError: true, WantStatus: "error",
				WantBody: `{"error_code":"invalid_patch_empty"}`}}},
		{Clause: `000 §host.fs.apply_patch Add File`,
			Steps: []contracttest.Step{{Tool: "host.fs.apply_patch", Params: `{"patch":{"inline_text":{"text":` + jsonString(addPatch) + `}}}`,
				WantBody: `{"ops":{"add":1,"update":0,"delete":0,"move":0}}`, Check: wantFile("new.txt", "hello\n")}}},
		// --- host.fs.grep ---
		{Clause: `000 §host.fs.grep "matching lines with file paths + line numbers"; match_count`, Files: map[string]string{"a.go": "func A() {}\nvar x\n", "b.go": "func B() {}\n"},
			Steps: []contracttest.Step{{Tool: "host.fs.grep", Params: `{"pattern":"^func"}`, WantStatus: "ok",
				WantBody: `{"status":"ok","matches":{"inline_text":{"text":"a.go:1:func A() {}\nb.go:1:func B() {}"}},"match_count":2,"truncated":false}`}}},
		{Clause: `000 §host.fs.grep "Empty match set is represented as status: ok with match_count: 0"`, Files: map[string]string{"a.go": "x\n"},
			Steps: []contracttest.Step{{Tool: "host.fs.grep", Params: `{"pattern":"nothing here"}`, WantStatus: "ok",
				WantBody: `{"status":"ok","match_count":0,"summary_text":"No matches found"}`}}},
		{Clause: `000 §host.fs.grep status "invalid_regex"`, Files: map[string]string{"a.go": "x\n"},
			Steps: []contracttest.Step{{Tool: "host.fs.grep", Params: `{"pattern":"("}`, WantError: true, WantStatus: "invalid_regex"}}},
		{Clause: `000 §host.fs.grep status "not_found" (path)`,
			Steps: []contracttest.Step{{Tool: "host.fs.grep", Params: `{"pattern":"x","path":"nope"}`, WantError: true, WantStatus: "not_found"}}},
		{Clause: `000 §host.fs.grep "glob_filter?" "case_insensitive?"`, Files: map[string]string{"a.rs": "Hello\n", "a.go": "hello\n"},
			Steps: []contracttest.Step{{Tool: "host.fs.grep", Params: `{"pattern":"hello","glob_filter":"*.rs","case_insensitive":true}`,
				WantBody: `{"matches":{"inline_text":{"text":"a.rs:1:Hello"}},"match_count":1}`}}},
		{Clause: `000 §host.fs.grep "max_results? (optional, default 100)"; "truncated?"`, Files: map[string]string{"a.txt": strings.Repeat("m\n", 150)},
			Steps: []contracttest.Step{
				{Tool: "host.fs.grep", Params: `{"pattern":"m"}`, WantBody: `{"match_count":150,"truncated":true}`,
					Check: func(t testing.TB, r contract.Result, _ map[string]string) {
						text := body(t, r)["matches"].(map[string]any)["inline_text"].(map[string]any)["text"].(string)
						require.Len(t, strings.Split(text, "\n"), 100)
					}},
				{Tool: "host.fs.grep", Params: `{"pattern":"m","max_results":2}`, WantBody: `{"matches":{"inline_text":{"text":"a.txt:1:m\na.txt:2:m"}},"match_count":150,"truncated":true}`},
			}},
		{Clause: `000 §host.fs.grep matches "blob { blob_ref, size_bytes, preview_bytes? }" under auto; require_inline fails`, Policy: tiny,
			Files: map[string]string{"a.txt": "match one\nmatch two\n"},
			Steps: []contracttest.Step{
				{Tool: "host.fs.grep", Params: `{"pattern":"match"}`, WantBody: `{"matches":{"blob":{"blob_ref":"` + blobRefOf("a.txt:1:match one\na.txt:2:match two") + `","size_bytes":35}},"match_count":2}`},
				{Tool: "host.fs.grep", Params: `{"pattern":"match","output_mode":"require_inline"}`, WantError: true, WantStatus: "error", WantBody: `{"error_code":"inline_required_too_large"}`},
			}},
		{Clause: `001 §process.fs.grep receipt "matches variant: inline_text | blob" "match_count" "truncated"`, Files: map[string]string{"a.txt": "x\n"},
			Steps: []contracttest.Step{{Tool: "process.fs.grep", Params: `{"pattern":"x"}`, WantBody: `{"matches":{"inline_text":{"text":"a.txt:1:x"}},"match_count":1,"truncated":false}`}}},
		{Clause: `000 §host.fs.grep "Results must be deterministic for identical inputs"`, Files: map[string]string{"b.txt": "k\n", "a.txt": "k\n", "c/d.txt": "k\n"},
			Steps: []contracttest.Step{
				{Tool: "host.fs.grep", Params: `{"pattern":"k"}`, WantBody: `{"matches":{"inline_text":{"text":"a.txt:1:k\nb.txt:1:k\nc/d.txt:1:k"}}}`},
				{Tool: "host.fs.grep", Params: `{"pattern":"k"}`, WantBody: `{"matches":{"inline_text":{"text":"a.txt:1:k\nb.txt:1:k\nc/d.txt:1:k"}}}`},
			}},
		// --- host.fs.glob ---
		{Clause: `000 §host.fs.glob "sorted by mtime descending (newest first), with stable path tie-break"; count`,
			Steps: []contracttest.Step{
				{Tool: "host.fs.write_file", Params: `{"path":"old.ts","content":{"inline_text":{"text":"1"}}}`},
				{Tool: "host.fs.write_file", Params: `{"path":"src/new.ts","content":{"inline_text":{"text":"2"}},"create_parents":true}`},
				{Tool: "host.fs.write_file", Params: `{"path":"x.md","content":{"inline_text":{"text":"3"}}}`},
				{Tool: "host.fs.glob", Params: `{"pattern":"**/*.ts"}`, WantStatus: "ok",
					WantBody: `{"status":"ok","paths":{"inline_text":{"text":"src/new.ts\nold.ts"}},"count":2,"truncated":false}`},
			}},
		{Clause: `000 §host.fs.glob "Empty match set is represented as status: ok with count: 0"`, Files: map[string]string{"a.go": "x"},
			Steps: []contracttest.Step{{Tool: "host.fs.glob", Params: `{"pattern":"**/*.rs"}`, WantBody: `{"status":"ok","count":0,"summary_text":"No files matched"}`}}},
		{Clause: `000 §host.fs.glob status "invalid_pattern"`, Steps: []contracttest.Step{{Tool: "host.fs.glob", Params: `{"pattern":"[abc"}`, WantError: true, WantStatus: "invalid_pattern"}}},
		{Clause: `000 §host.fs.glob status "not_found" (path)`, Steps: []contracttest.Step{{Tool: "host.fs.glob", Params: `{"pattern":"*","path":"nope"}`, WantError: true, WantStatus: "not_found"}}},
		{Clause: `000 §host.fs.glob "path? (base directory)" "max_results?"`, Files: map[string]string{"src/a.ts": "", "src/b.ts": "", "c.ts": ""},
			Steps: []contracttest.Step{{Tool: "host.fs.glob", Params: `{"pattern":"*.ts","path":"src","max_results":1}`, WantBody: `{"count":2,"truncated":true}`}}},
		{Clause: `000 §host.fs.glob paths "blob { blob_ref, size_bytes, preview_bytes? }" under auto`, Policy: tiny,
			Files: map[string]string{"a-long-file-name.txt": "", "b-long-file-name.txt": ""},
			Steps: []contracttest.Step{{Tool: "host.fs.glob", Params: `{"pattern":"*.txt"}`, WantBody: `{"count":2}`,
				Check: func(t testing.TB, r contract.Result, _ map[string]string) {
					require.Contains(t, body(t, r)["paths"], "blob")
				}}}},
		{Clause: `001 §process.fs.glob receipt "paths variant" "count" "truncated"`, Files: map[string]string{"a.go": ""},
			Steps: []contracttest.Step{{Tool: "process.fs.glob", Params: `{"pattern":"*.go"}`, WantBody: `{"paths":{"inline_text":{"text":"a.go"}},"count":1,"truncated":false}`}}},
		// --- optional effects ---
		{Clause: `000 §Proposed Effect Family "host.fs.stat" (Completion Notes)`, Files: map[string]string{"a.txt": "abc", "d/": ""},
			Steps: []contracttest.Step{
				{Tool: "host.fs.stat", Params: `{"path":"a.txt"}`, WantBody: `{"status":"ok","exists":true,"is_dir":false,"size_bytes":3}`},
				{Tool: "host.fs.stat", Params: `{"path":"d"}`, WantBody: `{"is_dir":true}`},
				{Tool: "host.fs.stat", Params: `{"path":"nope"}`, WantError: true, WantStatus: "not_found"},
			}},
		{Clause: `000 §Proposed Effect Family "host.fs.exists"`, Files: map[string]string{"a.txt": "abc"},
			Steps: []contracttest.Step{
				{Tool: "host.fs.exists", Params: `{"path":"a.txt"}`, WantBody: `{"status":"ok","exists":true}`},
				{Tool: "host.fs.exists", Params: `{"path":"b.txt"}`, WantBody: `{"status":"ok","exists":false}`},
			}},
		{Clause: `000 §Proposed Effect Family "host.fs.list_dir"`, Files: map[string]string{"a.txt": "", "d/x": ""},
			Steps: []contracttest.Step{{Tool: "host.fs.list_dir", Params: `{}`, WantBody: `{"status":"ok","entries":{"inline_text":{"text":"a.txt\nd/"}},"count":2,"truncated":false}`}}},
		// --- Capability and Policy ---
		{Clause: `000 §Capability "allowed_fs_ops"; Enforcer "validate requested op is allowed"`, Policy: aosPolicy(t, `{"allowed_fs_ops":["read"]}`),
			Files: map[string]string{"a.txt": "a"},
			Steps: []contracttest.Step{
				{Tool: "host.fs.read_file", Params: `{"path":"a.txt"}`, WantStatus: "ok"},
				{Tool: "host.fs.write_file", Params: `{"path":"a.txt","content":{"inline_text":{"text":"b"}}}`, WantError: true, WantStatus: "forbidden",
					WantBody: `{"error_code":"fs_op_not_allowed"}`, Check: wantFile("a.txt", "a")},
				{Tool: "host.fs.grep", Params: `{"pattern":"a"}`, WantError: true, WantStatus: "forbidden"},
			}},
		{Clause: `000 §Capability "max_read_bytes?"; Enforcer "clamp request-level limits to cap ceilings (effective = min(request, cap))"`,
			Policy: aosPolicy(t, `{"max_read_bytes":4}`), Files: map[string]string{"a.txt": "0123456789"},
			Steps: []contracttest.Step{{Tool: "host.fs.read_file", Params: `{"path":"a.txt","max_bytes":8}`, WantBody: `{"content":{"inline_text":{"text":"0123"}},"truncated":true}`}}},
		{Clause: `000 §Capability "max_write_bytes?"`, Policy: aosPolicy(t, `{"max_write_bytes":3}`),
			Steps: []contracttest.Step{{Tool: "host.fs.write_file", Params: `{"path":"a.txt","content":{"inline_text":{"text":"toolong"}}}`, WantError: true,
				WantStatus: "forbidden", WantBody: `{"error_code":"max_write_bytes_exceeded"}`, Check: wantNoFile("a.txt")}}},
		{Clause: `000 §Capability "max_patch_bytes?"`, Policy: aosPolicy(t, `{"max_patch_bytes":10}`), Files: map[string]string{"a.txt": "one\n"},
			Steps: []contracttest.Step{{Tool: "host.fs.apply_patch", Params: `{"patch":{"inline_text":{"text":` + jsonString(patch) + `}}}`, WantError: true,
				WantStatus: "forbidden", WantBody: `{"error_code":"max_patch_bytes_exceeded"}`, Check: wantFile("a.txt", "one\n")}}},
		{Clause: `000 §Capability "max_grep_results?" (clamped)`, Policy: aosPolicy(t, `{"max_grep_results":2}`), Files: map[string]string{"a.txt": "m\nm\nm\n"},
			Steps: []contracttest.Step{{Tool: "host.fs.grep", Params: `{"pattern":"m","max_results":50}`, WantBody: `{"matches":{"inline_text":{"text":"a.txt:1:m\na.txt:2:m"}},"truncated":true}`}}},
		{Clause: `000 §Capability "max_glob_results?" (clamped)`, Policy: aosPolicy(t, `{"max_glob_results":1}`), Files: map[string]string{"a.go": "", "b.go": ""},
			Steps: []contracttest.Step{{Tool: "host.fs.glob", Params: `{"pattern":"*.go"}`, WantBody: `{"count":2,"truncated":true}`}}},
		{Clause: `000 §Capability "max_scan_files?"`, Policy: aosPolicy(t, `{"max_scan_files":1}`), Files: map[string]string{"a.go": "x", "b.go": "x"},
			Steps: []contracttest.Step{{Tool: "host.fs.grep", Params: `{"pattern":"x"}`, WantError: true, WantStatus: "forbidden", WantBody: `{"error_code":"max_scan_files_exceeded"}`}}},
		{Clause: `000 §Capability "max_changed_files?" (patch blast-radius limit)`, Policy: aosPolicy(t, `{"max_changed_files":1}`),
			Steps: []contracttest.Step{{Tool: "host.fs.apply_patch", Params: `{"patch":{"inline_text":{"text":` +
				jsonString("*** Begin Patch\n*** Add File: a.txt\n+a\n*** Add File: b.txt\n+b\n*** End Patch\n") + `}}}`,
				WantError: true, WantStatus: "forbidden", WantBody: `{"error_code":"max_changed_files_exceeded"}`, Check: wantNoFile("a.txt")}}},
		{Clause: `000 §Capability "max_edit_replacements?"`, Policy: aosPolicy(t, `{"max_edit_replacements":2}`), Files: map[string]string{"a.txt": "x x x\n"},
			Steps: []contracttest.Step{{Tool: "host.fs.edit_file", Params: `{"path":"a.txt","old_string":"x","new_string":"y","replace_all":true}`, WantError: true,
				WantStatus: "forbidden", WantBody: `{"error_code":"max_edit_replacements_exceeded"}`, Check: wantFile("a.txt", "x x x\n")}}},
		{Clause: `000 §Capability "allowed_patch_formats? (v0.12 default/required value when set: v4a)"`, Policy: aosPolicy(t, `{"allowed_patch_formats":["unified"]}`),
			Files: map[string]string{"a.txt": "one\n"},
			Steps: []contracttest.Step{{Tool: "host.fs.apply_patch", Params: `{"patch":{"inline_text":{"text":` + jsonString(patch) + `}}}`, WantError: true, WantStatus: "forbidden"}}},
		{Clause: `000 §Capability "max_inline_bytes? (upper bound for inline receipt payloads)"; Enforcer 5`, Policy: tiny, Files: map[string]string{"a.txt": strings.Repeat("z", 20)},
			Steps: []contracttest.Step{
				{Tool: "host.fs.read_file", Params: `{"path":"a.txt"}`, WantBody: `{"content":{"blob":{"size_bytes":20}}}`},
				{Tool: "host.fs.read_file", Params: `{"path":"a.txt","output_mode":"require_inline"}`, WantError: true, WantBody: `{"error_code":"inline_required_too_large"}`},
			}},
		{Clause: `000 §Capability "Limit fields are intentionally optional ... When a limit is omitted, that dimension is unbounded"`, Policy: aosPolicy(t, `{}`),
			Files: map[string]string{"a.txt": strings.Repeat("m\n", 3000)},
			Steps: []contracttest.Step{{Tool: "host.fs.grep", Params: `{"pattern":"m","max_results":3000}`, WantBody: `{"match_count":3000,"truncated":false}`}}},
		{Clause: `000 §Capability "When a limit is omitted, that dimension is unbounded": a session created with no policy at all has no caps either (vfsd's default cut grep at 1,000)`,
			Files: map[string]string{"a.txt": strings.Repeat("m\n", 3000), "b.txt": "x"},
			Steps: []contracttest.Step{
				{Tool: "host.fs.grep", Params: `{"pattern":"m","max_results":3000}`, WantBody: `{"match_count":3000,"truncated":false}`},
				{Tool: "host.fs.glob", Params: `{"pattern":"*.txt","max_results":6000}`, WantBody: `{"count":2,"truncated":false}`},
			}},
		{Clause: `000 §Capability "(subject only to adapter/runtime safety behavior)": one call returns at most 100,000 results, cut as max_results cuts (truncated, the full count)`,
			Files: map[string]string{"a.txt": strings.Repeat("m\n", aos.MaxResultsPerCall+1)},
			Steps: []contracttest.Step{{Tool: "host.fs.grep", Params: `{"pattern":"m","max_results":1000000}`,
				WantBody: `{"status":"ok","match_count":100001,"truncated":true}`,
				Check: func(t testing.TB, r contract.Result, _ map[string]string) {
					require.Contains(t, body(t, r)["matches"], "blob", "a large result is a blob")
					require.Contains(t, r.Text, "one call returns at most 100000 results")
				}}}},
		// --- binary content under output_mode auto ---
		{Clause: `000 "For large or non-inline-safe payloads, return blob deterministically": a binary file read with default params is a blob`,
			Files: map[string]string{"b.bin": "\x00\x01\x02\xffbin"},
			Steps: []contracttest.Step{
				{Tool: "host.fs.read_file", Params: `{"path":"b.bin"}`, WantStatus: "ok",
					WantBody: `{"status":"ok","content":{"blob":{"blob_ref":"` + blobRefOf("\x00\x01\x02\xffbin") + `","size_bytes":7}},"truncated":false,"size_bytes":7}`},
				{Tool: "process.fs.read_file", Params: `{"path":"b.bin"}`, WantStatus: "ok",
					WantBody: `{"content":{"blob":{"blob_ref":"` + blobRefOf("\x00\x01\x02\xffbin") + `","size_bytes":7}},"size_bytes":7}`},
			}},
		{Clause: `000 "Under require_inline, adapters must return inline payloads": a small binary file is inline_bytes`,
			Files: map[string]string{"b.bin": "\x00\x01\x02\xffbin"},
			Steps: []contracttest.Step{{Tool: "host.fs.read_file", Params: `{"path":"b.bin","output_mode":"require_inline"}`, WantStatus: "ok",
				WantBody: `{"status":"ok","content":{"inline_bytes":{"bytes":"AAEC/2Jpbg=="}},"size_bytes":7}`}}},
		// --- one answer for a path that escapes the session ---
		{Clause: `000 §Enforcer "fail closed on path escaping": every effect, apply_patch included, answers a path that climbs out of the session with status error, error_code invalid_path`,
			Files: map[string]string{"u.txt": "u\n"},
			Steps: escapeSteps()},
		// --- ".." that stays inside the session ---
		{Clause: `000 §host.fs.read_file "path (session-relative or canonicalized under allowed roots)": d/../u.txt is u.txt, for every effect`,
			Files: map[string]string{"u.txt": "u\n", "d/x.txt": "x\n"},
			Steps: []contracttest.Step{
				{Tool: "host.fs.read_file", Params: `{"path":"d/../u.txt"}`, WantStatus: "ok", WantBody: `{"content":{"inline_text":{"text":"u\n"}}}`},
				{Tool: "process.fs.read_file", Params: `{"path":"./d/./../u.txt"}`, WantStatus: "ok", WantBody: `{"content":{"inline_text":{"text":"u\n"}}}`},
				{Tool: "host.fs.write_file", Params: `{"path":"d/../w.txt","content":{"inline_text":{"text":"w"}}}`, WantStatus: "ok", Check: wantFile("w.txt", "w")},
				{Tool: "host.fs.edit_file", Params: `{"path":"d/../w.txt","old_string":"w","new_string":"W"}`, WantStatus: "ok", Check: wantFile("w.txt", "W")},
				{Tool: "host.fs.stat", Params: `{"path":"d/../u.txt"}`, WantBody: `{"status":"ok","exists":true,"size_bytes":2}`},
				{Tool: "host.fs.exists", Params: `{"path":"d/../d/x.txt"}`, WantBody: `{"status":"ok","exists":true}`},
				{Tool: "host.fs.list_dir", Params: `{"path":"d/.."}`, WantBody: `{"entries":{"inline_text":{"text":"d/\nu.txt\nw.txt"}}}`},
				{Tool: "host.fs.grep", Params: `{"pattern":"x","path":"d/../d"}`, WantBody: `{"matches":{"inline_text":{"text":"d/x.txt:1:x"}}}`},
				{Tool: "host.fs.glob", Params: `{"pattern":"*.txt","path":"d/.."}`, WantBody: `{"count":2}`},
				{Tool: "host.fs.apply_patch", Params: `{"patch":{"inline_text":{"text":` +
					jsonString("*** Begin Patch\n*** Update File: d/../u.txt\n*** Move to: d/sub/../v.txt\n@@\n-u\n+U\n*** End Patch\n") + `}}}`,
					WantStatus: "ok", WantBody: `{"changed_paths":["u.txt","d/v.txt"]}`, Check: wantFile("d/v.txt", "U\n")},
			}},
		{Clause: `000 §Adapter Behavior "canonicalize path against session workdir + allowed roots": ".." after a symlink climbs from where the link leads, and the canonical path is checked against fs_roots`,
			Policy:   aosPolicy(t, `{"fs_roots":["src"]}`),
			Files:    map[string]string{"src/a.txt": "a", "src/lib/b.txt": "b", "secret.txt": "s"},
			Symlinks: map[string]string{"src/l": "lib"},
			Steps: []contracttest.Step{
				{Tool: "host.fs.read_file", Params: `{"path":"src/../src/a.txt"}`, WantStatus: "ok", WantBody: `{"content":{"inline_text":{"text":"a"}}}`},
				{Tool: "host.fs.read_file", Params: `{"path":"src/l/../a.txt"}`, WantStatus: "ok", WantBody: `{"content":{"inline_text":{"text":"a"}}}`},
				{Tool: "host.fs.read_file", Params: `{"path":"src/l/../lib/b.txt"}`, WantStatus: "ok", WantBody: `{"content":{"inline_text":{"text":"b"}}}`},
				{Tool: "host.fs.read_file", Params: `{"path":"src/../secret.txt"}`, WantError: true, WantStatus: "forbidden", WantBody: `{"error_code":"path_not_allowed"}`},
			}},
	}
}

// escapeSteps call every effect with a path that climbs out of the
// session: each must answer status error, error_code invalid_path, and
// change nothing.
func escapeSteps() []contracttest.Step {
	unchanged := func(t testing.TB, _ contract.Result, files map[string]string) {
		require.Equal(t, map[string]string{"/u.txt": "u\n"}, files)
	}
	step := func(tool, params string) contracttest.Step {
		return contracttest.Step{Tool: tool, Params: params, WantError: true, WantStatus: "error",
			WantBody: `{"status":"error","error_code":"invalid_path"}`, Check: unchanged}
	}
	patch := func(text string) string { return `{"patch":{"inline_text":{"text":` + jsonString(text) + `}}}` }
	return []contracttest.Step{
		step("host.fs.read_file", `{"path":"../u.txt"}`),
		step("host.fs.read_file", `{"path":"a/../../u.txt"}`),
		step("host.fs.write_file", `{"path":"../evil.txt","content":{"inline_text":{"text":"x"}}}`),
		step("host.fs.edit_file", `{"path":"../u.txt","old_string":"u","new_string":"v"}`),
		step("host.fs.grep", `{"pattern":"u","path":".."}`),
		step("host.fs.glob", `{"pattern":"*","path":"../"}`),
		step("host.fs.stat", `{"path":"../u.txt"}`),
		step("host.fs.exists", `{"path":"../u.txt"}`),
		step("host.fs.list_dir", `{"path":".."}`),
		step("host.fs.apply_patch", patch("*** Begin Patch\n*** Add File: ../evil.txt\n+x\n*** End Patch\n")),
		step("host.fs.apply_patch", patch("*** Begin Patch\n*** Update File: ../u.txt\n@@\n-u\n+v\n*** End Patch\n")),
		step("host.fs.apply_patch", patch("*** Begin Patch\n*** Update File: u.txt\n*** Move to: x/../../u.txt\n@@\n-u\n+v\n*** End Patch\n")),
		step("process.fs.apply_patch", `{"patch_text":`+jsonString("*** Begin Patch\n*** Delete File: ../u.txt\n*** End Patch\n")+`}`),
	}
}

func requireFile(t testing.TB, files map[string]string, path, content string) {
	got, ok := lookup(files, path)
	require.True(t, ok, "%s does not exist", path)
	require.Equal(t, content, got)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestAOSContract(t *testing.T) {
	runAll(t, "aos", aosCases(t))
}
