package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/contract"
	"github.com/vfsd/vfsd/mcpserver"
	"github.com/vfsd/vfsd/vfs"
)

// echoContract is a contract for these tests: "echo" returns its params,
// "touch" writes a file, "mount" imports a host folder through Env.Host.
type echoContract struct{}

func init() { contract.Register(echoContract{}) }

func (echoContract) Name() string   { return "test_echo" }
func (echoContract) Prompt() string { return "## Echo\n" }
func (echoContract) Tools() []contract.Tool {
	obj := json.RawMessage(`{"type":"object"}`)
	return []contract.Tool{
		{Name: "echo", Title: "Echo", Description: "returns its params", InputSchema: obj,
			Annotations: contract.Annotations{ReadOnly: true, Idempotent: true}},
		{Name: "touch", Title: "Touch", Description: "writes path", InputSchema: obj,
			Annotations: contract.Annotations{Destructive: true}},
		{Name: "mount", Title: "Mount", Description: "imports host_path at mount_path", InputSchema: obj},
	}
}

func (echoContract) Call(ctx context.Context, env *contract.Env, tool string, params json.RawMessage) contract.Result {
	fail := func(code, msg string) contract.Result {
		b, _ := json.Marshal(map[string]string{"error": code, "message": msg})
		return contract.Result{Body: b, Text: msg, Status: code, IsError: true}
	}
	var p struct {
		Path      string `json:"path"`
		HostPath  string `json:"host_path"`
		MountPath string `json:"mount_path"`
	}
	_ = json.Unmarshal(params, &p)
	switch tool {
	case "echo":
		return contract.Result{Body: params, Text: string(params), Status: "OK"}
	case "touch":
		if _, err := env.Session.WriteFile(ctx, vfs.MustPath(p.Path), strings.NewReader("touched"), vfs.WriteOptions{CreateParents: true}); err != nil {
			return fail("E_WRITE", err.Error())
		}
		return contract.Result{Body: json.RawMessage(`{"ok":true}`), Text: "touched", Status: "OK"}
	case "mount":
		if env.Host == nil {
			return fail("E_NOHOST", "no host access")
		}
		r, err := env.Host.Import(ctx, contract.ImportRequest{HostPath: p.HostPath, MountPath: p.MountPath})
		if err != nil {
			return fail("E_MOUNT", err.Error())
		}
		b, _ := json.Marshal(map[string]int64{"files": r.Files, "bytes": r.Bytes})
		return contract.Result{Body: b, Text: "mounted", Status: "OK"}
	}
	return fail("E_UNKNOWN", "no tool "+tool)
}

