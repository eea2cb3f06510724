package posfilesystem_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/contract"
	"github.com/vfsd/vfsd/contract/posfilesystem"
	"github.com/vfsd/vfsd/tools/toolstest"
	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/policy"
)

type env struct {
	t  testing.TB
	te *toolstest.Env
	ce *contract.Env
}

func newEnv(t testing.TB, pol *policy.Policy, files map[string]string) *env {
	t.Helper()
	if pol == nil {
		pol = posfilesystem.DefaultPolicy()
	}
	te := toolstest.New(t, pol, files)
	return &env{t: t, te: te, ce: &contract.Env{SessionID: te.S.ID(), Session: te.S, Tools: te.Tools, Policy: te.Tools.Policy(), Blobs: te.Repo.Blobs()}}
}

func (e *env) symlink(target, at string) {
	e.t.Helper()
	_, err := e.te.S.Symlink(context.Background(), target, vfs.MustPath(at))
	require.NoError(e.t, err)
}

func (e *env) call(params string) (posfilesystem.Body, contract.Result) {
	e.t.Helper()
	c, err := contract.Lookup(posfilesystem.Name)
	require.NoError(e.t, err)
	r := c.Call(context.Background(), e.ce, posfilesystem.ToolName, json.RawMessage(params))
	var b posfilesystem.Body
	require.NoError(e.t, json.Unmarshal(r.Body, &b), "body %s", r.Body)
	require.Equal(e.t, !b.Success, r.IsError)
	return b, r
}

func (e *env) ok(params string) posfilesystem.Body {
	e.t.Helper()
	b, r := e.call(params)
	require.True(e.t, b.Success, "call %s failed: %s", params, r.Body)
	require.Equal(e.t, "ok", r.Status)
	return b
}

func (e *env) fail(params, errorType string) posfilesystem.Body {
	e.t.Helper()
	b, r := e.call(params)
	require.False(e.t, b.Success, "call %s succeeded: %s", params, r.Body)
	require.Equal(e.t, errorType, *b.ErrorType, "body %s", r.Body)
	require.Equal(e.t, errorType, r.Status)
	require.Equal(e.t, *b.Error, b.Message)
	return b
}

func TestRegisteredWithOneTool(t *testing.T) {
	c, err := contract.Lookup("pos_filesystem")
	require.NoError(t, err)
	require.Equal(t, "pos_filesystem", c.Name())
	ts := c.Tools()
	require.Len(t, ts, 1)
	require.Equal(t, "pos_filesystem", ts[0].Name)
	var schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	require.NoError(t, json.Unmarshal(ts[0].InputSchema, &schema))
	require.Equal(t, "object", schema.Type)
	require.ElementsMatch(t, []string{"action", "path", "content", "start_line", "line_count", "encoding", "max_size_mb", "create_dirs"}, keys(schema.Properties))
	require.Equal(t, []string{"action", "path"}, schema.Required)
	require.Contains(t, c.Prompt(), "Append = read + concatenate + write")
	_, isDecoder := c.(contract.PolicyDecoder)
	require.True(t, isDecoder)
	d, ok := c.(contract.PolicyDefaulter)
	require.True(t, ok)
	require.True(t, d.DefaultPolicy().DenyHidden)
}

