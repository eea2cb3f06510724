package weakincentives

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/contract"
	"github.com/vfsd/vfsd/contract/contracttest"
	"github.com/vfsd/vfsd/tools/toolstest"
	"github.com/vfsd/vfsd/vfs/policy"
)

func newEnv(t *testing.T, pol *policy.Policy, files map[string]string) (*contract.Env, *toolstest.Env) {
	t.Helper()
	if pol == nil {
		pol = Contract{}.DefaultPolicy()
	}
	te := toolstest.New(t, pol, files)
	return &contract.Env{SessionID: te.S.ID(), Session: te.S, Tools: te.Tools, Policy: te.Tools.Policy(), Blobs: te.Repo.Blobs()}, te
}

func callJSON(t *testing.T, env *contract.Env, tool, params string) (contract.Result, map[string]any) {
	t.Helper()
	r := Contract{}.Call(context.Background(), env, tool, json.RawMessage(params))
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &m), "%s", r.Body)
	return r, m
}

func TestNormalize(t *testing.T) {
	l := limitsOf(nil)
	for _, tc := range []struct {
		in   []string
		want []string
		err  string
	}{
		{in: []string{}, want: []string{}},
		{in: []string{"src", "main.py"}, want: []string{"src", "main.py"}},
		{in: []string{"src/main.py"}, want: []string{"src", "main.py"}},
		{in: []string{"src//lib///x.py/"}, want: []string{"src", "lib", "x.py"}},
		{in: []string{"/etc"}, err: "Absolute paths"},
		{in: []string{"a", "/b"}, err: "Absolute paths"},
		{in: []string{"a", ""}, err: "must not be empty"},
		{in: []string{"a/../b"}, err: "'.' or '..'"},
		{in: []string{"."}, err: "'.' or '..'"},
		{in: []string{"na\u00efve"}, err: "ASCII"},
		{in: []string{strings.Repeat("x", 81)}, err: "80 characters"},
		{in: strings.Split(strings.Repeat("d/", 16)+"f", "/"), err: "16 segments"},
		{in: strings.Split(strings.Repeat("d/", 15)+"f", "/"), want: strings.Split(strings.Repeat("d/", 15)+"f", "/")},
	} {
		got, err := l.normalize(VfsPath{Segments: tc.in})
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, "%q", tc.in)
			require.IsType(t, &ToolValidationError{}, err)
			continue
		}
		require.NoError(t, err, "%q", tc.in)
		require.Equal(t, tc.want, got.Segments, "%q", tc.in)
	}
}

func TestVfsPathJSON(t *testing.T) {
	var p VfsPath
	require.NoError(t, json.Unmarshal([]byte(`{"segments":["a","b"]}`), &p))
	require.Equal(t, []string{"a", "b"}, p.Segments)
	require.NoError(t, json.Unmarshal([]byte(`"a/b"`), &p))
	require.Equal(t, []string{"a/b"}, p.Segments)
	require.NoError(t, json.Unmarshal([]byte(`""`), &p))
	require.Empty(t, p.Segments)
	require.Error(t, json.Unmarshal([]byte(`{"segments":["a"],"parts":[]}`), &p))
	b, err := json.Marshal(VfsPath{})
	require.NoError(t, err)
	require.JSONEq(t, `{"segments":[]}`, string(b))
}

func TestTimestampIsPythonIsoformat(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 123_456_789, time.FixedZone("x", 3600))
	require.Equal(t, "2026-01-02T02:04:05.123000+00:00", Timestamp(at).String())
	require.Equal(t, "2026-01-02T03:04:05+00:00", Timestamp(time.Date(2026, 1, 2, 3, 4, 5, 400, time.UTC)).String())
}