// TestSessionContract: a session selects a contract at creation; it is
// shown, kept across restarts, inherited by forks, and its tools are what
// the tool routes and MCP serve.
func TestSessionContract(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "lib", "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "lib", "sub", "a.txt"), []byte("from the host"), 0o644))
	cfg := newConfig(t)
	cfg.AllowRoots = []string{root}
	s := start(t, cfg)
	ctx := context.Background()

	plain, err := s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "plain"})
	require.NoError(t, err)
	require.Equal(t, "vfsd", plain.Session.Contract, "the default contract")
	_, err = s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "bad", Contract: "nope"})
	requireCode(t, err, api.CodeInvalidInput)
	require.Contains(t, err.Error(), "test_echo", "the error names the choices")
	require.Contains(t, err.Error(), "vfsd")

	e, err := s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "echo", Contract: "test_echo", Profile: "openai"})
	require.NoError(t, err)
	require.Equal(t, "test_echo", e.Session.Contract)

	// The tool route dispatches through the contract.
	r, err := s.c.CallToolText(ctx, "echo", "echo", json.RawMessage(`{"x":1}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"x":1}`, string(r.JSON))
	require.Equal(t, "OK", r.Status)
	require.Equal(t, "test_echo", r.Contract)
	require.True(t, r.OK(), "a contract's own success status is a success")
	r, err = s.c.CallTool(ctx, "echo", "nothing", nil)
	require.NoError(t, err)
	require.Equal(t, "E_UNKNOWN", r.Status)
	require.True(t, r.IsError)
	require.False(t, r.OK())
	// A call stating another contract is refused.
	_, err = s.c.CallToolAs(ctx, "echo", "vfsd", "read_file", json.RawMessage(`{"path":"x"}`))
	requireCode(t, err, api.CodeInvalidInput)
	// A tool call never reaches the host, allowed roots or not: what is
	// imported from them is the admin's to choose (contract options at
	// creation), not the caller's.
	r, err = s.c.CallTool(ctx, "echo", "mount", json.RawMessage(fmt.Sprintf(`{"host_path":%q,"mount_path":"/vendor"}`, filepath.Join(root, "lib"))))
	require.NoError(t, err)
	require.Equal(t, "E_NOHOST", r.Status, "a tool call reached the host: %s", r.JSON)
	call(t, s.c, "echo", "touch", `{"path":"/vendor/sub/a.txt"}`, "OK")
	// The written file is in the session (seen through a fork, whose
	// contract is inherited, and vfsd's tools on a vfsd fork).
	fork, err := s.c.ForkSession(ctx, "echo", api.CreateSessionRequest{ID: "echo-fork"})
	require.NoError(t, err)
	require.Equal(t, "test_echo", fork.Session.Contract)
	vf, err := s.c.ForkSession(ctx, "echo", api.CreateSessionRequest{ID: "vfsd-fork", Contract: "vfsd"})
	require.NoError(t, err)
	require.Equal(t, "vfsd", vf.Session.Contract)
	got := call(t, s.c, "vfsd-fork", "read_file", `{"path":"vendor/sub/a.txt"}`, "ok")
	require.Equal(t, "touched", got["inline_text"])

	// The tool list is the contract's, in the profile's format.
	list, err := s.c.Tools(ctx, "echo", "")
	require.NoError(t, err)
	require.Equal(t, "test_echo", list.Contract)
	require.Equal(t, "## Echo\n", list.Prompt)
	var openai []map[string]any
	require.NoError(t, json.Unmarshal(list.Tools, &openai))
	require.Len(t, openai, 3)
	require.Equal(t, "function", openai[0]["type"])
	require.Equal(t, "echo", openai[0]["function"].(map[string]any)["name"])
	list, err = s.c.Tools(ctx, "echo", "gemini")
	require.NoError(t, err)
	require.Contains(t, string(list.Tools), "functionDeclarations")

	// MCP serves the contract's tools with titles and hints, and its
	// results with their status.
	cs := mcpSocket(t, cfg.Socket, "echo")
	tl, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	require.Len(t, tl.Tools, 3)
	require.Equal(t, "echo", tl.Tools[0].Name)
	require.Equal(t, "Echo", tl.Tools[0].Title)
	require.True(t, tl.Tools[0].Annotations.ReadOnlyHint)
	require.True(t, tl.Tools[0].Annotations.IdempotentHint)
	require.True(t, *tl.Tools[1].Annotations.DestructiveHint)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "touch", Arguments: map[string]any{"path": "t.txt"}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.Equal(t, "OK", res.Meta[mcpserver.StatusMeta])
	require.Equal(t, "touched", res.Content[0].(*mcp.TextContent).Text)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "touch", Arguments: map[string]any{"path": "t.txt/under"}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Equal(t, "E_WRITE", res.Meta[mcpserver.StatusMeta])

	// A restart keeps every session's contract.
	s.stop()
	s = start(t, cfg)
	for id, want := range map[string]string{"plain": "vfsd", "echo": "test_echo", "echo-fork": "test_echo", "vfsd-fork": "vfsd"} {
		info, err := s.c.Session(ctx, id)
		require.NoError(t, err)
		require.Equal(t, want, info.Contract, id)
	}
	r, err = s.c.CallTool(ctx, "echo", "echo", json.RawMessage(`{"after":"restart"}`))
	require.NoError(t, err)
	require.Equal(t, "OK", r.Status)
}