func keys(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestUnknownToolAndBadArguments(t *testing.T) {
	e := newEnv(t, nil, nil)
	c, _ := contract.Lookup(posfilesystem.Name)
	r := c.Call(context.Background(), e.ce, "filesystem", json.RawMessage(`{"action":"read","path":"a"}`))
	require.True(t, r.IsError)
	require.Equal(t, "ValueError", r.Status)
	e.fail(`[1,2]`, "ValueError")
	e.fail(``, "ValueError") // no action
	b := e.fail(`{"action":"read","path":7}`, "ValueError")
	require.Equal(t, "read", b.Action)
}

func TestSymlinksResolveLikePathlib(t *testing.T) {
	e := newEnv(t, nil, map[string]string{"real.txt": "real\n", "sub/deep/x.txt": "deep x\n", "sub/x.txt": "sub x\n"})
	e.symlink("real.txt", "link.txt")
	e.symlink("../real.txt", "sub/up.txt")
	e.symlink("sub/deep", "dirlink")
	e.symlink("../outside", "escape")
	e.symlink("/etc/passwd", "abs")
	e.symlink("loop2", "loop1")
	e.symlink("loop1", "loop2")
	e.symlink("missing.txt", "dangling")

	require.Equal(t, "real\n", *e.ok(`{"action":"read","path":"link.txt"}`).Content)
	require.Equal(t, "real\n", *e.ok(`{"action":"read","path":"sub/up.txt"}`).Content)
	require.Equal(t, "deep x\n", *e.ok(`{"action":"read","path":"dirlink/x.txt"}`).Content)
	// ".." after a symlink climbs from its target, as resolve() does.
	require.Equal(t, "sub x\n", *e.ok(`{"action":"read","path":"dirlink/../x.txt"}`).Content)
	b := e.fail(`{"action":"read","path":"escape/x"}`, "ValueError")
	require.Contains(t, *b.Error, "Path traversal detected: escape/x resolves outside workspace")
	b = e.fail(`{"action":"read","path":"abs"}`, "ValueError")
	require.Contains(t, *b.Error, "Path traversal detected")
	e.fail(`{"action":"read","path":"loop1"}`, "OSError")
	// A dangling link does not exist; writing through it creates its target.
	require.False(t, *e.ok(`{"action":"exists","path":"dangling"}`).Exists)
	e.ok(`{"action":"write","path":"dangling","content":"now\n"}`)
	require.Equal(t, "now\n", e.te.Read("missing.txt"))
	// delete acts on the resolved path: the link's target.
	e.ok(`{"action":"delete","path":"link.txt"}`)
	_, ok, _ := e.te.S.Tree().Lookup("real.txt")
	require.False(t, ok)
}

func TestSymlinksDeniedByPolicy(t *testing.T) {
	pol := posfilesystem.DefaultPolicy()
	pol.Symlinks = policy.SymlinksDeny
	e := newEnv(t, pol, map[string]string{"real.txt": "real\n"})
	e.symlink("real.txt", "link.txt")
	e.fail(`{"action":"read","path":"link.txt"}`, "PermissionError")
	e.ok(`{"action":"read","path":"real.txt"}`)
}

func TestWritePreservesPermissions(t *testing.T) {
	e := newEnv(t, nil, map[string]string{"run.sh": "#!/bin/sh\n"})
	_, err := e.te.S.Chmod(context.Background(), "run.sh", 0o750)
	require.NoError(t, err)
	e.ok(`{"action":"write","path":"run.sh","content":"#!/bin/sh\necho hi\n"}`)
	n, err := e.te.S.Stat(context.Background(), "run.sh")
	require.NoError(t, err)
	require.Equal(t, "0750", modeString(n))
	require.Equal(t, "#!/bin/sh\necho hi\n", e.te.Read("run.sh"))
}

func modeString(n vfs.Node) string {
	return "0" + string(rune('0'+(n.Mode.Perm()>>6)&7)) + string(rune('0'+(n.Mode.Perm()>>3)&7)) + string(rune('0'+n.Mode.Perm()&7))
}

func TestListHidesWhatThePolicyHidesAndCaps(t *testing.T) {
	files := map[string]string{".env": "x", ".git/HEAD": "x", "a.txt": "x", "b.txt": "x", "c/": "", "z.txt": "x"}
	e := newEnv(t, nil, files)
	require.Equal(t, []string{"a.txt", "b.txt", "c/", "z.txt"}, *e.ok(`{"action":"list","path":""}`).Entries)
	e.fail(`{"action":"list","path":".git"}`, "PermissionError")
	e.fail(`{"action":"exists","path":".env"}`, "PermissionError")

	pol := posfilesystem.DefaultPolicy()
	pol.Caps.MaxEntries = 2
	e = newEnv(t, pol, files)
	b := e.ok(`{"action":"list","path":"."}`)
	require.Equal(t, []string{"a.txt", "b.txt"}, *b.Entries)
	require.True(t, *b.Truncated)
	require.Contains(t, b.Message, "truncated at 2")

	pol = posfilesystem.DefaultPolicy()
	pol.ReadRoots = []string{"c"}
	e = newEnv(t, pol, files)
	// The root stays listable so the roots can be found; only they show.
	require.Equal(t, []string{"c/"}, *e.ok(`{"action":"list","path":"."}`).Entries)
	e.fail(`{"action":"read","path":"a.txt"}`, "PermissionError")
}

func TestWriteCapsComeFromTheTools(t *testing.T) {
	pol := posfilesystem.DefaultPolicy()
	pol.Caps.MaxWriteBytes = 4
	e := newEnv(t, pol, nil)
	b := e.fail(`{"action":"write","path":"a.txt","content":"too long"}`, "OSError")
	require.NotContains(t, *b.Error, "append", "vfsd's advice names vfsd's parameters; pos's does not")
	e.ok(`{"action":"write","path":"a.txt","content":"ok"}`)
}

func TestIgnoredParametersAreNamed(t *testing.T) {
	e := newEnv(t, nil, map[string]string{"a.txt": "x"})
	b := e.ok(`{"action":"exists","path":"a.txt","zeta":1,"alpha":null}`)
	require.Contains(t, b.Message, "ignored parameters pos_filesystem does not take: alpha, zeta")
}

func TestDecodePolicy(t *testing.T) {
	for _, tc := range []struct {
		name, raw, err string
		check          func(t *testing.T, p *policy.Policy)
	}{
		{name: "empty is the default", raw: ``, check: func(t *testing.T, p *policy.Policy) {
			require.True(t, p.DenyHidden)
			require.Equal(t, posfilesystem.PolicyName, p.Name)
		}},
		{name: "the contract's name", raw: `"pos_filesystem"`, check: func(t *testing.T, p *policy.Policy) { require.Equal(t, posfilesystem.DefaultPolicy(), p) }},
		{name: "a preset", raw: `"x07"`, check: func(t *testing.T, p *policy.Policy) { require.Equal(t, "x07", p.Name) }},
		{name: "an object denies hidden files", raw: `{"read_roots":["src"]}`, check: func(t *testing.T, p *policy.Policy) { require.True(t, p.DenyHidden) }},
		{name: "a base is taken as it is", raw: `{"base":"aos"}`, check: func(t *testing.T, p *policy.Policy) {
			require.False(t, p.DenyHidden)
			require.Equal(t, policy.SymlinksAllow, p.Symlinks)
		}},
		{name: "hidden allowed", raw: `{"hidden_file_access":"allow"}`, check: func(t *testing.T, p *policy.Policy) { require.False(t, p.DenyHidden) }},
		{name: "hidden denied", raw: `{"hidden_file_access":"deny"}`, check: func(t *testing.T, p *policy.Policy) { require.True(t, p.DenyHidden) }},
		{name: "hidden bad value", raw: `{"hidden_file_access":"sometimes"}`, err: `hidden_file_access must be "deny" or "allow"`},
		{name: "read only", raw: `{"read_only":true}`, check: func(t *testing.T, p *policy.Policy) {
			require.Equal(t, []string{"read_file", "list_directory", "exists"}, p.AllowedOps)
		}},
		{name: "read only within allowed_ops", raw: `{"read_only":true,"allowed_ops":["read_file","write_file"]}`, check: func(t *testing.T, p *policy.Policy) {
			require.Equal(t, []string{"read_file"}, p.AllowedOps)
		}},
		{name: "max size", raw: `{"max_size_mb":3}`, check: func(t *testing.T, p *policy.Policy) { require.Equal(t, int64(3<<20), p.Caps.MaxReadBytes) }},
		{name: "max size zero", raw: `{"max_size_mb":0}`, err: "max_size_mb must be at least 1"},
		{name: "max size type", raw: `{"max_size_mb":"ten"}`, err: `field "max_size_mb"`},
		{name: "vfsd fields", raw: `{"read_roots":["src"],"caps":{"max_entries":7}}`, check: func(t *testing.T, p *policy.Policy) {
			require.Equal(t, []string{"src"}, p.ReadRoots)
			require.Equal(t, int64(7), p.Caps.MaxEntries)
			require.NotZero(t, p.Caps.MaxInlineBytes, "caps merge into the default's")
		}},
		{name: "unknown field", raw: `{"project_root":"/srv"}`, err: `unknown field "project_root"`},
		{name: "unknown field names pos's", raw: `{"project_root":"/srv"}`, err: "pos_filesystem also takes hidden_file_access, read_only and max_size_mb"},
		{name: "unknown cap", raw: `{"caps":{"max_everything":1}}`, err: `unknown field "caps.max_everything"`},
		{name: "both hidden fields", raw: `{"hidden_file_access":"allow","deny_hidden":true}`, err: "not both"},
		{name: "bad symlinks", raw: `{"symlinks":"sometimes"}`, err: "unknown symlink policy"},
		{name: "not an object", raw: `[1]`, err: "not a JSON object"},
		{name: "unknown preset", raw: `"strict"`, err: "unknown policy preset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := posfilesystem.DecodePolicy(json.RawMessage(tc.raw))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			tc.check(t, p)
		})
	}
}