// fnmatch is Python's fnmatch.fnmatchcase for patterns of literals, "*"
// and "?": the reference the doublestar expansion must agree with.
func fnmatch(pat, name string) bool {
	var re strings.Builder
	re.WriteString("^")
	for _, c := range pat {
		switch c {
		case '*':
			re.WriteString(".*")
		case '?':
			re.WriteString(".")
		default:
			re.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	re.WriteString("$")
	return regexp.MustCompile(re.String()).MatchString(name)
}

func TestGlobsMatchLikeFnmatch(t *testing.T) {
	paths := []string{"a.md", "docs/a.md", "docs/deep/er/b.md", "a.mdx", "README", "README.md", "README/x",
		"draft/b.md", "draft/c.txt", "x/draft/b.md", "b", "src/main.go", "src/sub/main_test.go"}
	for _, pat := range []string{"*.md", "*", "README*", "draft/*", "*/draft/*", "src/*_test.go", "*a*", "b", "docs/*.md"} {
		ds, err := globs("include_glob", []string{pat})
		require.NoError(t, err)
		for _, p := range paths {
			got := false
			for _, d := range ds {
				if ok, _ := doublestar.Match(d, p); ok {
					got = true
				}
			}
			require.Equal(t, fnmatch(pat, p), got, "pattern %q path %q (doublestar %q)", pat, p, ds)
		}
	}
	_, err := globs("include_glob", []string{"*a*b*c*d*e*f*g"})
	require.ErrorContains(t, err, "at most 6")
	_, err = globs("exclude_glob", []string{"caf\u00e9*"})
	require.ErrorContains(t, err, "ASCII")
}

func TestHostPathResolution(t *testing.T) {
	one, two := t.TempDir(), t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(two, "docs"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(one, "src"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(two, "src"), 0o755))
	roots := []string{one, two}

	abs, rel, err := hostPath("docs/", roots)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(two, "docs"), abs, "a relative path resolves against the first root holding it")
	require.Equal(t, "docs", rel)

	abs, _, err = hostPath("src", roots)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(one, "src"), abs, "roots are tried in order")

	_, _, err = hostPath("missing", roots)
	require.ErrorContains(t, err, "outside the allowed roots or missing")
	_, _, err = hostPath("../etc", roots)
	require.ErrorContains(t, err, "outside the allowed roots")
	_, _, err = hostPath("docs/../../etc", roots)
	require.ErrorContains(t, err, "outside the allowed roots")

	abs, rel, err = hostPath(filepath.Join(two, "docs", "x"), roots)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(two, "docs", "x"), abs)
	require.Equal(t, "docs/x", rel)
	abs, rel, err = hostPath(two, roots)
	require.NoError(t, err)
	require.Equal(t, two, abs)
	require.Equal(t, ".", rel, "a root itself mounts at the VFS root")
	_, _, err = hostPath("/etc", roots)
	require.ErrorContains(t, err, "outside the allowed roots")
	_, _, err = hostPath("docs", nil)
	require.ErrorContains(t, err, "No allowed host roots")
}

func TestSymlinkOutOfRootIsNotFollowedForResolution(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(outside, "secret"), 0o755))
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "link")))
	_, _, err := hostPath("link/secret", []string{root})
	require.ErrorContains(t, err, "outside the allowed roots or missing")
}

func TestMountNeedsHost(t *testing.T) {
	env, _ := newEnv(t, nil, nil)
	_, err := Mount(context.Background(), env, []HostMount{{HostPath: "docs"}})
	require.ErrorContains(t, err, "--allow-root")
	require.ErrorContains(t, Contract{}.InitSession(context.Background(), env, json.RawMessage(`{"mounts":[],"allowed":1}`)), `unknown field "allowed"`)
	require.NoError(t, Contract{}.InitSession(context.Background(), env, nil))
}

func TestMountValidatesEveryMountFirst(t *testing.T) {
	env, te := newEnv(t, nil, nil)
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "docs"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "docs", "a.md"), []byte("a"), 0o644))
	env.Host = contracttest.NewImportHost(t, []string{root}, true, te.Repo, te.S)
	zero := int64(0)
	for _, bad := range []HostMount{{HostPath: "  "}, {HostPath: "docs", MaxBytes: &zero}, {HostPath: "docs", IncludeGlob: []string{"[a"}},
		{HostPath: "docs", MountPath: &VfsPath{Segments: []string{"/abs"}}}} {
		_, err := Mount(context.Background(), env, []HostMount{{HostPath: "docs"}, bad})
		require.Error(t, err, "%+v", bad)
		files, err := contracttest.SessionFiles(context.Background(), te.S)
		require.NoError(t, err)
		require.Empty(t, files, "nothing is imported when a later mount is invalid")
	}
	res, err := Mount(context.Background(), env, []HostMount{{HostPath: "docs/a.md"}})
	require.NoError(t, err)
	require.Equal(t, []MountResult{{HostPath: filepath.Join(root, "docs", "a.md"), MountPath: VfsPath{Segments: []string{"docs", "a.md"}}, Files: 1, Bytes: 1}}, res)
}

