package aos

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/contract"
	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/tools/edit"
	"github.com/vfsd/vfsd/tools/toolstest"
	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/policy"
)

func newEnv(t testing.TB, pol *policy.Policy, files map[string]string) (*toolstest.Env, *contract.Env) {
	e := toolstest.New(t, pol, files)
	return e, &contract.Env{SessionID: e.S.ID(), Session: e.S, Tools: e.Tools, Policy: e.Tools.Policy(), Blobs: e.Repo.Blobs()}
}

func TestDecodeParams(t *testing.T) {
	tests := []struct {
		name, raw string
		check     func(t *testing.T, p *Params)
		err       string
	}{
		{name: "empty is {}", raw: ``, check: func(t *testing.T, p *Params) { require.Nil(t, p.Path) }},
		{name: "session_id and path", raw: `{"session_id":"s","path":"a"}`, check: func(t *testing.T, p *Params) {
			require.Equal(t, "s", *p.SessionID)
			require.Equal(t, "a", *p.Path)
		}},
		{name: "file_path maps to path", raw: `{"file_path":"a"}`, check: func(t *testing.T, p *Params) { require.Equal(t, "a", *p.Path) }},
		{name: "path and file_path agree", raw: `{"path":"a","file_path":"a"}`, check: func(t *testing.T, p *Params) { require.Equal(t, "a", *p.Path) }},
		{name: "path and file_path differ", raw: `{"path":"a","file_path":"b"}`, err: "file_path"},
		{name: "offset and limit are the byte range", raw: `{"offset":3,"limit":4}`, check: func(t *testing.T, p *Params) {
			require.Equal(t, int64(3), *p.OffsetBytes)
			require.Equal(t, int64(4), *p.MaxBytes)
		}},
		{name: "offset conflicts with offset_bytes", raw: `{"offset":3,"offset_bytes":4}`, err: "offset"},
		{name: "negative", raw: `{"max_results":-1}`, err: "max_results must not be negative"},
		{name: "wrong type names the field", raw: `{"replace_all":"yes"}`, err: `"replace_all" must be true or false`},
		{name: "not an object", raw: `[1]`, err: "JSON object"},
		{name: "unknown fields are listed, sorted", raw: `{"zeta":1,"alpha":2,"path":"a"}`, check: func(t *testing.T, p *Params) {
			require.Equal(t, []string{"alpha", "zeta"}, p.Unknown)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := DecodeParams(json.RawMessage(tt.raw))
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				var pe *ParamError
				require.ErrorAs(t, err, &pe)
				require.Equal(t, "invalid_params", pe.Code)
				return
			}
			require.NoError(t, err)
			tt.check(t, p)
		})
	}
}

