package tools_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/tools/toolstest"
	"github.com/vfsd/vfsd/vfs/policy"
)

func TestWriteFile(t *testing.T) {
	runCases(t, nil, []callCase{
		{name: "create new", tool: "write_file", params: `{"path":"new/dir/f.txt","inline_text":"hello"}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, true, r["created"])
				require.Equal(t, float64(5), r["written_bytes"])
				require.Equal(t, float64(1), r["version"])
				require.Equal(t, "hello", e.Read("new/dir/f.txt"))
			}},
		{name: "content alias", tool: "write_file", params: `{"path":"a.txt","content":"x"}`, status: tools.StatusOK},
		{name: "replace", tool: "write_file", params: `{"path":"README.md","inline_text":"new"}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, false, r["created"])
				require.Equal(t, float64(2), r["version"])
			}},
		{name: "bytes", tool: "write_file", params: `{"path":"b.bin","inline_bytes":"AAEC"}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, "\x00\x01\x02", e.Read("b.bin"))
			}},
		{name: "append", tool: "write_file", params: `{"path":"README.md","inline_text":"more\n","mode":"append"}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, "# demo\nmore\n", e.Read("README.md"))
				require.Equal(t, float64(5), r["written_bytes"])
				require.Equal(t, float64(12), r["size_bytes"])
			}},
		{name: "append creates", tool: "write_file", params: `{"path":"log.txt","inline_text":"1","mode":"append"}`, status: tools.StatusOK},
		{name: "text declared binary reads back as bytes", tool: "write_file", params: `{"path":"h.bin","inline_text":"hello","encoding":"binary"}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				rr := toolstest.Receipt(t, e.Call("read_file", `{"path":"h.bin"}`))
				require.Equal(t, "binary", rr["encoding"])
				require.Equal(t, "aGVsbG8=", rr["inline_bytes"])
			}},
		{name: "text with NUL declared utf-8 reads back as text", tool: "write_file", params: `{"path":"n.txt","inline_text":"a\u0000b","encoding":"utf-8"}`, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				rr := toolstest.Receipt(t, e.Call("read_file", `{"path":"n.txt","offset_bytes":0}`))
				require.Equal(t, "utf-8", rr["encoding"])
				require.Equal(t, "a\x00b", rr["inline_text"])
			}},
		{name: "bytes declared utf-8 that are not", tool: "write_file", params: `{"path":"x.txt","inline_bytes":"/w==","encoding":"utf-8"}`, status: tools.StatusInvalidInput, code: tools.CodeInvalidInput},
		{name: "an unknown encoding", tool: "write_file", params: `{"path":"x.txt","inline_text":"x","encoding":"latin-1"}`, status: tools.StatusInvalidInput, code: tools.CodeInvalidInput},
		{name: "overwrite missing", tool: "write_file", params: `{"path":"nope.txt","inline_text":"x","mode":"overwrite"}`, status: tools.StatusNotFound, code: tools.CodeNotFound},
		{name: "create_new existing", tool: "write_file", params: `{"path":"README.md","inline_text":"x","mode":"create_new"}`, status: tools.StatusAlreadyExists, code: tools.CodeAlreadyExists},
		{name: "expected version ok", tool: "write_file", params: `{"path":"README.md","inline_text":"x","expected_version":1}`, status: tools.StatusOK},
		{name: "expected version conflict", tool: "write_file", params: `{"path":"README.md","inline_text":"x","expected_version":7}`, status: tools.StatusConflict, code: tools.CodeConflict},
		{name: "expected absent", tool: "write_file", params: `{"path":"README.md","inline_text":"x","expected_version":0}`, status: tools.StatusConflict, code: tools.CodeConflict},
		{name: "no parents", tool: "write_file", params: `{"path":"x/y/z.txt","inline_text":"x","create_parents":false}`, status: tools.StatusNotFound, code: tools.CodeNotFound},
		{name: "onto directory", tool: "write_file", params: `{"path":"src","inline_text":"x"}`, status: tools.StatusIsDirectory, code: tools.CodeIsDirectory},
		{name: "under a file", tool: "write_file", params: `{"path":"README.md/x","inline_text":"x"}`, status: tools.StatusNotDirectory, code: tools.CodeNotDirectory},
		{name: "root", tool: "write_file", params: `{"path":"/","inline_text":"x"}`, status: tools.StatusIsDirectory, code: tools.CodeIsDirectory},
		{name: "bad base64", tool: "write_file", params: `{"path":"x","inline_bytes":"!!"}`, status: tools.StatusInvalidInput, code: tools.CodeInvalidInput},
		{name: "nul in path", tool: "write_file", params: `{"path":"a\u0000b","inline_text":"x"}`, status: tools.StatusInvalidInput, code: tools.CodeInvalidPath},
	})
}

func TestPolicyPresets(t *testing.T) {
	preset := func(name string) func() *policy.Policy {
		return func() *policy.Policy {
			p, err := policy.Preset(name)
			if err != nil {
				panic(err)
			}
			return p
		}
	}
	long := strings.Repeat("a", 81)
	deep := strings.Repeat("d/", 16) + "f.txt"
	big := strings.Repeat("x", 48001)
	t.Run("weakincentives", func(t *testing.T) {
		runCases(t, preset(policy.PresetWeakIncentives), []callCase{
			{name: "48000 characters", tool: "write_file", params: map[string]any{"path": "ok.txt", "inline_text": strings.Repeat("é", 48000)}, status: tools.StatusOK},
			{name: "48001 characters", tool: "write_file", params: map[string]any{"path": "big.txt", "inline_text": big}, status: tools.StatusTooLarge, code: tools.CodeTooLarge,
				check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
					require.Equal(t, float64(48001), r["found"])
					require.Equal(t, float64(48000), r["limit"])
				}},
			{name: "depth 17", tool: "write_file", params: map[string]any{"path": deep, "inline_text": "x"}, status: tools.StatusForbidden, code: tools.CodeForbidden},
			{name: "segment 81", tool: "mkdir", params: map[string]any{"path": long}, status: tools.StatusForbidden, code: tools.CodeForbidden},
			{name: "non-ascii", tool: "read_file", params: `{"path":"unicode/héllo.txt"}`, status: tools.StatusForbidden, code: tools.CodeForbidden},
			{name: "non-ascii hidden from listing", tool: "list_directory", params: `{"path":"unicode"}`, status: tools.StatusOK,
				check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) { require.Empty(t, r["entries"]) }},
		})
	})
	t.Run("x07", func(t *testing.T) {
		runCases(t, preset(policy.PresetX07), []callCase{
			{name: "hidden read", tool: "read_file", params: `{"path":".hidden/secret"}`, status: tools.StatusForbidden, code: tools.CodeForbidden,
				check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
					require.Equal(t, float64(60001), r["error_number"]) // X07's FS_ERR_POLICY_DENY
				}},
			{name: "hidden write", tool: "write_file", params: `{"path":"a/.env","inline_text":"x"}`, status: tools.StatusForbidden, code: tools.CodeForbidden},
			{name: "dotdot", tool: "read_file", params: `{"path":"src/../README.md"}`, status: tools.StatusForbidden, code: tools.CodeForbidden},
			{name: "listing hides", tool: "list_directory", params: `{}`, status: tools.StatusOK,
				check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
					require.NotContains(t, text, ".hidden")
				}},
		})
	})
	t.Run("roots and ops", func(t *testing.T) {
		runCases(t, func() *policy.Policy {
			p := policy.Default()
			p.Name = "custom"
			p.WriteRoots = []string{"src"}
			p.ReadRoots = []string{"src", "docs"}
			p.AllowedOps = []string{"read_file", "write_file", "list_directory"}
			return p
		}, []callCase{
			{name: "write inside", tool: "write_file", params: `{"path":"src/x.go","inline_text":"x"}`, status: tools.StatusOK},
			{name: "write outside", tool: "write_file", params: `{"path":"docs/x","inline_text":"x"}`, status: tools.StatusForbidden, code: tools.CodeForbidden},
			{name: "prefix trick", tool: "write_file", params: `{"path":"src_evil/x","inline_text":"x"}`, status: tools.StatusForbidden, code: tools.CodeForbidden},
			{name: "read outside", tool: "read_file", params: `{"path":"README.md"}`, status: tools.StatusForbidden, code: tools.CodeForbidden},
			{name: "op not allowed", tool: "delete_file", params: `{"path":"src/main.go"}`, status: tools.StatusForbidden, code: tools.CodeForbidden},
		})
	})
	t.Run("caps", func(t *testing.T) {
		runCases(t, func() *policy.Policy {
			p := policy.Default()
			p.Caps.MaxReadBytes = 4
			p.Caps.MaxWriteBytes = 3
			p.Caps.MaxEntries = 2
			p.Caps.MaxSessionBytes = 200
			return p
		}, []callCase{
			{name: "read clamped", tool: "read_file", params: `{"path":"docs/a.txt","max_bytes":100}`, status: tools.StatusOK,
				check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
					require.Equal(t, "one\n", r["inline_text"])
					require.Equal(t, true, r["truncated"])
				}},
			{name: "plain read clamped", tool: "read_file", params: `{"path":"docs/a.txt"}`, status: tools.StatusOK,
				check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
					require.Equal(t, "one\n", r["inline_text"])
				}},
			{name: "write over cap", tool: "write_file", params: `{"path":"x","inline_text":"four"}`, status: tools.StatusTooLarge, code: tools.CodeTooLarge},
			{name: "entries clamped", tool: "list_directory", params: `{"max_entries":50}`, status: tools.StatusOK,
				check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) { require.Len(t, r["entries"], 2) }},
		})
	})
}

func TestSymlinkPolicies(t *testing.T) {
	setup := func(t *testing.T, name string) *toolstest.Env {
		p, err := policy.Preset(policy.PresetDefault)
		require.NoError(t, err)
		p.Symlinks = policy.SymlinkPolicy(name)
		e := toolstest.New(t, p, baseFiles)
		for link, target := range map[string]string{
			"ln-file": "docs/a.txt", "src/ln-up": "../README.md", "ln-dir": "src",
			"ln-escape": "../../etc/passwd", "ln-abs": "/README.md", "loop-a": "loop-b", "loop-b": "loop-a",
		} {
			_, err := e.S.Symlink(t.Context(), target, vfsPath(link))
			require.NoError(t, err)
		}
		return e
	}
	type want map[string]tools.Code // path → "" for ok, else the code
	reads := func(t *testing.T, e *toolstest.Env, w want) {
		for path, code := range w {
			r := toolstest.Receipt(t, e.Call("read_file", map[string]any{"path": path}))
			if code == "" {
				require.Equal(t, "ok", r["status"], "%s: %v", path, r)
			} else {
				require.Equal(t, string(code), r["error_code"], "%s: %v", path, r)
			}
		}
	}
	t.Run("deny", func(t *testing.T) {
		e := setup(t, "deny")
		reads(t, e, want{"ln-file": tools.CodeForbidden, "ln-dir/main.go": tools.CodeForbidden, "src/main.go": ""})
		r := toolstest.Receipt(t, e.Call("stat", `{"path":"ln-file"}`))
		require.Equal(t, "symlink", r["kind"], "stat describes the link itself")
	})
	t.Run("within_root_only", func(t *testing.T) {
		e := setup(t, "within_root_only")
		reads(t, e, want{"ln-file": "", "src/ln-up": "", "ln-dir/main.go": "", "ln-escape": tools.CodeForbidden,
			"ln-abs": tools.CodeForbidden, "loop-a": tools.CodeInvalidInput})
		// The messages are the tool layer's wording of the engine's reasons.
		for path, msg := range map[string]string{
			"ln-escape": `symlink /ln-escape points to "../../etc/passwd", outside the workspace`,
			"ln-abs":    `symlink /ln-abs points to the absolute path "/README.md", outside the workspace`,
			"loop-a/x":  "too many levels of symlinks resolving /loop-a/x",
		} {
			r := toolstest.Receipt(t, e.Call("read_file", map[string]any{"path": path}))
			require.Contains(t, r["summary_text"], msg, "%s: %v", path, r)
		}
	})
	t.Run("allow", func(t *testing.T) {
		e := setup(t, "allow")
		reads(t, e, want{"ln-file": "", "ln-abs": "", "ln-escape": tools.CodeNotFound, "loop-a": tools.CodeInvalidInput})
		// A write through a link writes its target.
		r := e.Call("write_file", `{"path":"ln-file","inline_text":"via link"}`)
		require.True(t, r.OK(), "%s", r.JSON())
		require.Equal(t, "via link", e.Read("docs/a.txt"))
		// Deleting a link deletes the link, not the target.
		require.True(t, e.Call("delete_file", `{"path":"ln-dir"}`).OK())
		require.Equal(t, "package util\n", e.Read("src/util/util.go"))
	})
}