func TestSessionMismatch(t *testing.T) {
	env, _ := newEnv(t, nil, nil)
	env.SessionID = "another"
	r, m := callJSON(t, env, "list_directory", `{}`)
	require.True(t, r.IsError)
	require.Equal(t, ErrorName, r.Status)
	require.Contains(t, m["message"], `bound to session "test-session", not "another"`)
}

func TestReadLargeFileWhole(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 10_000) // 160,000 bytes: past the tools' inline size
	env, _ := newEnv(t, nil, map[string]string{"big.txt": big})
	r, m := callJSON(t, env, "read_file", `{"path":"big.txt"}`)
	require.False(t, r.IsError, "%s", r.Body[:min(len(r.Body), 300)])
	require.Equal(t, big, m["content"])
	require.EqualValues(t, len(big), m["file"].(map[string]any)["size_bytes"])
}

func TestDeleteRootDeletesEverything(t *testing.T) {
	env, te := newEnv(t, nil, map[string]string{"a.txt": "a", "d/b.txt": "b"})
	r, _ := callJSON(t, env, "delete_file", `{"path":{"segments":[]}}`)
	require.False(t, r.IsError, "%s", r.Body)
	files, err := contracttest.SessionFiles(context.Background(), te.S)
	require.NoError(t, err)
	require.Empty(t, files)
	r, _ = callJSON(t, env, "delete_file", `{"path":{"segments":[]}}`)
	require.True(t, r.IsError)
	r, _ = callJSON(t, env, "delete_file", `{"path":{"segments":[]},"allow_missing":true}`)
	require.False(t, r.IsError)
}

func TestFailedCallsChangeNothing(t *testing.T) {
	env, te := newEnv(t, nil, map[string]string{"a.txt": "a", "d/b.txt": "b"})
	before := te.State()
	for _, c := range [][2]string{
		{"write_file", `{"path":"a.txt","content":"x"}`},
		{"write_file", `{"path":"d","content":"x","mode":"overwrite"}`},
		{"write_file", `{"path":"n.txt","content":"x","mode":"append"}`},
		{"write_file", `{"path":"/n.txt","content":"x"}`},
		{"delete_file", `{"path":"nope"}`},
		{"delete_file", `{"path":"../a.txt"}`},
		{"read_file", `{"path":"d"}`},
		{"list_directory", `{"path":"a.txt"}`},
	} {
		r, _ := callJSON(t, env, c[0], c[1])
		require.True(t, r.IsError, "%s %s: %s", c[0], c[1], r.Body)
		require.Equal(t, before, te.State(), "%s %s", c[0], c[1])
	}
}

func TestPolicyFields(t *testing.T) {
	p, err := Contract{}.DecodePolicy(json.RawMessage(`{"max_write_length":10,"max_path_depth":2,"max_segment_length":5}`))
	require.NoError(t, err)
	require.EqualValues(t, 10, p.Caps.MaxWriteChars)
	require.EqualValues(t, 2, p.Caps.MaxDepth)
	require.EqualValues(t, 5, p.Caps.MaxSegmentLen)
	require.True(t, p.ASCIIOnly)

	_, err = Contract{}.DecodePolicy(json.RawMessage(`{"max_write_length":10,"read_roots":["x"]}`))
	require.ErrorContains(t, err, `unknown field "read_roots"`)
	_, err = Contract{}.DecodePolicy(json.RawMessage(`{"max_path_depth":0}`))
	require.ErrorContains(t, err, "max_path_depth must be a positive integer")
	_, err = Contract{}.DecodePolicy(json.RawMessage(`{} {}`))
	require.Error(t, err)

	def, err := Contract{}.DecodePolicy(json.RawMessage(`{}`))
	require.NoError(t, err)
	require.Equal(t, Contract{}.DefaultPolicy(), def, "an empty policy is the document's")

	env, _ := newEnv(t, p, nil)
	r, m := callJSON(t, env, "write_file", `{"path":"a.txt","content":"01234567890"}`)
	require.True(t, r.IsError)
	require.Contains(t, m["message"], "maximum length of 10 characters")
	r, m = callJSON(t, env, "write_file", `{"path":"a/b/c","content":"x"}`)
	require.True(t, r.IsError)
	require.Contains(t, m["message"], "(2 segments)")
	r, _ = callJSON(t, env, "write_file", `{"path":"abcde","content":"0123456789"}`)
	require.False(t, r.IsError, "%s", r.Body)
}