// mcpSocket connects an MCP client to session id's endpoint over the
// daemon's socket (the admin).
func mcpSocket(t *testing.T, socket, id string) *mcp.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}}
	c := mcp.NewClient(&mcp.Implementation{Name: "daemon-test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: "http://vfsd/v1/sessions/" + id + "/mcp",
		HTTPClient: hc, MaxRetries: -1}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestMCPToolAnnotations: vfsd's own tools carry titles and the right
// hints over MCP.
func TestMCPToolAnnotations(t *testing.T) {
	cfg := newConfig(t)
	s := start(t, cfg)
	_, err := s.c.CreateSession(context.Background(), api.CreateSessionRequest{ID: "a"})
	require.NoError(t, err)
	cs := mcpSocket(t, cfg.Socket, "a")
	list, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	byName := map[string]*mcp.Tool{}
	for _, tl := range list.Tools {
		byName[tl.Name] = tl
		require.NotEmpty(t, tl.Title, tl.Name)
		require.NotNil(t, tl.Annotations.DestructiveHint, tl.Name)
		require.False(t, *tl.Annotations.OpenWorldHint, tl.Name)
		if tl.Annotations.ReadOnlyHint {
			require.False(t, *tl.Annotations.DestructiveHint, tl.Name)
		}
	}
	for _, name := range []string{"read_file", "list_directory", "glob", "grep", "stat", "exists"} {
		require.True(t, byName[name].Annotations.ReadOnlyHint, name)
		require.True(t, byName[name].Annotations.IdempotentHint, name)
	}
	for _, name := range []string{"write_file", "delete_file", "edit_file", "apply_patch", "rename"} {
		require.False(t, byName[name].Annotations.ReadOnlyHint, name)
		require.True(t, *byName[name].Annotations.DestructiveHint, name)
	}
	require.True(t, byName["mkdir"].Annotations.IdempotentHint)
	require.False(t, *byName["mkdir"].Annotations.DestructiveHint)
	require.False(t, byName["write_file"].Annotations.IdempotentHint, "append is not idempotent")
	require.Equal(t, "Read file", byName["read_file"].Title)
}

// TestCallLog: every call, through the API or MCP, is appended to the
// session's call log, numbered, listed in pages, kept across a restart
// with its numbering, large params kept as blobs; closing the session
// removes it.
func TestCallLog(t *testing.T) {
	cfg := newConfig(t)
	s := start(t, cfg)
	ctx := context.Background()
	_, err := s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "log"})
	require.NoError(t, err)
	call(t, s.c, "log", "write_file", `{"path":"a.txt","inline_text":"one\n"}`, "ok")
	call(t, s.c, "log", "read_file", `{"path":"missing"}`, "not_found")
	big := strings.Repeat("x", api.CallInlineBytes+1)
	call(t, s.c, "log", "write_file", `{"path":"big.txt","inline_text":"`+big+`"}`, "ok")
	cs := mcpSocket(t, cfg.Socket, "log")
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "a.txt"}})
	require.NoError(t, err)

	list, err := s.c.Calls(ctx, "log", 0, 0)
	require.NoError(t, err)
	require.Len(t, list.Calls, 4)
	require.Zero(t, list.Next)
	require.Equal(t, uint64(1), list.Oldest)
	c := list.Calls
	for i, want := range []struct{ tool, status, transport string }{
		{"write_file", "ok", "http"}, {"read_file", "not_found", "http"}, {"write_file", "ok", "http"}, {"read_file", "ok", "mcp"},
	} {
		require.Equal(t, uint64(i+1), c[i].N)
		require.Equal(t, want.tool, c[i].Tool)
		require.Equal(t, want.status, c[i].Status)
		require.Equal(t, want.transport, c[i].Transport)
		require.Equal(t, "vfsd", c[i].Contract)
		require.False(t, c[i].Time.IsZero())
	}
	require.JSONEq(t, `{"path":"a.txt","inline_text":"one\n"}`, string(c[0].Params))
	require.Contains(t, string(c[0].Result), `"status":"ok"`)
	require.Greater(t, c[0].Seq, c[0].SeqBefore, "a write moves the journal")
	require.Equal(t, c[1].SeqBefore, c[1].Seq, "a failed read does not")
	require.True(t, c[1].IsError)
	require.Contains(t, c[1].Summary, "missing")
	require.Empty(t, c[2].Params, "large params go to a blob")
	require.NotEmpty(t, c[2].ParamsRef)
	resp, _, err := s.c.GetBlob(ctx, c[2].ParamsRef)
	require.NoError(t, err)
	b, err := io.ReadAll(resp)
	resp.Close()
	require.NoError(t, err)
	require.Contains(t, string(b), big)

	// Pages.
	page, err := s.c.Calls(ctx, "log", 0, 3)
	require.NoError(t, err)
	require.Len(t, page.Calls, 3)
	require.Equal(t, uint64(3), page.Next)
	page, err = s.c.Calls(ctx, "log", page.Next, 3)
	require.NoError(t, err)
	require.Len(t, page.Calls, 1)
	require.Equal(t, uint64(4), page.Calls[0].N)
	require.Zero(t, page.Next)
	_, err = s.c.Calls(ctx, "nope", 0, 0)
	requireCode(t, err, api.CodeNotFound)
	info, err := s.c.Session(ctx, "log")
	require.NoError(t, err)
	require.Equal(t, uint64(4), info.Calls)

	// A restart keeps the log and its numbering; GC keeps its blobs.
	s.stop()
	s = start(t, cfg)
	call(t, s.c, "log", "stat", `{"path":"a.txt"}`, "ok")
	list, err = s.c.Calls(ctx, "log", 0, 0)
	require.NoError(t, err)
	require.Len(t, list.Calls, 5)
	require.Equal(t, uint64(5), list.Calls[4].N)
	_, err = s.c.GC(ctx)
	require.NoError(t, err)
	resp, _, err = s.c.GetBlob(ctx, list.Calls[2].ParamsRef)
	require.NoError(t, err, "a call log's blob outlives a GC")
	resp.Close()

	// Closing the session removes its log; a new session of that ID starts
	// a fresh one.
	require.NoError(t, s.c.CloseSession(ctx, "log"))
	require.NoFileExists(t, filepath.Join(cfg.DataDir, "calls", "log.jsonl"))
	_, err = s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "log"})
	require.NoError(t, err)
	list, err = s.c.Calls(ctx, "log", 0, 0)
	require.NoError(t, err)
	require.Empty(t, list.Calls)
}
