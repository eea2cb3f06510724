package contracts

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/contract"
	"github.com/vfsd/vfsd/contract/contracttest"
	"github.com/vfsd/vfsd/contract/posfilesystem"
)

// TestPosFilesystem checks the pos_filesystem contract against its
// document (../shared/seeds/003_fc513d739540fa60.txt), clause by clause.
func TestPosFilesystem(t *testing.T) {
	runAll(t, "pos_filesystem", posCases())
}

// pj renders call parameters as JSON.
func pj(kv ...any) string {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// posStep is one pos_filesystem call.
func posStep(params string, wantError bool, wantStatus, wantBody string) contracttest.Step {
	return contracttest.Step{Tool: "pos_filesystem", Params: params, WantError: wantError, WantStatus: wantStatus, WantBody: wantBody}
}

// posFail is a call that fails with errorType.
func posFail(params, errorType string) contracttest.Step {
	return posStep(params, true, errorType, fmt.Sprintf(`{"success":false,"error_type":%q}`, errorType))
}

// unchanged checks that the session holds exactly files.
func unchanged(files map[string]string) func(testing.TB, contract.Result, map[string]string) {
	return func(t testing.TB, _ contract.Result, got map[string]string) {
		require.Equal(t, files, relFiles(got), "a failed call must leave the session as it was")
	}
}

// errorMentions checks that the error message contains want.
func errorMentions(want string) func(testing.TB, contract.Result, map[string]string) {
	return func(t testing.TB, r contract.Result, _ map[string]string) {
		var b posfilesystem.Body
		require.NoError(t, json.Unmarshal(r.Body, &b))
		require.NotNil(t, b.Error)
		require.Contains(t, *b.Error, want)
		require.Equal(t, *b.Error, b.Message, "message carries the error")
	}
}

// relFiles drops the leading "/" of the session's paths, so that they
// compare with a case's Files.
func relFiles(files map[string]string) map[string]string {
	out := make(map[string]string, len(files))
	for k, v := range files {
		out[strings.TrimPrefix(k, "/")] = v
	}
	return out
}

func withCheck(s contracttest.Step, check func(testing.TB, contract.Result, map[string]string)) contracttest.Step {
	s.Check = check
	return s
}

// mustPolicy is a pos_filesystem policy object, checked here so that a
// typo fails at once; the case gives it as data on every transport.
func mustPolicy(raw string) string {
	if _, err := posfilesystem.DecodePolicy(json.RawMessage(raw)); err != nil {
		panic(err)
	}
	return raw
}

// settingsPy is 200 lines of 30 bytes each (29 characters and "\n"), so
// that 50 lines are the document's 1500 bytes.
func settingsPy() (string, string) {
	var all, want strings.Builder
	for i := 1; i <= 200; i++ {
		l := fmt.Sprintf("SETTING_%04d = 'value-%06d'\n", i, i)
		if len(l) != 30 {
			panic(fmt.Sprintf("line is %d bytes", len(l)))
		}
		all.WriteString(l)
		if i >= 100 && i < 150 {
			want.WriteString(l)
		}
	}
	return all.String(), want.String()
}

// analysis is the document's scenario 1 content: 1,234 characters on 42
// lines.
func analysis() string {
	var b strings.Builder
	b.WriteString("# Database Schema Analysis\n")
	for i := 0; i < 40; i++ {
		b.WriteString(fmt.Sprintf("- finding %02d\n", i))
	}
	for b.Len() < 1234 {
		b.WriteByte('.')
	}
	s := b.String()
	if strings.Count(s, "\n") != 41 || len(s) != 1234 {
		panic("analysis fixture is off")
	}
	return s
}

func posCases() []contracttest.Case {
	settings, lines100to150 := settingsPy()
	big := strings.Repeat("0123456789abcdef0123456789abcde\n", (10<<20)/32) + "x" // 10 MB + 1 byte
	exactly10 := strings.Repeat("0123456789abcdef0123456789abcde\n", (10<<20)/32)
	files := map[string]string{"README.md": "# demo\n", "docs/": "", ".env": "SECRET=1\n"}
	adversarial := []string{"../../etc/passwd", "/etc/passwd", "../.ssh/id_rsa", "workspace/../../etc/passwd", "workspace/../../../root/.bash_history"}

	cases := []contracttest.Case{
		// --- MCP Tool Input Schema ---
		{Clause: `Input Schema "action": Literal["read","write","list","delete","exists","mkdir"] — every action is served`,
			Files: map[string]string{"a.txt": "x\n"},
			Steps: []contracttest.Step{
				posStep(pj("action", "read", "path", "a.txt"), false, "ok", `{"success":true,"action":"read"}`),
				posStep(pj("action", "write", "path", "b.txt", "content", "y"), false, "ok", `{"success":true,"action":"write"}`),
				posStep(pj("action", "list", "path", "."), false, "ok", `{"success":true,"action":"list","entries":["a.txt","b.txt"]}`),
				posStep(pj("action", "exists", "path", "b.txt"), false, "ok", `{"success":true,"action":"exists","exists":true}`),
				posStep(pj("action", "mkdir", "path", "d"), false, "ok", `{"success":true,"action":"mkdir"}`),
				posStep(pj("action", "delete", "path", "b.txt"), false, "ok", `{"success":true,"action":"delete"}`),
			}},
		{Clause: `Input Schema "action": Literal[...] — an action outside the six is a ValueError naming them`,
			Steps: []contracttest.Step{withCheck(posFail(pj("action", "rename", "path", "a"), "ValueError"),
				errorMentions("read, write, list, delete, exists, mkdir"))}},
		{Clause: `Input Schema "action" — a call without an action is a ValueError`,
			Steps: []contracttest.Step{posFail(pj("path", "a.txt"), "ValueError")}},
		{Clause: `Input Schema "path": str # Required — a call without a path is a ValueError`,
			Steps: []contracttest.Step{withCheck(posFail(pj("action", "read"), "ValueError"), errorMentions("path is required"))}},
		{Clause: `Input Schema "path": "relative path from project root"`,
			Files: map[string]string{"src/app/main.py": "print('hi')\n"},
			Steps: []contracttest.Step{posStep(pj("action", "read", "path", "src/app/main.py"), false, "ok",
				`{"success":true,"path":"src/app/main.py","content":"print('hi')\n"}`)}},
		{Clause: `Input Schema "content": Optional[str] = None # For write action — write without content is a ValueError`,
			Files: files,
			Steps: []contracttest.Step{withCheck(posFail(pj("action", "write", "path", "new.txt"), "ValueError"), unchanged(files))}},
		{Clause: `Input Schema "content": Optional[str] — "" writes an empty file`,
			Steps: []contracttest.Step{withCheck(posStep(pj("action", "write", "path", "empty.txt", "content", ""), false, "ok",
				`{"success":true,"size_bytes":0,"lines":1}`), func(t testing.TB, _ contract.Result, f map[string]string) {
				require.Equal(t, "", relFiles(f)["empty.txt"])
			})}},
		{Clause: `Input Schema "start_line": Optional[int] # 1-indexed line number`,
			Files: map[string]string{"f.txt": "one\ntwo\nthree\n"},
			Steps: []contracttest.Step{posStep(pj("action", "read", "path", "f.txt", "start_line", 2, "line_count", 1), false, "ok",
				`{"content":"two\n","lines":1,"size_bytes":4}`)}},
		{Clause: `Input Schema "line_count": Optional[int] # Number of lines to read — from line 1 when start_line is not given`,
			Files: map[string]string{"f.txt": "one\ntwo\nthree\n"},
			Steps: []contracttest.Step{posStep(pj("action", "read", "path", "f.txt", "line_count", 2), false, "ok",
				`{"content":"one\ntwo\n","lines":2,"message":"Read lines 1-3 from f.txt"}`)}},
		{Clause: `Input Schema "encoding": str = "utf-8" — a file that is not UTF-8 fails with UnicodeDecodeError`,
			Files: map[string]string{"latin.txt": "caf\xe9\n"},
			Steps: []contracttest.Step{withCheck(posFail(pj("action", "read", "path", "latin.txt"), "UnicodeDecodeError"),
				errorMentions("'utf-8' codec can't decode byte 0xe9 in position 3"))}},
		{Clause: `Input Schema "encoding": str — encoding="latin-1" reads and writes Latin-1`,
			Files: map[string]string{"latin.txt": "caf\xe9\n"},
			Steps: []contracttest.Step{
				posStep(pj("action", "read", "path", "latin.txt", "encoding", "latin-1"), false, "ok", `{"content":"café\n","size_bytes":5}`),
				withCheck(posStep(pj("action", "write", "path", "out.txt", "content", "né", "encoding", "latin_1"), false, "ok", `{"size_bytes":2}`),
					func(t testing.TB, _ contract.Result, f map[string]string) {
						require.Equal(t, "n\xe9", relFiles(f)["out.txt"])
					}),
			}},
		{Clause: `Input Schema "encoding": str — write encodes with it: content.encode(encoding) fails with UnicodeEncodeError`,
			Files: files,
			Steps: []contracttest.Step{withCheck(posFail(pj("action", "write", "path", "new/a.txt", "content", "héllo", "encoding", "ascii"), "UnicodeEncodeError"),
				unchanged(files))}},
		{Clause: `Input Schema "encoding": str — utf-8-sig writes and drops the byte-order mark`,
			Steps: []contracttest.Step{
				withCheck(posStep(pj("action", "write", "path", "b.txt", "content", "hi\n", "encoding", "utf-8-sig"), false, "ok", `{"size_bytes":6}`),
					func(t testing.TB, _ contract.Result, f map[string]string) {
						require.Equal(t, "\xef\xbb\xbfhi\n", relFiles(f)["b.txt"])
					}),
				posStep(pj("action", "read", "path", "b.txt", "encoding", "UTF-8-SIG"), false, "ok", `{"content":"hi\n"}`),
			}},
		{Clause: `Input Schema "encoding": str — an unknown encoding is a LookupError`,
			Files: map[string]string{"a.txt": "x"},
			Steps: []contracttest.Step{withCheck(posFail(pj("action", "read", "path", "a.txt", "encoding", "klingon"), "LookupError"),
				errorMentions("unknown encoding: klingon"))}},
		{Clause: `Input Schema "max_size_mb": int = 10 # Safety limit for read — a file over 10 MB fails`,
			Files: map[string]string{"big.log": big},
			Steps: []contracttest.Step{withCheck(posFail(pj("action", "read", "path", "big.log"), "ValueError"), errorMentions("File too large"))}},
		{Clause: `Input Schema "max_size_mb": int = 10 — a file of exactly 10 MB is read`,
			Files: map[string]string{"ten.log": exactly10},
			Steps: []contracttest.Step{posStep(pj("action", "read", "path", "ten.log"), false, "ok", fmt.Sprintf(`{"size_bytes":%d,"lines":%d}`, 10<<20, (10<<20)/32))}},
		{Clause: `Input Schema "max_size_mb" — a larger max_size_mb reads the larger file`,
			Files: map[string]string{"big.log": big},
			Steps: []contracttest.Step{posStep(pj("action", "read", "path", "big.log", "max_size_mb", 11), false, "ok", fmt.Sprintf(`{"size_bytes":%d}`, len(big)))}},
		{Clause: `Input Schema "max_size_mb" — a smaller max_size_mb refuses a smaller file`,
			Files: map[string]string{"two.log": strings.Repeat("x", 2<<20)},
			Steps: []contracttest.Step{posFail(pj("action", "read", "path", "two.log", "max_size_mb", 1), "ValueError")}},
		{Clause: `Input Schema "create_dirs": bool = True # Auto-create parent dirs`,
			Steps: []contracttest.Step{withCheck(posStep(pj("action", "write", "path", "a/b/c.txt", "content", "x"), false, "ok", `{"success":true}`),
				func(t testing.TB, _ contract.Result, f map[string]string) {
					require.Equal(t, map[string]string{"a/": "", "a/b/": "", "a/b/c.txt": "x"}, relFiles(f))
				})}},
		{Clause: `Input Schema "create_dirs": bool — create_dirs=false with a missing parent is a FileNotFoundError`,
			Files: files,
			Steps: []contracttest.Step{withCheck(posFail(pj("action", "write", "path", "a/b/c.txt", "content", "x", "create_dirs", false), "FileNotFoundError"),
				unchanged(files))}},
		{Clause: `Input Schema "create_dirs": bool — create_dirs=false writes into an existing directory`,
			Files: map[string]string{"docs/": ""},
			Steps: []contracttest.Step{posStep(pj("action", "write", "path", "docs/a.md", "content", "x", "create_dirs", false), false, "ok", `{"success":true}`)}},
		{Clause: `Goal 8 "Type Safety - MCP schema validation for all parameters" — a wrong type is a ValueError`,
			Files: map[string]string{"a.txt": "x\n"},
			Steps: []contracttest.Step{
				withCheck(posFail(pj("action", "read", "path", "a.txt", "start_line", "first"), "ValueError"), errorMentions("start_line must be an integer")),
				posFail(pj("action", "write", "path", "a.txt", "content", 42), "ValueError"),
				posFail(pj("action", "write", "path", "a.txt", "content", "x", "create_dirs", "maybe"), "ValueError"),
			}},
		{Clause: `Goal 8 "MCP schema validation" — Pydantic's lax mode: "2" and 2.0 are 2, "false" is false`,
			Files: map[string]string{"f.txt": "one\ntwo\nthree\n"},
			Steps: []contracttest.Step{
				posStep(pj("action", "read", "path", "f.txt", "start_line", "2", "line_count", 1.0), false, "ok", `{"content":"two\n"}`),
				posFail(pj("action", "write", "path", "x/y.txt", "content", "x", "create_dirs", "false"), "FileNotFoundError"),
			}},
		{Clause: `Architecture "pos_filesystem(action, path, **kwargs)" — other keyword arguments are ignored, and named in the message`,
			Files: map[string]string{"a.txt": "x\n"},
			Steps: []contracttest.Step{withCheck(posStep(pj("action", "read", "path", "a.txt", "recursive", true), false, "ok", `{"success":true,"content":"x\n"}`),
				func(t testing.TB, r contract.Result, _ map[string]string) {
					require.Contains(t, string(r.Body), "ignored parameters pos_filesystem does not take: recursive")
				})}},

		// --- MCP Tool Output Schema ---
		{Clause: `Output Schema "success", "action", "path", "message" — every result echoes the action and path`,
			Files: map[string]string{"a.txt": "x\n"},
			Steps: []contracttest.Step{withCheck(posStep(pj("action", "exists", "path", "./a.txt"), false, "ok", `{"success":true,"action":"exists","path":"./a.txt"}`),
				func(t testing.TB, r contract.Result, _ map[string]string) {
					var m map[string]any
					require.NoError(t, json.Unmarshal(r.Body, &m))
					for _, k := range []string{"success", "action", "path", "message"} {
						require.Contains(t, m, k)
					}
					require.NotContains(t, m, "error")
					require.NotContains(t, m, "content", "action-specific fields only for their action")
				})}},
		{Clause: `Output Schema "error": Optional[str], "error_type": Optional[str] # FileNotFoundError, PermissionError, etc. (if success=False)`,
			Steps: []contracttest.Step{withCheck(posStep(pj("action", "read", "path", "missing.txt"), true, "FileNotFoundError",
				`{"success":false,"action":"read","path":"missing.txt","error_type":"FileNotFoundError"}`), errorMentions("missing.txt"))}},
		{Clause: `Output Schema "entries": Optional[List[str]] # For list action`,
			Files: map[string]string{"src/b.go": "", "src/a.go": "", "src/sub/c.go": "", "src/empty/": ""},
			Steps: []contracttest.Step{posStep(pj("action", "list", "path", "src"), false, "ok",
				`{"entries":["a.go","b.go","empty/","sub/"],"message":"Listed 4 entries in src"}`)}},
		{Clause: `Output Schema "entries" — an empty directory lists []`,
			Files: map[string]string{"empty/": ""},
			Steps: []contracttest.Step{posStep(pj("action", "list", "path", "empty"), false, "ok", `{"entries":[]}`)}},
		{Clause: `Success Criteria "All operations return structured JSON (not text)"`,
			Files: map[string]string{"a.txt": "x\n"},
			Steps: []contracttest.Step{withCheck(posStep(pj("action", "read", "path", "a.txt"), false, "ok", ""),
				func(t testing.TB, r contract.Result, _ map[string]string) {
					require.True(t, json.Valid([]byte(r.Text)), "the text a model sees is the JSON result")
					require.JSONEq(t, string(r.Body), r.Text)
				})}},

		// --- Key Behaviors 1: Path Validation & Sandboxing ---
		{Clause: `validate_path "Prevents: Directory traversal (../../etc/passwd)" — ValueError "Path traversal detected"`,
			Files: files,
			Steps: []contracttest.Step{withCheck(posFail(pj("action", "read", "path", "../../etc/passwd"), "ValueError"),
				errorMentions("Path traversal detected: ../../etc/passwd resolves outside workspace"))}},
		{Clause: `validate_path "Ensure path is within project root" — ".." that stays inside resolves`,
			Files: map[string]string{"README.md": "# demo\n"},
			Steps: []contracttest.Step{posStep(pj("action", "read", "path", "workspace/../README.md"), false, "ok", `{"content":"# demo\n"}`)}},
		{Clause: `validate_path "Remove leading slash, resolve relative to project root" — "/" is the project root`,
			Files: map[string]string{"README.md": "# demo\n", "docs/": ""},
			Steps: []contracttest.Step{posStep(pj("action", "list", "path", "/"), false, "ok", `{"entries":["README.md","docs/"],"path":"/"}`)}},
		{Clause: `validate_path "Prevents: Hidden file access (configurable)" — denied by default`,
			Files: files,
			Steps: []contracttest.Step{
				posFail(pj("action", "read", "path", ".env"), "PermissionError"),
				posFail(pj("action", "write", "path", ".git/config", "content", "x"), "PermissionError"),
				posStep(pj("action", "list", "path", "."), false, "ok", `{"entries":["README.md","docs/"]}`),
			}},
		{Clause: `validate_path "Hidden file access (configurable)" — policy hidden_file_access "allow"`,
			Files:  files,
			Policy: mustPolicy(`{"hidden_file_access":"allow"}`),
			Steps: []contracttest.Step{
				posStep(pj("action", "read", "path", ".env"), false, "ok", `{"content":"SECRET=1\n"}`),
				posStep(pj("action", "list", "path", "."), false, "ok", `{"entries":[".env","README.md","docs/"]}`),
			}},

		// --- Key Behaviors 2: Partial File Reading ---
		{Clause: `_read_file_partial "Skip to start_line ... Read line_count lines (or rest of file)" — rest of file`,
			Files: map[string]string{"f.txt": "one\ntwo\nthree"},
			Steps: []contracttest.Step{posStep(pj("action", "read", "path", "f.txt", "start_line", 2), false, "ok",
				`{"content":"two\nthree","lines":2,"size_bytes":9,"message":"Read lines 2-4 from f.txt"}`)}},
		{Clause: `_read_file_partial "if line_count and i >= line_count: break" — line_count 0 reads the rest`,
			Files: map[string]string{"f.txt": "one\ntwo\nthree\n"},
			Steps: []contracttest.Step{posStep(pj("action", "read", "path", "f.txt", "start_line", 3, "line_count", 0), false, "ok", `{"content":"three\n","lines":1}`)}},
		{Clause: `_read_file_partial "next(f, None)" — a start_line past the end reads no lines`,
			Files: map[string]string{"f.txt": "one\ntwo\n"},
			Steps: []contracttest.Step{withCheck(posStep(pj("action", "read", "path", "f.txt", "start_line", 10, "line_count", 5), false, "ok",
				`{"success":true,"content":"","lines":0}`), func(t testing.TB, r contract.Result, _ map[string]string) {
				require.Contains(t, string(r.Body), "the file has 2")
			})}},
		{Clause: `_read_file_partial "path.open('r', encoding='utf-8')" — text mode: universal newlines`,
			Files: map[string]string{"crlf.txt": "a\r\nb\rc\n"},
			Steps: []contracttest.Step{
				posStep(pj("action", "read", "path", "crlf.txt"), false, "ok", `{"content":"a\nb\nc\n","lines":3,"size_bytes":7}`),
				posStep(pj("action", "read", "path", "crlf.txt", "start_line", 2, "line_count", 1), false, "ok", `{"content":"b\n"}`),
			}},
		{Clause: `_read_file_partial "For large files, avoid loading entire file into memory" — a range of a file over max_size_mb`,
			Files: map[string]string{"big.log": big},
			Steps: []contracttest.Step{posStep(pj("action", "read", "path", "big.log", "start_line", 3, "line_count", 2), false, "ok",
				`{"content":"0123456789abcdef0123456789abcde\n0123456789abcdef0123456789abcde\n","lines":2,"size_bytes":64}`)}},
		{Clause: `Risk 2 "Default max_size_mb limit (10MB) ... Return error if file > max_size" — a range over the limit fails too`,
			Files: map[string]string{"big.log": big},
			Steps: []contracttest.Step{withCheck(posFail(pj("action", "read", "path", "big.log", "start_line", 1), "ValueError"),
				errorMentions("ask for fewer lines"))}},

		// --- Key Behaviors 3: Safe File Writing ---
		{Clause: `_write_file_safe "Create parent directories if needed" and "Atomic rename (temp → original)" — no temp file is left`,
			Files: map[string]string{"log.txt": "old\n"},
			Steps: []contracttest.Step{withCheck(posStep(pj("action", "write", "path", "log.txt", "content", "new\n"), false, "ok", `{"success":true}`),
				func(t testing.TB, _ contract.Result, f map[string]string) {
					require.Equal(t, map[string]string{"log.txt": "new\n"}, relFiles(f))
				})}},
		{Clause: `_write_file_safe returns "size_bytes": len(content.encode(encoding)), "lines": content.count('\n') + 1`,
			Steps: []contracttest.Step{posStep(pj("action", "write", "path", "u.txt", "content", "héllo\nwörld\n"), false, "ok",
				`{"success":true,"action":"write","path":"u.txt","size_bytes":14,"lines":3,"message":"Wrote 12 bytes to u.txt"}`)}},
		{Clause: `_write_file_safe "Cleanup temp on error" — a failed write leaves the workspace as it was`,
			Files: files,
			Steps: []contracttest.Step{
				withCheck(posFail(pj("action", "write", "path", "docs", "content", "x"), "IsADirectoryError"), unchanged(files)),
				withCheck(posFail(pj("action", "write", "path", "README.md/x.txt", "content", "x"), "NotADirectoryError"), unchanged(files)),
			}},

		// --- Example Scenarios ---
		{Clause: `Scenario 1 "Database Specialist Writes Analysis" — "Wrote 1,234 bytes to database-schema-analysis.md"`,
			Steps: []contracttest.Step{withCheck(posStep(pj("action", "write", "path", "workspace/analysis/database-schema-analysis.md", "content", analysis()), false, "ok",
				`{"success":true,"action":"write","path":"workspace/analysis/database-schema-analysis.md","message":"Wrote 1,234 bytes to database-schema-analysis.md","size_bytes":1234,"lines":42}`),
				func(t testing.TB, _ contract.Result, f map[string]string) {
					require.Equal(t, analysis(), relFiles(f)["workspace/analysis/database-schema-analysis.md"])
				})}},
		{Clause: `Scenario 2 "Security Specialist Reads Config" — "Read lines 100-150 from settings.py", lines 50, size_bytes 1500`,
			Files: map[string]string{"config/settings.py": settings},
			Steps: []contracttest.Step{posStep(pj("action", "read", "path", "config/settings.py", "start_line", 100, "line_count", 50), false, "ok",
				fmt.Sprintf(`{"success":true,"action":"read","path":"config/settings.py","message":"Read lines 100-150 from settings.py","content":%q,"lines":50,"size_bytes":1500}`, lines100to150))}},
		{Clause: `Scenario 3 "API Specialist Checks File Existence" — "File exists: docs/api-spec.yaml"`,
			Files: map[string]string{"docs/api-spec.yaml": "openapi: 3.1.0\n"},
			Steps: []contracttest.Step{posStep(pj("action", "exists", "path", "docs/api-spec.yaml"), false, "ok",
				`{"success":true,"action":"exists","path":"docs/api-spec.yaml","message":"File exists: docs/api-spec.yaml","exists":true}`)}},
		{Clause: `Scenario 3 — exists of a missing path succeeds with exists false`,
			Steps: []contracttest.Step{posStep(pj("action", "exists", "path", "docs/api-spec.yaml"), false, "ok",
				`{"success":true,"exists":false,"message":"Path does not exist: docs/api-spec.yaml"}`)}},
		{Clause: `Scenario 4 "Testing Specialist Creates Directory Structure" — "Created directory: tests/integration/api"`,
			Steps: []contracttest.Step{withCheck(posStep(pj("action", "mkdir", "path", "tests/integration/api"), false, "ok",
				`{"success":true,"action":"mkdir","path":"tests/integration/api","message":"Created directory: tests/integration/api"}`),
				func(t testing.TB, _ contract.Result, f map[string]string) {
					require.Equal(t, map[string]string{"tests/": "", "tests/integration/": "", "tests/integration/api/": ""}, relFiles(f))
				})}},
		{Clause: `Scenario 4 — mkdir of an existing directory succeeds; over a file it is a FileExistsError`,
			Files: map[string]string{"tests/": "", "notes.txt": "x"},
			Steps: []contracttest.Step{
				posStep(pj("action", "mkdir", "path", "tests"), false, "ok", `{"success":true,"message":"Directory already exists: tests"}`),
				posFail(pj("action", "mkdir", "path", "notes.txt"), "FileExistsError"),
			}},
		{Clause: `Input Schema "create_dirs" on mkdir — create_dirs=false with a missing parent is a FileNotFoundError`,
			Steps: []contracttest.Step{posFail(pj("action", "mkdir", "path", "a/b", "create_dirs", false), "FileNotFoundError")}},

		// --- Scope: delete, list ---
		{Clause: `Input Schema "delete" # Delete file`,
			Files: map[string]string{"tmp/old.txt": "x", "keep.txt": "y"},
			Steps: []contracttest.Step{withCheck(posStep(pj("action", "delete", "path", "tmp/old.txt"), false, "ok",
				`{"success":true,"action":"delete","message":"Deleted file: tmp/old.txt"}`),
				func(t testing.TB, _ contract.Result, f map[string]string) {
					require.Equal(t, map[string]string{"tmp/": "", "keep.txt": "y"}, relFiles(f))
				})}},
		{Clause: `Input Schema "delete" # Delete file — a directory is an IsADirectoryError, a missing file a FileNotFoundError`,
			Files: map[string]string{"tmp/old.txt": "x"},
			Steps: []contracttest.Step{
				withCheck(posFail(pj("action", "delete", "path", "tmp"), "IsADirectoryError"), unchanged(map[string]string{"tmp/": "", "tmp/old.txt": "x"})),
				posFail(pj("action", "delete", "path", "tmp/nope.txt"), "FileNotFoundError"),
			}},
		{Clause: `Input Schema "list" # List directory contents — a file is a NotADirectoryError, a missing path a FileNotFoundError`,
			Files: map[string]string{"a.txt": "x"},
			Steps: []contracttest.Step{
				posFail(pj("action", "list", "path", "a.txt"), "NotADirectoryError"),
				posFail(pj("action", "list", "path", "nope"), "FileNotFoundError"),
			}},
		{Clause: `Input Schema "read" — a directory is an IsADirectoryError`,
			Files: map[string]string{"docs/": ""},
			Steps: []contracttest.Step{posFail(pj("action", "read", "path", "docs"), "IsADirectoryError")}},

		// --- Non-goals and open questions ---
		{Clause: `Non-Goals "No copy, move, symlink operations" and Open Questions 1-2 "append", "edit" deferred — unknown actions`,
			Files: files,
			Steps: []contracttest.Step{
				posFail(pj("action", "copy", "path", "README.md"), "ValueError"),
				posFail(pj("action", "move", "path", "README.md"), "ValueError"),
				posFail(pj("action", "append", "path", "README.md", "content", "x"), "ValueError"),
				withCheck(posFail(pj("action", "edit", "path", "README.md"), "ValueError"), unchanged(files)),
			}},
		{Clause: `Non-Goals "Binary File Support - Text files only" / test_read_binary_file_error — NUL bytes in the first 8KB`,
			Files: map[string]string{"logo.png": "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"},
			Steps: []contracttest.Step{withCheck(posFail(pj("action", "read", "path", "logo.png"), "ValueError"), errorMentions("Binary file detected"))}},
		{Clause: `Open Question 3 "Support binary mode (encoding="binary")" not chosen — a LookupError`,
			Files: map[string]string{"a.txt": "x"},
			Steps: []contracttest.Step{posFail(pj("action", "read", "path", "a.txt", "encoding", "binary"), "LookupError")}},
		{Clause: `Risk 1 "Consider read-only mode for sensitive sub-agents" — policy read_only`,
			Files:  files,
			Policy: mustPolicy(`{"read_only":true}`),
			Steps: []contracttest.Step{
				posStep(pj("action", "read", "path", "README.md"), false, "ok", `{"success":true}`),
				withCheck(posFail(pj("action", "write", "path", "x.txt", "content", "x"), "PermissionError"), unchanged(files)),
				posFail(pj("action", "delete", "path", "README.md"), "PermissionError"),
				posFail(pj("action", "mkdir", "path", "d"), "PermissionError"),
			}},
		{Clause: `Risk 2 "Default max_size_mb limit (10MB)" — policy max_size_mb caps the request's`,
			Files:  map[string]string{"two.log": strings.Repeat("x", 2<<20)},
			Policy: mustPolicy(`{"max_size_mb":1}`),
			Steps: []contracttest.Step{withCheck(posFail(pj("action", "read", "path", "two.log", "max_size_mb", 50), "ValueError"),
				errorMentions("capped at 1.0 MB"))}},

		// --- Testing Approach ---
		{Clause: `test_composition_pattern "Append by reading + concatenating + writing"`,
			Steps: []contracttest.Step{
				posStep(pj("action", "write", "path", "log.txt", "content", "Line 1\n"), false, "ok", `{"success":true}`),
				posStep(pj("action", "read", "path", "log.txt"), false, "ok", `{"content":"Line 1\n"}`),
				posStep(pj("action", "write", "path", "log.txt", "content", "Line 1\n"+"Line 2\n"), false, "ok", `{"success":true}`),
				posStep(pj("action", "read", "path", "log.txt"), false, "ok", `{"content":"Line 1\nLine 2\n","lines":2}`),
			}},
		{Clause: `test_sub_agent_writes_analysis — write "workspace/analysis/test-doc.md"`,
			Steps: []contracttest.Step{
				posStep(pj("action", "write", "path", "workspace/analysis/test-doc.md", "content", "# Test\n\nContent"), false, "ok", `{"success":true}`),
				posStep(pj("action", "exists", "path", "workspace/analysis/test-doc.md"), false, "ok", `{"exists":true}`),
			}},
		{Clause: `test_write_overwrite_file`,
			Files: map[string]string{"a.txt": "old content\n"},
			Steps: []contracttest.Step{
				posStep(pj("action", "write", "path", "a.txt", "content", "new"), false, "ok", `{"size_bytes":3,"lines":1}`),
				posStep(pj("action", "read", "path", "a.txt"), false, "ok", `{"content":"new","lines":1,"size_bytes":3}`),
			}},
	}
	for _, bad := range adversarial {
		cases = append(cases, contracttest.Case{
			Clause: fmt.Sprintf(`test_adversarial_paths "pytest.raises(ValueError, match=\"Path traversal\")" — %s`, bad),
			Files:  files,
			Steps: []contracttest.Step{
				withCheck(posFail(pj("action", "read", "path", bad), "ValueError"), errorMentions("Path traversal")),
				withCheck(posFail(pj("action", "write", "path", bad, "content", "pwned"), "ValueError"), unchanged(files)),
			},
		})
	}
	return cases
}