func TestDocumentLimitsHoldUnderAnyPolicy(t *testing.T) {
	env, _ := newEnv(t, policy.Default(), nil) // vfsd's default: no write, depth or segment caps
	r, m := callJSON(t, env, "write_file", `{"path":"a.bin","encoding":"binary","content":"`+strings.Repeat("AAAA", 16001)+`"}`)
	require.True(t, r.IsError)
	require.Contains(t, m["message"], "48,000 bytes after decoding")
	r, _ = callJSON(t, env, "write_file", `{"path":"caf\u00e9","content":"x"}`)
	require.True(t, r.IsError, "paths are ASCII-only under any policy")
}

func TestState(t *testing.T) {
	env, _ := newEnv(t, nil, map[string]string{"a-c.txt": "x", "a/b.txt": "yy", "bin": "\x00\x01"})
	st, err := State(context.Background(), env, "/run/vfsd/s1")
	require.NoError(t, err)
	require.Equal(t, "/run/vfsd/s1", st.RootPath)
	var paths []string
	for _, f := range st.Files {
		paths = append(paths, f.Path.String())
	}
	require.Equal(t, []string{"a/b.txt", "a-c.txt", "bin"}, paths, "sorted by segments: (a, b.txt) < (a-c.txt,)")
	before, _ := json.Marshal(st)
	r, _ := callJSON(t, env, "write_file", `{"path":"a/b.txt","content":"changed","mode":"overwrite"}`)
	require.False(t, r.IsError)
	after, _ := json.Marshal(st)
	require.Equal(t, string(before), string(after), "a snapshot taken is immutable")
	st2, err := State(context.Background(), env, "")
	require.NoError(t, err)
	require.EqualValues(t, 2, st2.Files[0].Version)
}

func TestPromptHasTheSevenInstructions(t *testing.T) {
	p := Contract{}.Prompt()
	for i, want := range []string{
		"starts empty aside from any host mounts configured by the orchestrator; create files via `write_file`",
		"Host mounts are configuration-time only",
		"Use `list_directory` to explore before reading or writing specific files",
		"Fetch file contents with `read_file`",
		"Apply edits with `write_file`, keeping updates concise. Binary payloads are supported",
		"Clean up obsolete files or directories via `delete_file`",
		"Avoid mirroring large repositories or binary assets",
	} {
		require.Contains(t, p, string(rune('1'+i))+". ", "instruction %d is numbered", i+1)
		require.Contains(t, p, want, "instruction %d", i+1)
	}
	require.NotContains(t, p, "8. ")
	for _, tool := range Contract.Tools(Contract{}) {
		require.Contains(t, p, "`"+tool.Name+"`", "the prompt advertises %s", tool.Name)
	}
}

func TestToolsAreTheDocuments(t *testing.T) {
	var names []string
	for _, tool := range Contract.Tools(Contract{}) {
		names = append(names, tool.Name)
		var s map[string]any
		require.NoError(t, json.Unmarshal(tool.InputSchema, &s), tool.Name)
		require.Equal(t, "object", s["type"])
		require.NotEmpty(t, tool.Description)
	}
	require.Equal(t, []string{"list_directory", "read_file", "write_file", "delete_file"}, names)
	k, err := contract.Lookup(Name)
	require.NoError(t, err)
	require.Equal(t, Name, k.Name())
	require.True(t, Contract{}.PurgeSnapshotsOnClose())
}

func TestInvokedFields(t *testing.T) {
	env, _ := newEnv(t, nil, nil)
	params := json.RawMessage(`{"path":{"segments":["docs//a.md"]},"content":"x"}`)
	r := Contract{}.Call(context.Background(), env, "write_file", params)
	inv := InvokedFields("write_file", params, r)
	require.Equal(t, Invoked{Tool: "write_file", Path: "docs/a.md", Mode: "create", ResultSize: len(r.Body), Status: "ok"}, inv)
	require.Equal(t, ".", InvokedFields("list_directory", json.RawMessage(`{}`), r).Path)
}
