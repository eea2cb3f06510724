package contracts

import (
	"encoding/base64"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/contract"
	"github.com/vfsd/vfsd/contract/contracttest"
)

// The weakincentives document: ../shared/seeds/002_244bc3d0e26fe1a0.txt
// (the virtual filesystem tool suite and HostMount). Each case is one
// clause: its section and a short quote.

// isoMillis is Python's isoformat of a UTC datetime truncated to
// milliseconds.
var isoMillis = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3}000)?\+00:00$`)

// fileOf is the "file" object of a FileReadResult.
func fileOf(t testing.TB, r contract.Result) map[string]any {
	t.Helper()
	f, ok := body(t, r)["file"].(map[string]any)
	require.True(t, ok, "no file in %s", r.Body)
	return f
}

// failsWith checks a ToolValidationError whose message contains text.
func failsWith(text string) func(t testing.TB, r contract.Result, files map[string]string) {
	return func(t testing.TB, r contract.Result, _ map[string]string) {
		require.Equal(t, "ToolValidationError", body(t, r)["error"], "%s", r.Body)
		require.Contains(t, body(t, r)["message"], text)
	}
}

// rel keys a session's files by their paths relative to the root
// ("docs/a.md", not "/docs/a.md").
func rel(files map[string]string) map[string]string {
	out := make(map[string]string, len(files))
	for p, c := range files {
		out[strings.TrimPrefix(p, "/")] = c
	}
	return out
}

// holds checks the session holds exactly want.
func holds(want map[string]string) func(t testing.TB, r contract.Result, files map[string]string) {
	return func(t testing.TB, _ contract.Result, files map[string]string) {
		require.Equal(t, want, rel(files))
	}
}

const tve = "ToolValidationError"

// rootPathOf is a VirtualFileSystem state's root_path, which must be an
// absolute path to a directory.
func rootPathOf(t testing.TB, st json.RawMessage) string {
	t.Helper()
	var v struct {
		RootPath string `json:"root_path"`
	}
	require.NoError(t, json.Unmarshal(st, &v), "%s", st)
	require.True(t, filepath.IsAbs(v.RootPath), "root_path %q must be an absolute path", v.RootPath)
	fi, err := os.Stat(v.RootPath)
	require.NoError(t, err, "root_path")
	require.True(t, fi.IsDir(), "root_path %s is a directory", v.RootPath)
	return v.RootPath
}

// diskFiles reads a directory tree as rel shows a session's files:
// "path" → content, directories as "path/".
func diskFiles(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		r := filepath.ToSlash(strings.TrimPrefix(p, root+string(filepath.Separator)))
		if de.IsDir() {
			out[r+"/"] = ""
			return nil
		}
		b, err := os.ReadFile(p)
		out[r] = string(b)
		return err
	}))
	return out
}

// statePaths are the paths of the files of a VirtualFileSystem state, in
// its order.
func statePaths(t testing.TB, st json.RawMessage) []string {
	t.Helper()
	var v struct {
		Files []struct {
			Path struct {
				Segments []string `json:"segments"`
			} `json:"path"`
		} `json:"files"`
	}
	require.NoError(t, json.Unmarshal(st, &v), "%s", st)
	out := []string{}
	for _, f := range v.Files {
		out = append(out, strings.Join(f.Path.Segments, "/"))
	}
	return out
}

var wiCases = []contracttest.Case{
	// Overview
	{
		Clause: `Overview: "Snapshots ... start empty automatically" — an empty session lists nothing`,
		Steps: []contracttest.Step{{Tool: "list_directory", WantStatus: "ok",
			WantBody: `{"path":{"segments":[]},"directories":[],"files":[]}`}},
	},
	{
		Clause: `Overview: "Agents can list directories, inspect file metadata, edit file contents"`,
		Steps: []contracttest.Step{
			{Tool: "write_file", Params: `{"path":{"segments":["src","main.py"]},"content":"print(1)\n"}`, WantStatus: "ok"},
			{Tool: "list_directory", Params: `{"path":{"segments":["src"]}}`, WantBody: `{"directories":[],"files":["main.py"]}`},
			{Tool: "read_file", Params: `{"path":{"segments":["src","main.py"]}}`,
				WantBody: `{"file":{"path":{"segments":["src","main.py"]},"encoding":"utf-8","size_bytes":9,"version":1},"content":"print(1)\n"}`},
		},
	},
	{
		Clause: `Overview: "preload selected host folders during initialisation"`,
		Host:   map[string]string{"docs/a.md": "# A\n", "docs/b.txt": "b"},
		Init:   `{"mounts":[{"host_path":"docs/"}]}`,
		Steps: []contracttest.Step{{Tool: "list_directory", Params: `{"path":{"segments":["docs"]}}`,
			WantBody: `{"files":["a.md","b.txt"]}`}},
	},

	// Module Surface
	{
		Clause: `Module Surface: "Tool validation errors reuse ToolValidationError" — status and body name it`,
		Steps: []contracttest.Step{{Tool: "read_file", Params: `{"path":{"segments":["missing.txt"]}}`, WantError: true,
			WantStatus: tve, WantBody: `{"error":"ToolValidationError"}`, Check: failsWith("File does not exist")}},
	},
	{
		Clause: `Module Surface: "HostMount ... they are never exposed as interactive tools to agents"`,
		Steps: []contracttest.Step{{Tool: "host_mount", Params: `{"host_path":"docs/"}`, WantError: true, WantStatus: tve,
			Check: failsWith("Unknown tool")}},
	},

	// Session Integration
	{
		Clause: `Session Integration: "Host folder mounts configured on the section are materialised ... merged into the initial snapshot"`,
		Files:  map[string]string{"notes.txt": "mine"},
		Host:   map[string]string{"docs/guide.md": "guide"},
		Init:   `{"mounts":[{"host_path":"docs"}]}`,
		Steps: []contracttest.Step{{Tool: "list_directory", WantBody: `{"directories":["docs"],"files":["notes.txt"]}`,
			Check: holds(map[string]string{"notes.txt": "mine", "docs/": "", "docs/guide.md": "guide"})}},
	},

	// Data Model: paths
	{
		Clause: `Data Model: "Paths are relative" — an absolute path is rejected`,
		Files:  map[string]string{"etc/passwd": "x"},
		Steps: []contracttest.Step{
			{Tool: "read_file", Params: `{"path":{"segments":["/etc/passwd"]}}`, WantError: true, WantStatus: tve, Check: failsWith("Absolute paths are not allowed")},
			{Tool: "read_file", Params: `{"path":"/etc/passwd"}`, WantError: true, WantStatus: tve, Check: failsWith("Absolute paths are not allowed")},
			{Tool: "write_file", Params: `{"path":{"segments":["/tmp","x"]},"content":"x"}`, WantError: true, WantStatus: tve,
				Check: holds(map[string]string{"etc/": "", "etc/passwd": "x"})},
		},
	},
	{
		Clause: `Data Model: "split into segments that exclude . and .."`,
		Files:  map[string]string{"a/b.txt": "b"},
		Steps: []contracttest.Step{
			{Tool: "read_file", Params: `{"path":{"segments":["a","..","a","b.txt"]}}`, WantError: true, WantStatus: tve, Check: failsWith("'.' or '..'")},
			{Tool: "read_file", Params: `{"path":{"segments":[".","a","b.txt"]}}`, WantError: true, WantStatus: tve, Check: failsWith("'.' or '..'")},
			{Tool: "list_directory", Params: `{"path":"a/../.."}`, WantError: true, WantStatus: tve},
		},
	},
	{
		Clause: `Data Model: "Paths are ... ASCII-only" — a non-ASCII segment is rejected`,
		Steps: []contracttest.Step{{Tool: "write_file", Params: `{"path":{"segments":["caf\u00e9.txt"]},"content":"x"}`, WantError: true,
			WantStatus: tve, Check: failsWith("must be ASCII text")}},
	},
	{
		Clause: `Data Model: "Handlers collapse duplicate slashes"`,
		Steps: []contracttest.Step{
			{Tool: "write_file", Params: `{"path":{"segments":["docs//guide.md"]},"content":"g"}`, WantStatus: "ok",
				WantBody: `{"path":{"segments":["docs","guide.md"]}}`, Check: holds(map[string]string{"docs/": "", "docs/guide.md": "g"})},
			{Tool: "read_file", Params: `{"path":"docs///guide.md"}`, WantBody: `{"content":"g"}`},
		},
	},
	{
		Clause: `Data Model: "and reject empty segments"`,
		Steps: []contracttest.Step{{Tool: "write_file", Params: `{"path":{"segments":["docs","","a.md"]},"content":"x"}`, WantError: true,
			WantStatus: tve, Check: failsWith("must not be empty")}},
	},
	{
		Clause: `Data Model: "Maximum path depth: 16 segments"`,
		Steps: []contracttest.Step{
			{Tool: "write_file", Params: `{"path":"` + strings.Repeat("d/", 15) + `f","content":"x"}`, WantStatus: "ok"},
			{Tool: "write_file", Params: `{"path":"` + strings.Repeat("d/", 16) + `f","content":"x"}`, WantError: true, WantStatus: tve,
				Check: failsWith("16 segments")},
		},
	},
	{
		Clause: `Data Model: "maximum segment length: 80 characters"`,
		Steps: []contracttest.Step{
			{Tool: "write_file", Params: `{"path":{"segments":["` + strings.Repeat("a", 80) + `"]},"content":"x"}`, WantStatus: "ok"},
			{Tool: "write_file", Params: `{"path":{"segments":["` + strings.Repeat("a", 81) + `"]},"content":"x"}`, WantError: true, WantStatus: tve,
				Check: failsWith("80 characters or fewer")},
		},
	},

	// Data Model: size guard
	{
		Clause: `Data Model: "Maximum content length per write: 48_000 characters for UTF-8 text"`,
		Steps: []contracttest.Step{
			{Tool: "write_file", Params: `{"path":"ok.txt","content":"` + strings.Repeat("\u00e9", 48000) + `"}`, WantStatus: "ok",
				Check: func(t testing.TB, _ contract.Result, files map[string]string) {
					require.Len(t, rel(files)["ok.txt"], 96000) // 48,000 characters, two bytes each
				}},
			{Tool: "write_file", Params: `{"path":"big.txt","content":"` + strings.Repeat("x", 48001) + `"}`, WantError: true, WantStatus: tve,
				Check: failsWith("Content exceeds maximum length of 48,000 characters")},
		},
	},
	{
		Clause: `Data Model: "binary writes enforce the same limit on decoded bytes"`,
		Steps: []contracttest.Step{
			{Tool: "write_file", Params: `{"path":"ok.bin","encoding":"binary","content":"` + base64.StdEncoding.EncodeToString(make([]byte, 48000)) + `"}`, WantStatus: "ok"},
			{Tool: "write_file", Params: `{"path":"big.bin","encoding":"binary","content":"` + base64.StdEncoding.EncodeToString(make([]byte, 48001)) + `"}`,
				WantError: true, WantStatus: tve, Check: func(t testing.TB, r contract.Result, files map[string]string) {
					failsWith("48,000 bytes after decoding")(t, r, files)
					require.NotContains(t, rel(files), "big.bin")
				}},
		},
	},

	// Data Model: encoding, versions, timestamps
	{
		Clause: `Data Model: "File payloads are tracked as raw bytes with an accompanying encoding hint ... fall back to base64"`,
		Steps: []contracttest.Step{
			{Tool: "write_file", Params: `{"path":"img.bin","encoding":"binary","content":"AAEC/w=="}`, WantStatus: "ok",
				WantBody: `{"path":{"segments":["img.bin"]},"content":"AAEC/w==","mode":"create","encoding":"binary"}`,
				Check: func(t testing.TB, _ contract.Result, files map[string]string) {
					require.Equal(t, "\x00\x01\x02\xff", rel(files)["img.bin"])
				}},
			{Tool: "read_file", Params: `{"path":"img.bin"}`, WantBody: `{"file":{"encoding":"binary","size_bytes":4},"content":"AAEC/w=="}`},
		},
	},
	{
		Clause: `Data Model: "Snapshots retain metadata and the encoding hint describing how to interpret bytes when returning a FileReadResult" — the write's hint, not the bytes' look, decides the read`,
		Steps: []contracttest.Step{
			// "hello" is text to look at; its writer said binary.
			{Tool: "write_file", Params: `{"path":"h.bin","encoding":"binary","content":"aGVsbG8="}`, WantStatus: "ok"},
			{Tool: "read_file", Params: `{"path":"h.bin"}`, WantBody: `{"file":{"encoding":"binary","size_bytes":5},"content":"aGVsbG8="}`},
			// Text with a NUL byte is still text: its writer said utf-8.
			{Tool: "write_file", Params: `{"path":"nul.txt","content":"a\u0000b"}`, WantStatus: "ok"},
			{Tool: "read_file", Params: `{"path":"nul.txt"}`, WantBody: `{"file":{"encoding":"utf-8","size_bytes":3},"content":"a\u0000b"}`},
			{Tool: "list_directory", State: func(t testing.TB, st json.RawMessage, _ map[string]string) {
				require.Contains(t, string(st), `{"path":{"segments":["h.bin"]},"encoding":"binary"`)
				require.Contains(t, string(st), `{"path":{"segments":["nul.txt"]},"encoding":"utf-8"`)
			}},
		},
	},
	{
		Clause: `Session Integration: "provisions a per-session temporary directory on disk ... and records the absolute path" — root_path is a real directory holding the session's files`,
		Files:  map[string]string{"seed.txt": "seed"},
		Steps: []contracttest.Step{
			{Tool: "write_file", Params: `{"path":"src/main.py","content":"print(1)\n"}`, WantStatus: "ok"},
			{Tool: "write_file", Params: `{"path":"img.bin","encoding":"binary","content":"AAEC/w=="}`, WantStatus: "ok",
				State: func(t testing.TB, st json.RawMessage, files map[string]string) {
					root := rootPathOf(t, st)
					require.Equal(t, rel(files), diskFiles(t, root), "root_path %s holds the session's files", root)
				}},
			{Tool: "delete_file", Params: `{"path":"seed.txt"}`, WantStatus: "ok",
				State: func(t testing.TB, st json.RawMessage, files map[string]string) {
					root := rootPathOf(t, st)
					require.Equal(t, rel(files), diskFiles(t, root), "and follows it: %s", root)
					require.NotContains(t, diskFiles(t, root), "seed.txt")
				}},
		},
	},
	{
		Clause: `Session Integration: "Creating a session snapshot ... Restoring from a snapshot" — the encoding hint comes back with the bytes`,
		Steps: []contracttest.Step{
			{Tool: "write_file", Params: `{"path":"h.bin","encoding":"binary","content":"aGVsbG8="}`, WantStatus: "ok"},
			{Snapshot: "bin"},
			{Tool: "write_file", Params: `{"path":"h.bin","mode":"overwrite","content":"now text"}`, WantStatus: "ok"},
			{Tool: "read_file", Params: `{"path":"h.bin"}`, WantBody: `{"file":{"encoding":"utf-8"},"content":"now text"}`},
			{Restore: "bin", Tool: "read_file", Params: `{"path":"h.bin"}`, WantBody: `{"file":{"encoding":"binary","size_bytes":5},"content":"aGVsbG8="}`},
		},
	},
	{
		Clause: `Data Model: "When WriteFile.mode is append, the reducer ... updates metadata" — appended bytes keep the file's hint; text cannot be appended to bytes that are not UTF-8`,
		Steps: []contracttest.Step{
			{Tool: "write_file", Params: `{"path":"b.bin","encoding":"binary","content":"/w=="}`, WantStatus: "ok"},
			{Tool: "write_file", Params: `{"path":"b.bin","mode":"append","content":"x"}`, WantError: true, WantStatus: tve,
				Check: func(t testing.TB, r contract.Result, files map[string]string) {
					failsWith("append base64 content with encoding \"binary\"")(t, r, files)
					require.Equal(t, "\xff", rel(files)["b.bin"])
				}},
			{Tool: "write_file", Params: `{"path":"b.bin","mode":"append","encoding":"binary","content":"AA=="}`, WantStatus: "ok"},
			{Tool: "read_file", Params: `{"path":"b.bin"}`, WantBody: `{"file":{"encoding":"binary","size_bytes":2,"version":2},"content":"/wA="}`},
		},
	},
	{
		Clause: `Data Model: "Reducers maintain monotonically increasing version numbers per file" (create, overwrite, append)`,
		Steps: []contracttest.Step{
			{Tool: "write_file", Params: `{"path":"log.txt","content":"a"}`, WantBody: `{"mode":"create"}`},
			{Tool: "read_file", Params: `{"path":"log.txt"}`, WantBody: `{"file":{"version":1,"size_bytes":1}}`},
			{Tool: "write_file", Params: `{"path":"log.txt","content":"bb","mode":"overwrite"}`, WantBody: `{"mode":"overwrite"}`},
			{Tool: "read_file", Params: `{"path":"log.txt"}`, WantBody: `{"file":{"version":2,"size_bytes":2},"content":"bb"}`},
			{Tool: "write_file", Params: `{"path":"log.txt","content":"ccc","mode":"append"}`, WantBody: `{"mode":"append","content":"ccc"}`},
			{Tool: "read_file", Params: `{"path":"log.txt"}`, WantBody: `{"file":{"version":3,"size_bytes":5},"content":"bbccc"}`},
		},
	},
	{
		Clause: `Data Model: "created_at and updated_at ... UTC ... millisecond precision ... only updated_at on subsequent writes"`,
		Steps: func() []contracttest.Step {
			var created, updated string
			return []contracttest.Step{
				{Tool: "write_file", Params: `{"path":"t.txt","content":"1"}`},
				{Tool: "read_file", Params: `{"path":"t.txt"}`, Check: func(t testing.TB, r contract.Result, _ map[string]string) {
					f := fileOf(t, r)
					created, updated = f["created_at"].(string), f["updated_at"].(string)
					require.Regexp(t, isoMillis, created)
					require.Equal(t, created, updated, "a new file's timestamps are the same")
				}},
				{Tool: "write_file", Params: `{"path":"t.txt","content":"2","mode":"overwrite"}`},
				{Tool: "read_file", Params: `{"path":"t.txt"}`, Check: func(t testing.TB, r contract.Result, _ map[string]string) {
					f := fileOf(t, r)
					require.Equal(t, created, f["created_at"])
					require.Regexp(t, isoMillis, f["updated_at"])
					require.Greater(t, f["updated_at"].(string), updated)
				}},
			}
		}(),
	},

	// Data Model: HostMount
	{
		Clause: `Data Model: "Each HostMount requires an ASCII host_path"`,
		Host:   map[string]string{"docs/a.md": "a"},
		Init:   `{"mounts":[{"host_path":"d\u00f6cs/"}]}`, WantInitError: "Host path must be ASCII text",
		Steps: []contracttest.Step{{Tool: "list_directory", WantBody: `{"directories":[],"files":[]}`}},
	},
	{
		Clause: `Data Model: "resolves it against an allow-listed root" — the document's own example host_path "docs/"`,
		Host:   map[string]string{"docs/guide.md": "g", "docs/api/ref.md": "r", "other/x.md": "x"},
		Init:   `{"mounts":[{"host_path":"docs/","mount_path":{"segments":["docs"]},"include_glob":["*.md"]}]}`,
		Steps: []contracttest.Step{{Tool: "read_file", Params: `{"path":"docs/api/ref.md"}`, WantBody: `{"content":"r"}`,
			Check: holds(map[string]string{"docs/": "", "docs/guide.md": "g", "docs/api/": "", "docs/api/ref.md": "r"})}},
	},
	{
		Clause: `Data Model: "normalises it to an absolute path" — an absolute host_path inside the root`,
		Host:   map[string]string{"proj/src/a.go": "package a"},
		Init:   `{"mounts":[{"host_path":"$HOST_ROOT/proj/src"}]}`,
		Steps:  []contracttest.Step{{Tool: "list_directory", Params: `{"path":"proj/src"}`, WantBody: `{"files":["a.go"]}`}},
	},
	{
		Clause:       `Data Model: HostMount "follow_symlinks: bool = False" — a host symlink that is not followed brings nothing in: listing, read and the state agree it is not there`,
		Host:         map[string]string{"docs/a.md": "aaa", "docs/sub/x.md": "x"},
		HostSymlinks: map[string]string{"docs/link.md": "a.md", "docs/dlink": "sub", "docs/dangling.md": "nope.md"},
		Init:         `{"mounts":[{"host_path":"docs/"}]}`,
		Steps: []contracttest.Step{
			{Tool: "list_directory", Params: `{"path":"docs"}`, WantBody: `{"directories":["sub"],"files":["a.md"]}`},
			{Tool: "read_file", Params: `{"path":"docs/link.md"}`, WantError: true, WantStatus: tve, Check: failsWith("File does not exist")},
			{Tool: "read_file", Params: `{"path":"docs/dlink/x.md"}`, WantError: true, WantStatus: tve, Check: failsWith("File does not exist")},
			{Tool: "list_directory", Params: `{"path":"docs/dlink"}`, WantBody: `{"directories":[],"files":[]}`,
				State: func(t testing.TB, st json.RawMessage, _ map[string]string) {
					require.Equal(t, []string{"docs/a.md", "docs/sub/x.md"}, statePaths(t, st))
				}},
		},
	},
	{
		Clause:       `Data Model: HostMount "follow_symlinks": true imports what the links lead to, as the files and directories they are`,
		Host:         map[string]string{"docs/a.md": "aaa", "docs/sub/x.md": "x"},
		HostSymlinks: map[string]string{"docs/link.md": "a.md", "docs/dlink": "sub"},
		Init:         `{"mounts":[{"host_path":"docs/","follow_symlinks":true}]}`,
		Steps: []contracttest.Step{
			{Tool: "list_directory", Params: `{"path":"docs"}`, WantBody: `{"directories":["dlink","sub"],"files":["a.md","link.md"]}`},
			{Tool: "read_file", Params: `{"path":"docs/link.md"}`, WantBody: `{"file":{"size_bytes":3},"content":"aaa"}`},
			{Tool: "read_file", Params: `{"path":"docs/dlink/x.md"}`, WantBody: `{"content":"x"}`,
				State: func(t testing.TB, st json.RawMessage, _ map[string]string) {
					require.Equal(t, []string{"docs/a.md", "docs/dlink/x.md", "docs/link.md", "docs/sub/x.md"}, statePaths(t, st))
				}},
		},
	},
	{
		Clause:   `Data Model: the VFS holds files and directories — a symlink that reached the session otherwise (a program in root_path, vfsd's own import) is, for listing, read and the state alike, what it leads to, or nothing`,
		Files:    map[string]string{"a.txt": "aaa", "d/x": "x"},
		Symlinks: map[string]string{"l.txt": "a.txt", "dl": "d", "dangling": "nope", "out": "../../etc/passwd"},
		Steps: []contracttest.Step{
			{Tool: "list_directory", WantBody: `{"directories":["d","dl"],"files":["a.txt","l.txt"]}`},
			{Tool: "read_file", Params: `{"path":"l.txt"}`, WantBody: `{"file":{"size_bytes":3,"encoding":"utf-8"},"content":"aaa"}`},
			{Tool: "read_file", Params: `{"path":"dl/x"}`, WantBody: `{"content":"x"}`},
			{Tool: "read_file", Params: `{"path":"dangling"}`, WantError: true, WantStatus: tve, Check: failsWith("File does not exist")},
			{Tool: "read_file", Params: `{"path":"out"}`, WantError: true, WantStatus: tve},
			{Tool: "list_directory", Params: `{"path":"dl"}`, WantBody: `{"files":["x"]}`,
				State: func(t testing.TB, st json.RawMessage, _ map[string]string) {
					require.Equal(t, []string{"a.txt", "d/x", "l.txt"}, statePaths(t, st))
					require.Contains(t, string(st), `{"path":{"segments":["l.txt"]},"encoding":"utf-8","size_bytes":3`, "a link shows as the file it leads to, not as its target's text")
				}},
		},
	},
	{
		Clause: `Data Model: "and rejects traversal outside the approved surface"`,
		Host:   map[string]string{"docs/a.md": "a"},
		Init:   `{"mounts":[{"host_path":"../etc"}]}`, WantInitError: "outside the allowed roots",
		Steps: []contracttest.Step{{Tool: "list_directory", WantBody: `{"directories":[],"files":[]}`}},
	},
	{
		Clause: `Data Model: "rejects traversal outside the approved surface" — an absolute path outside the roots`,
		Host:   map[string]string{"docs/a.md": "a"},
		Init:   `{"mounts":[{"host_path":"/etc"}]}`, WantInitError: "outside the allowed roots",
	},
	{
		Clause: `Data Model: "filtered through the glob include/exclude lists"`,
		Host:   map[string]string{"docs/a.md": "a", "docs/draft/b.md": "b", "docs/c.txt": "c", "docs/draft/d.md": "d"},
		Init:   `{"mounts":[{"host_path":"docs","include_glob":["*.md"],"exclude_glob":["draft/b*"]}]}`,
		Steps: []contracttest.Step{{Tool: "list_directory", Params: `{"path":"docs"}`,
			Check: holds(map[string]string{"docs/": "", "docs/a.md": "a", "docs/draft/": "", "docs/draft/d.md": "d"})}},
	},
	{
		Clause: `Data Model: "mounted under mount_path (or the host relative path when mount_path is None)"`,
		Host:   map[string]string{"repo/docs/a.md": "a", "repo/README": "r"},
		Init:   `{"mounts":[{"host_path":"repo/docs"},{"host_path":"repo/README","mount_path":{"segments":["top"]}}]}`,
		Steps: []contracttest.Step{{Tool: "list_directory",
			Check: holds(map[string]string{"repo/": "", "repo/docs/": "", "repo/docs/a.md": "a", "top/": "", "top/README": "r"})}},
	},
	{
		Clause: `Data Model: "Existing VFS entries at the target paths are overwritten, directory structures merge"`,
		Host:   map[string]string{"one/x.txt": "one-x", "one/y.txt": "one-y", "two/y.txt": "two-y", "two/z.txt": "two-z"},
		Init:   `{"mounts":[{"host_path":"one","mount_path":"m"},{"host_path":"two","mount_path":"m"}]}`,
		Steps: []contracttest.Step{{Tool: "list_directory", Params: `{"path":"m"}`, WantBody: `{"files":["x.txt","y.txt","z.txt"]}`,
			Check: holds(map[string]string{"m/": "", "m/x.txt": "one-x", "m/y.txt": "two-y", "m/z.txt": "two-z"})}},
	},
	{
		Clause: `Data Model: "max_bytes caps the aggregate content pulled from disk"`,
		Host:   map[string]string{"docs/a.md": "12345", "docs/b.md": "67890"},
		Init:   `{"mounts":[{"host_path":"docs","max_bytes":9}]}`, WantInitError: "byte budget",
		Steps: []contracttest.Step{{Tool: "list_directory", WantBody: `{"directories":[],"files":[]}`}},
	},
	{
		Clause: `Data Model: "max_bytes caps the aggregate content" — a mount within its cap`,
		Host:   map[string]string{"docs/a.md": "12345", "docs/b.md": "67890"},
		Init:   `{"mounts":[{"host_path":"docs","max_bytes":10}]}`,
		Steps:  []contracttest.Step{{Tool: "list_directory", Params: `{"path":"docs"}`, WantBody: `{"files":["a.md","b.md"]}`}},
	},

	// Data Model: delete and listings
	{
		Clause: `Data Model: "removing a directory path deletes all files with that prefix" (unrelated paths untouched)`,
		Files:  map[string]string{"docs/a.md": "a", "docs/sub/b.md": "b", "docs2/c.md": "c", "top.txt": "t"},
		Steps: []contracttest.Step{{Tool: "delete_file", Params: `{"path":{"segments":["docs"]}}`, WantStatus: "ok",
			WantBody: `{"path":{"segments":["docs"]}}`,
			Check:    holds(map[string]string{"docs2/": "", "docs2/c.md": "c", "top.txt": "t"})}},
	},
	{
		Clause: `Data Model: "Directory listings render shallow entries only"`,
		Files:  map[string]string{"a/b/c/d.txt": "d", "a/e.txt": "e", "a/f/": ""},
		Steps: []contracttest.Step{{Tool: "list_directory", Params: `{"path":{"segments":["a"]}}`,
			WantBody: `{"path":{"segments":["a"]},"directories":["b","f"],"files":["e.txt"]}`}},
	},

	// Tool Contracts
	{
		Clause: `Tool Contracts: list_directory "raises if the path resolves to a file"`,
		Files:  map[string]string{"a.txt": "a"},
		Steps: []contracttest.Step{{Tool: "list_directory", Params: `{"path":"a.txt"}`, WantError: true, WantStatus: tve,
			Check: failsWith("Cannot list a file path")}},
	},
	{
		Clause: `Tool Contracts: list_directory "None lists root"`,
		Files:  map[string]string{"a.txt": "a", "d/x": "x"},
		Steps: []contracttest.Step{
			{Tool: "list_directory", Params: `{"path":null}`, WantBody: `{"path":{"segments":[]},"directories":["d"],"files":["a.txt"]}`},
			{Tool: "list_directory", Params: `{}`, WantBody: `{"directories":["d"],"files":["a.txt"]}`},
		},
	},
	{
		Clause: `Tool Contracts: read_file "Raises if the path is missing"`,
		Files:  map[string]string{"d/x": "x"},
		Steps: []contracttest.Step{
			{Tool: "read_file", Params: `{"path":"nope.txt"}`, WantError: true, WantStatus: tve, Check: failsWith("File does not exist in the virtual filesystem")},
			{Tool: "read_file", Params: `{"path":"d"}`, WantError: true, WantStatus: tve, Check: failsWith("is a directory")},
		},
	},
	{
		Clause: `Tool Contracts: write_file "Create or modify a file" — create makes a new file, with its directories`,
		Files:  map[string]string{"a.txt": "old"},
		Steps: []contracttest.Step{
			{Tool: "write_file", Params: `{"path":"new/dir/b.txt","content":"b"}`, WantStatus: "ok",
				WantBody: `{"path":{"segments":["new","dir","b.txt"]},"content":"b","mode":"create","encoding":"utf-8"}`},
			{Tool: "write_file", Params: `{"path":"a.txt","content":"x"}`, WantError: true, WantStatus: tve,
				Check: func(t testing.TB, r contract.Result, files map[string]string) {
					failsWith("File already exists; use overwrite or append")(t, r, files)
					require.Equal(t, "old", rel(files)["a.txt"])
				}},
		},
	},
	{
		Clause: `Tool Contracts: write_file modes overwrite and append need an existing file`,
		Steps: []contracttest.Step{
			{Tool: "write_file", Params: `{"path":"a.txt","content":"x","mode":"overwrite"}`, WantError: true, WantStatus: tve, Check: failsWith("does not exist for the requested mode")},
			{Tool: "write_file", Params: `{"path":"a.txt","content":"x","mode":"append"}`, WantError: true, WantStatus: tve, Check: failsWith("does not exist for the requested mode")},
			{Tool: "write_file", Params: `{"path":"a.txt","content":"x","mode":"truncate"}`, WantError: true, WantStatus: tve,
				Check: func(t testing.TB, r contract.Result, files map[string]string) {
					failsWith("mode must be create, overwrite or append")(t, r, files)
					require.Empty(t, files)
				}},
		},
	},
	{
		Clause: `Tool Contracts: write_file "honours the encoding hint" — an unknown codec is refused`,
		Steps: []contracttest.Step{
			{Tool: "write_file", Params: `{"path":"a.txt","content":"x","encoding":"latin-9"}`, WantError: true, WantStatus: tve, Check: failsWith("Unsupported encoding")},
			{Tool: "write_file", Params: `{"path":"b.bin","content":"not base64!","encoding":"binary"}`, WantError: true, WantStatus: tve, Check: failsWith("base64")},
			{Tool: "write_file", Params: `{"path":"c.txt","content":"c","encoding":null}`, WantStatus: "ok", WantBody: `{"encoding":null}`},
		},
	},
	{
		Clause: `Tool Contracts: delete_file "Deletes the matching file"`,
		Files:  map[string]string{"a.txt": "a", "b.txt": "b"},
		Steps: []contracttest.Step{{Tool: "delete_file", Params: `{"path":"a.txt"}`, WantStatus: "ok",
			Check: holds(map[string]string{"b.txt": "b"})}},
	},
	{
		Clause: `Tool Contracts: delete_file "no-op when nothing matches if allow_missing flag is passed"`,
		Files:  map[string]string{"b.txt": "b"},
		Steps: []contracttest.Step{
			{Tool: "delete_file", Params: `{"path":"a.txt"}`, WantError: true, WantStatus: tve, Check: failsWith("No files matched")},
			{Tool: "delete_file", Params: `{"path":"a.txt","allow_missing":true}`, WantStatus: "ok",
				WantBody: `{"path":{"segments":["a.txt"]}}`, Check: holds(map[string]string{"b.txt": "b"})},
		},
	},
	{
		Clause: `Tool Contracts: "Every tool validates its parameters" — unknown parameters are named`,
		Steps: []contracttest.Step{{Tool: "read_file", Params: `{"path":"a","offset":3}`, WantError: true, WantStatus: tve,
			Check: failsWith(`unknown field "offset"`)}},
	},

	// Testing Checklist: end to end
	{
		Clause: `Testing Checklist: "End-to-end scenario: start from the empty VFS (optionally with configured host mounts), list directories, read/write files"`,
		Host:   map[string]string{"docs/intro.md": "# Intro\n"},
		Init:   `{"mounts":[{"host_path":"docs/","mount_path":{"segments":["docs"]},"include_glob":["*.md"]}]}`,
		Steps: []contracttest.Step{
			{Tool: "list_directory", WantBody: `{"directories":["docs"],"files":[]}`},
			{Tool: "read_file", Params: `{"path":{"segments":["docs","intro.md"]}}`, WantBody: `{"content":"# Intro\n","file":{"version":1}}`},
			{Tool: "write_file", Params: `{"path":{"segments":["docs","intro.md"]},"content":"# Intro\nMore.\n","mode":"overwrite"}`, WantStatus: "ok"},
			{Tool: "read_file", Params: `{"path":{"segments":["docs","intro.md"]}}`, WantBody: `{"content":"# Intro\nMore.\n","file":{"version":2}}`},
			{Tool: "delete_file", Params: `{"path":{"segments":["docs"]}}`, WantStatus: "ok", Check: holds(map[string]string{})},
		},
	},
}

func TestWeakincentivesContract(t *testing.T) {
	runAll(t, "weakincentives", wiCases)
}