func TestDecodeContent(t *testing.T) {
	tests := []struct {
		name, raw string
		want      ContentInput
		err       string
	}{
		{name: "inline_text", raw: `{"inline_text":{"text":"hi"}}`, want: ContentInput{Text: ptr("hi")}},
		{name: "inline_bytes base64", raw: `{"inline_bytes":{"bytes":"AAE="}}`, want: ContentInput{Bytes: []byte{0, 1}}},
		{name: "inline_bytes numbers", raw: `{"inline_bytes":{"bytes":[0,255]}}`, want: ContentInput{Bytes: []byte{0, 255}}},
		{name: "blob_ref object", raw: `{"blob_ref":{"blob_ref":"blake3:x"}}`, want: ContentInput{BlobRef: "blake3:x"}},
		{name: "001 text", raw: `{"text":"t"}`, want: ContentInput{Text: ptr("t")}},
		{name: "001 bytes", raw: `{"bytes":"AAE"}`, want: ContentInput{Bytes: []byte{0, 1}}},
		{name: "001 blob_ref string, bare hash", raw: `{"blob_ref":"` + strings.Repeat("a", 64) + `"}`, want: ContentInput{BlobRef: "blake3:" + strings.Repeat("a", 64)}},
		{name: "plain string", raw: `"s"`, want: ContentInput{Text: ptr("s")}},
		{name: "missing", raw: ``, err: "content is required"},
		{name: "two variants", raw: `{"text":"a","bytes":"AA=="}`, err: "exactly one"},
		{name: "none", raw: `{"other":1}`, err: "exactly one"},
		{name: "inline_text without text", raw: `{"inline_text":{"txt":"a"}}`, err: "content.inline_text"},
		{name: "byte out of range", raw: `{"bytes":[256]}`, err: "not a byte"},
		{name: "bad base64", raw: `{"bytes":"!!"}`, err: "base64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeContent(json.RawMessage(tt.raw))
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestDecodePatch(t *testing.T) {
	tests := []struct {
		name, raw string
		want      PatchInput
		err       string
	}{
		{name: "inline_text", raw: `{"patch":{"inline_text":{"text":"P"}}}`, want: PatchInput{Text: ptr("P")}},
		{name: "blob_ref", raw: `{"patch":{"blob_ref":{"blob_ref":"blake3:x"}}}`, want: PatchInput{BlobRef: "blake3:x"}},
		{name: "SDK string", raw: `{"patch":"P"}`, want: PatchInput{Text: ptr("P")}},
		{name: "001 patch_text", raw: `{"patch_text":"P"}`, want: PatchInput{Text: ptr("P")}},
		{name: "both", raw: `{"patch":"P","patch_text":"P"}`, err: "once"},
		{name: "missing", raw: `{}`, err: "patch is required"},
		{name: "empty object", raw: `{"patch":{}}`, err: "exactly one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := DecodeParams(json.RawMessage(tt.raw))
			require.NoError(t, err)
			got, err := DecodePatch(p)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestDecodePolicy(t *testing.T) {
	p, err := DecodePolicy(json.RawMessage(`{"allowed_fs_ops":["read","list"],"fs_roots":["/repo/src/","docs"],"max_read_bytes":10,
		"max_write_bytes":11,"max_patch_bytes":12,"max_inline_bytes":13,"max_grep_results":14,"max_glob_results":15,"max_scan_files":16,
		"max_scan_bytes":17,"allowed_patch_formats":["v4a"],"max_changed_files":18,"max_edit_replacements":19,"follow_symlinks":"deny"}`))
	require.NoError(t, err)
	require.Equal(t, []string{"glob", "list_directory", "read_file"}, p.AllowedOps)
	require.Equal(t, []string{"repo/src", "docs"}, p.ReadRoots)
	require.Equal(t, p.ReadRoots, p.WriteRoots)
	require.Equal(t, policy.SymlinksDeny, p.Symlinks)
	require.Equal(t, policy.Caps{MaxReadBytes: 10, MaxWriteBytes: 11, MaxPatchBytes: 12, MaxInlineBytes: 13, MaxGrepResults: 14,
		MaxGlobResults: 15, MaxScannedFiles: 16, MaxScannedBytes: 17, MaxChangedFiles: 18, MaxEditReplacements: 19,
		MaxForks: policy.DefaultMaxForks}, p.Caps)

	empty, err := DecodePolicy(json.RawMessage(`{}`))
	require.NoError(t, err)
	require.Empty(t, empty.AllowedOps, "omitted: every operation")
	require.Equal(t, policy.SymlinksAllow, empty.Symlinks)
	require.Equal(t, policy.Caps{MaxForks: policy.DefaultMaxForks}, empty.Caps, "omitted limits are unbounded; the daemon's fork budget stays")
	empty.Name = DefaultPolicyName
	require.Equal(t, DefaultPolicy(), empty, "a session without a policy has the capability with every field omitted")

	noPatch, err := DecodePolicy(json.RawMessage(`{"allowed_patch_formats":["unified"]}`))
	require.NoError(t, err)
	require.False(t, noPatch.Allows("apply_patch"))
	require.True(t, noPatch.Allows("read_file"))

	for raw, msg := range map[string]string{
		`{"fs_root":["a"]}`:               `unknown field "fs_root"`,
		`{"allowed_targets":["local"]}`:   `unknown field "allowed_targets"`,
		`{"allowed_fs_ops":["exec"]}`:     `unknown operation "exec"`,
		`{"max_read_bytes":0}`:            "at least 1",
		`{"max_read_bytes":"1"}`:          `"max_read_bytes" must be a number`,
		`{"follow_symlinks":"sometimes"}`: "follow_symlinks",
		`{"fs_roots":["../etc"]}`:         "not a path in the session",
		`{} {}`:                           "data after",
		`[]`:                              "not a JSON object",
	} {
		_, err := DecodePolicy(json.RawMessage(raw))
		require.ErrorContains(t, err, msg, raw)
	}
	var _ contract.PolicyDecoder = New()
	var _ contract.PolicyDefaulter = New()
}

func TestFuzzyFind(t *testing.T) {
	tests := []struct {
		name, content, old string
		want               []string // matched text
	}{
		{name: "inner whitespace", content: "f(a,   b)", old: "f(a, b)", want: []string{"f(a,   b)"}},
		{name: "across lines", content: "if x {\n\treturn 1\n}", old: "if x { return 1 }", want: []string{"if x {\n\treturn 1\n}"}},
		{name: "quotes inside a line", content: "say “hi” now", old: `say "hi"`, want: []string{"say “hi”"}},
		{name: "dashes", content: "a — b", old: "a - b", want: []string{"a — b"}},
		{name: "nbsp", content: "a\u00a0b", old: "a b", want: []string{"a\u00a0b"}},
		{name: "crlf", content: "a\r\nb", old: "a\nb", want: []string{"a\r\nb"}},
		{name: "leading and trailing whitespace of old ignored", content: "x  y", old: "\n  x y\n", want: []string{"x  y"}},
		{name: "several, non-overlapping", content: "aa aa aa", old: "aa", want: []string{"aa", "aa", "aa"}},
		{name: "whitespace-only old", content: "a b", old: " \n "},
		{name: "whitespace is not optional", content: "f(a,b)", old: "f(a, b)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, s := range FuzzyFind(tt.content, tt.old) {
				got = append(got, tt.content[s.Start:s.End])
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestFuzzyReplace(t *testing.T) {
	tests := []struct {
		name, content, old, new, want string
	}{
		{name: "inner whitespace", content: "x = f(a,   b)\n", old: "f(a, b)", new: "g(a)", want: "x = g(a)\n"},
		{name: "reindent tabs for spaces", content: "func f() {\n\tif x {\n\t\ty()\n\t}\n}\n",
			old: "    if x  {\n        y()\n    }", new: "    if x {\n        z()\n    }", want: "func f() {\n\tif x {\n\t\tz()\n\t}\n}\n"},
		{name: "old's surrounding newlines go", content: "a\nb  c\nd\n", old: "b c\n", new: "B C\n", want: "a\nB C\nd\n"},
		{name: "delete whole line", content: "a\n  b  c\nd\n", old: "b c", new: "", want: "a\nd\n"},
		{name: "delete last line", content: "a\nb  c", old: "b c", new: "", want: "a"},
		{name: "delete inside a line", content: "a b  c d\n", old: "b c", new: "", want: "a  d\n"},
		{name: "crlf file keeps crlf", content: "a  b\r\nc\r\n", old: "a b\nc", new: "x\ny", want: "x\r\ny\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spans := FuzzyFind(tt.content, tt.old)
			require.NotEmpty(t, spans)
			require.Equal(t, tt.want, FuzzyReplace(tt.content, spans, tt.old, tt.new))
		})
	}
}

func TestEditContentStages(t *testing.T) {
	// Exact first: an exact match wins over fuzzy ones elsewhere.
	out, n, err := editContent("a  b\na b\n", "a b", "X", false, noLimits)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, "a  b\nX\n", out)
	// vfsd's line passes (trim) re-indent as the file.
	out, _, err = editContent("  x\n", "x \n", "y\n", false, noLimits)
	require.NoError(t, err)
	require.Equal(t, "  y\n", out)
	// Fuzzy ambiguity without replace_all.
	_, _, err = editContent("a  b\na   b\n", "a b", "X", false, noLimits)
	var me *editMatchError
	require.ErrorAs(t, err, &me)
	require.True(t, me.ambiguous)
	require.Equal(t, []int{1, 2}, me.lines)
	// old == new: counted, nothing changes.
	out, n, err = editContent("q q", "q", "q", true, noLimits)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, "q q", out)
}

func TestReplayConsumesJournaledReceipts(t *testing.T) {
	e, env := newEnv(t, nil, map[string]string{"a.txt": "one\n"})
	c := New()
	ctx := context.Background()
	read := json.RawMessage(`{"path":"a.txt"}`)
	write := json.RawMessage(`{"path":"a.txt","content":{"inline_text":{"text":"two\n"}}}`)
	r1 := c.Call(ctx, env, "host.fs.read_file", read)
	w := c.Call(ctx, env, "host.fs.write_file", write)
	r2 := c.Call(ctx, env, "host.fs.read_file", read)
	require.Contains(t, string(r1.Body), "one")
	require.Contains(t, string(r2.Body), "two")
	require.Len(t, c.journal.(*MemJournal).Entries(env.SessionID), 3)

	// Change the file behind the journal's back: replay must not look.
	_, err := e.S.WriteFile(ctx, vfs.MustPath("a.txt"), strings.NewReader("three\n"), vfs.WriteOptions{})
	require.NoError(t, err)
	rctx, _ := WithReplay(ctx)
	require.Equal(t, r1, c.Call(rctx, env, "host.fs.read_file", read), "the first read replays the first receipt")
	require.Equal(t, w, c.Call(rctx, env, "host.fs.write_file", write), "the write is not run again")
	require.Equal(t, r2, c.Call(rctx, env, "host.fs.read_file", read), "the second read replays the second receipt")
	require.Equal(t, "three\n", e.Read("a.txt"), "external actions are never replayed")
	miss := c.Call(rctx, env, "host.fs.read_file", read)
	require.True(t, miss.IsError)
	require.JSONEq(t, `{"status":"error","error_code":"replay_receipt_missing"}`, string(miss.Body))

	// The same intent hashes the same whatever the key order.
	require.Equal(t, IntentHash("host.fs.read_file", json.RawMessage(`{"a":1,"b":2}`)), IntentHash("host.fs.read_file", json.RawMessage(`{ "b":2, "a":1 }`)))
	require.NotEqual(t, IntentHash("host.fs.read_file", read), IntentHash("process.fs.read_file", read))
}

func TestReplayMissingCASIsAHardFault(t *testing.T) {
	_, env := newEnv(t, nil, map[string]string{"a.txt": "x"})
	c := New()
	ctx := context.Background()
	j := NewMemJournal(1, 10)
	ctx = WithJournal(ctx, j)
	params := json.RawMessage(`{"path":"a.txt"}`)
	intent := IntentHash("host.fs.read_file", params)
	require.NoError(t, j.Append(ctx, env.SessionID, Entry{Effect: "host.fs.read_file", Intent: intent, Params: params,
		Receipt: json.RawMessage(`{"status":"ok"}`), Status: "ok", BlobRefs: []string{"blake3:" + strings.Repeat("0", 64)}}))
	rctx, _ := WithReplay(ctx)
	r := c.Call(rctx, env, "host.fs.read_file", params)
	require.True(t, r.IsError)
	require.JSONEq(t, `{"status":"error","error_code":"replay_missing_cas"}`, string(r.Body))
	require.Empty(t, c.journal.(*MemJournal).Entries(env.SessionID), "a context's journal replaces the contract's own")
}

func TestMemJournalIsBounded(t *testing.T) {
	j := NewMemJournal(2, 3)
	ctx := context.Background()
	for i := range 5 {
		require.NoError(t, j.Append(ctx, "s1", Entry{Intent: "i", Status: string(rune('a' + i))}))
	}
	es := j.Entries("s1")
	require.Len(t, es, 3)
	require.Equal(t, "c", es[0].Status)
	e, ok, _ := j.Lookup(ctx, "s1", "i", 2)
	require.True(t, ok)
	require.Equal(t, "e", e.Status)
	require.NoError(t, j.Append(ctx, "s2", Entry{}))
	require.NoError(t, j.Append(ctx, "s3", Entry{}))
	require.Empty(t, j.Entries("s1"), "the least recently used session goes")
}

func TestSymlinkOutOfRootIsForbidden(t *testing.T) {
	pol, err := DecodePolicy(json.RawMessage(`{"fs_roots":["src"],"follow_symlinks":"within_root_only"}`))
	require.NoError(t, err)
	e, env := newEnv(t, pol, map[string]string{"src/a.txt": "in", "secret.txt": "out"})
	_, err = e.S.Symlink(context.Background(), "../secret.txt", vfs.MustPath("src/link"))
	require.NoError(t, err)
	r := New().Call(context.Background(), env, "host.fs.read_file", json.RawMessage(`{"path":"src/link"}`))
	require.True(t, r.IsError)
	require.Equal(t, "forbidden", r.Status)
	require.NotContains(t, string(r.Body), "out")
}

func TestToolsAndAliases(t *testing.T) {
	c := New()
	var names []string
	for _, tl := range c.Tools() {
		names = append(names, tl.Name)
		var s map[string]any
		require.NoError(t, json.Unmarshal(tl.InputSchema, &s), tl.Name)
		require.Equal(t, "object", s["type"])
		require.Contains(t, s["properties"], "session_id", tl.Name)
	}
	require.Equal(t, []string{"host.fs.read_file", "host.fs.write_file", "host.fs.edit_file", "host.fs.apply_patch", "host.fs.grep",
		"host.fs.glob", "host.fs.stat", "host.fs.exists", "host.fs.list_dir"}, names)
	require.Equal(t, "host.fs.grep", c.Aliases()["process.fs.grep"])
	require.Equal(t, "host.fs.grep", c.Aliases()["grep"])
	_, env := newEnv(t, nil, nil)
	r := c.Call(context.Background(), env, "host.fs.nope", nil)
	require.True(t, r.IsError)
	require.JSONEq(t, `{"status":"error","error_code":"unknown_effect"}`, string(r.Body))
}

var noLimits = edit.Limits{}

// 000 §host.fs.grep "Primary backend is ripgrep when available;
// deterministic native regex fallback is required": both engines give the
// same receipt.
func TestGrepEnginesAgree(t *testing.T) {
	files := map[string]string{"a.go": "func A() {}\n", "b/c.go": "func C() {}\nvar d\n", "e.txt": "func not go\n"}
	var bodies []string
	for _, engine := range []string{"native", "rg"} {
		if engine == "rg" {
			if _, err := exec.LookPath("rg"); err != nil {
				t.Skip("ripgrep is not installed; the native engine was checked")
			}
		}
		e := toolstest.New(t, nil, files, func(o *tools.Options) { o.GrepEngine = engine })
		env := &contract.Env{SessionID: e.S.ID(), Session: e.S, Tools: e.Tools, Policy: e.Tools.Policy(), Blobs: e.Repo.Blobs()}
		r := New().Call(context.Background(), env, "host.fs.grep", json.RawMessage(`{"pattern":"^func \\w+","glob_filter":"*.go"}`))
		require.Equal(t, "ok", r.Status, engine)
		bodies = append(bodies, string(r.Body))
	}
	require.JSONEq(t, `{"status":"ok","matches":{"inline_text":{"text":"a.go:1:func A() {}\nb/c.go:1:func C() {}"}},"match_count":2,"truncated":false,"summary_text":"2 match(es)"}`, bodies[0])
	require.Equal(t, bodies[0], bodies[1])
}
