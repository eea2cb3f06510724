package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/mcpserver"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/tools/toolstest"
	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/policy"
)

// The test binary re-executed with childProfileEnv set is an MCP server on
// stdio, serving a session of seedFiles in the directory childDirEnv names.
const (
	childProfileEnv = "VFSD_MCPSERVER_TEST_STDIO_PROFILE"
	childDirEnv     = "VFSD_MCPSERVER_TEST_STDIO_DIR"
)

// seedFiles are every test session's files.
var seedFiles = map[string]string{
	"README.md":      "# demo\n",
	"src/main.go":    "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n",
	"docs/guide.txt": "alpha\nbeta\ngamma\n",
}

func TestMain(m *testing.M) {
	if profile, ok := os.LookupEnv(childProfileEnv); ok {
		if err := serveStdioChild(profile, os.Getenv(childDirEnv)); err != nil {
			fmt.Fprintln(os.Stderr, "mcpserver stdio child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// serveStdioChild serves a session of seedFiles on stdio until the client
// closes stdin: what `vfsd mcp --session ID` does, on a session of its own.
func serveStdioChild(profile, dir string) error {
	if dir == "" {
		return errors.New(childDirEnv + " is not set")
	}
	ctx := context.Background()
	store, err := snapshot.OpenLocal(filepath.Join(dir, "store"))
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	defer store.Close()
	repo, err := snapshot.OpenRepo(ctx, store, filepath.Join(dir, "sessions"), snapshot.RepoOptions{})
	if err != nil {
		return fmt.Errorf("open repo: %w", err)
	}
	defer repo.Close()
	s, err := repo.NewSession(ctx, snapshot.SessionOptions{ID: "stdio-session"})
	if err != nil {
		return fmt.Errorf("new session: %w", err)
	}
	for p, content := range seedFiles {
		if _, err := s.WriteFile(ctx, vfs.MustPath(p), strings.NewReader(content), vfs.WriteOptions{CreateParents: true}); err != nil {
			return fmt.Errorf("seed %s: %w", p, err)
		}
	}
	ts, err := tools.New(s, tools.Options{Blobs: repo.Blobs()})
	if err != nil {
		return fmt.Errorf("tools: %w", err)
	}
	srv, err := mcpserver.NewServer(mcpserver.ToolsetBackend(ts, s.ID()), mcpserver.Options{Profile: profile, Version: "test"})
	if err != nil {
		return err
	}
	return mcpserver.ServeStdio(ctx, srv)
}

func newClient() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "mcpserver-test", Version: "v0"}, nil)
}

// sessionServer is the MCP server of a fresh session of seedFiles.
func sessionServer(t *testing.T, profile string) (*toolstest.Env, *mcp.Server) {
	t.Helper()
	env := toolstest.New(t, nil, seedFiles)
	srv, err := mcpserver.NewServer(mcpserver.ToolsetBackend(env.Tools, env.S.ID()), mcpserver.Options{Profile: profile, Version: "test"})
	require.NoError(t, err)
	return env, srv
}

// connectInMemory connects a client to srv over in-memory transports.
func connectInMemory(t *testing.T, srv *mcp.Server) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	require.NoError(t, err)
	cs, err := newClient().Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, cs.Close())
		_ = ss.Wait()
	})
	return cs
}

// connectHTTP serves srv with HTTPHandler on an httptest server and
// connects a client with the streamable HTTP transport.
func connectHTTP(t *testing.T, srv *mcp.Server) *mcp.ClientSession {
	t.Helper()
	hs := httptest.NewServer(mcpserver.HTTPHandler(func(*http.Request) *mcp.Server { return srv }))
	t.Cleanup(hs.Close)
	cs, err := newClient().Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: hs.URL, MaxRetries: -1}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cs.Close()) })
	return cs
}

// connectStdio starts the test binary as a stdio server (serveStdioChild)
// and connects a client to it; closing the client must end the child
// cleanly.
func connectStdio(t *testing.T, profile string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childProfileEnv+"="+profile, childDirEnv+"="+t.TempDir())
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	cs, err := newClient().Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, cs.Close(), "stdio server: %s", stderr.String())
		require.True(t, cmd.ProcessState.Success(), "stdio server exit: %v; stderr: %s", cmd.ProcessState, stderr.String())
	})
	return cs
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// client is a connected session with the tool list it was given.
type client struct {
	t     *testing.T
	cs    *mcp.ClientSession
	tools map[string]*mcp.Tool
	names []string
}

func newTestClient(t *testing.T, cs *mcp.ClientSession) *client {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	c := &client{t: t, cs: cs, tools: map[string]*mcp.Tool{}}
	for _, tool := range res.Tools {
		c.tools[tool.Name] = tool
		c.names = append(c.names, tool.Name)
	}
	return c
}

// outcome is one call's result, decoded.
type outcome struct {
	res     *mcp.CallToolResult
	text    string
	receipt map[string]any
}

// call calls a tool and checks what every result must be: one text block,
// a receipt whose status decides isError, valid against the tool's
// outputSchema. It reports problems as errors so that it can run in any
// goroutine.
func (c *client) call(name string, args any) (*outcome, error) {
	res, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("call %s: %w", name, err)
	}
	if len(res.Content) != 1 {
		return nil, fmt.Errorf("%s: %d content blocks, want 1", name, len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		return nil, fmt.Errorf("%s: content is %T, want text", name, res.Content[0])
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return nil, fmt.Errorf("%s: structured content: %w", name, err)
	}
	var receipt map[string]any
	if err := json.Unmarshal(raw, &receipt); err != nil {
		return nil, fmt.Errorf("%s: structured content %s is not an object: %w", name, raw, err)
	}
	if got, want := res.IsError, receipt["status"] != "ok"; got != want {
		return nil, fmt.Errorf("%s: isError %v with receipt status %v", name, got, receipt["status"])
	}
	if err := validate(c.tools[name].OutputSchema, raw); err != nil {
		return nil, fmt.Errorf("%s: receipt %s against outputSchema: %w", name, raw, err)
	}
	return &outcome{res: res, text: tc.Text, receipt: receipt}, nil
}

// mustCall is call that fails the test on a problem.
func (c *client) mustCall(name string, args any) *outcome {
	c.t.Helper()
	o, err := c.call(name, args)
	require.NoError(c.t, err)
	return o
}

// validate checks instance against a schema as a client sees it (decoded
// JSON), the way a validating client does.
func validate(schema any, instance []byte) error {
	if schema == nil {
		return nil
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return err
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(instance, &v); err != nil {
		return err
	}
	return rs.Validate(v)
}

func profileNames(t *testing.T, profile string) []string {
	t.Helper()
	p, err := tools.LookupProfile(profile)
	require.NoError(t, err)
	var names []string
	for _, d := range p.Definitions() {
		names = append(names, d.Name)
	}
	return names
}

// exercise runs the scenario every transport must pass, on a session of
// seedFiles served with the anthropic profile.
func exercise(t *testing.T, cs *mcp.ClientSession) {
	c := newTestClient(t, cs)
	require.Equal(t, profileNames(t, "anthropic"), c.names, "tools in the profile's order")
	for _, name := range c.names {
		tool := c.tools[name]
		require.NotEmpty(t, tool.Description, name)
		in, ok := tool.InputSchema.(map[string]any)
		require.True(t, ok, "%s inputSchema is %T", name, tool.InputSchema)
		require.Equal(t, "object", in["type"], name)
		require.NotEmpty(t, in["properties"], name)
		out, ok := tool.OutputSchema.(map[string]any)
		require.True(t, ok, "%s outputSchema is %T", name, tool.OutputSchema)
		require.Equal(t, "object", out["type"], name)
		require.ElementsMatch(t, []any{"status", "summary_text"}, out["required"], name)
	}
	require.Contains(t, c.tools["read_file"].InputSchema.(map[string]any)["properties"], "path")
	require.Contains(t, c.tools["edit_file"].OutputSchema.(map[string]any)["properties"], "diff")
	require.True(t, c.tools["read_file"].Annotations.ReadOnlyHint)
	require.False(t, c.tools["write_file"].Annotations.ReadOnlyHint)

	t.Run("read_file", func(t *testing.T) {
		o := c.mustCall("read_file", map[string]any{"path": "src/main.go"})
		require.False(t, o.res.IsError)
		require.Equal(t, seedFiles["src/main.go"], o.text)
		require.Equal(t, "ok", o.receipt["status"])
		require.Equal(t, seedFiles["src/main.go"], o.receipt["inline_text"])
		require.EqualValues(t, 5, o.receipt["total_lines"])
	})
	t.Run("write_file", func(t *testing.T) {
		o := c.mustCall("write_file", map[string]any{"path": "notes/todo.txt", "content": "one\ntwo\n"})
		require.False(t, o.res.IsError, o.text)
		require.Equal(t, true, o.receipt["created"])
		require.EqualValues(t, 8, o.receipt["written_bytes"])
		require.Equal(t, o.receipt["summary_text"], o.text)
		require.Equal(t, "one\ntwo\n", c.mustCall("read_file", map[string]any{"path": "notes/todo.txt"}).text)
	})
	t.Run("edit_file", func(t *testing.T) {
		o := c.mustCall("edit_file", map[string]any{"path": "src/main.go", "old_string": `println("hi")`, "new_string": `println("hello")`})
		require.False(t, o.res.IsError, o.text)
		require.EqualValues(t, 1, o.receipt["replacements"])
		require.Contains(t, o.text, `+	println("hello")`, "the text is the summary and the diff")
		require.Contains(t, o.receipt["diff"], `-	println("hi")`)
		require.Contains(t, c.mustCall("read_file", map[string]any{"path": "src/main.go"}).text, `println("hello")`)
	})
	t.Run("apply_patch", func(t *testing.T) {
		patch := "*** Begin Patch\n*** Update File: docs/guide.txt\n@@\n alpha\n-beta\n+BETA\n gamma\n*** Add File: docs/new.txt\n+fresh\n*** End Patch\n"
		o := c.mustCall("apply_patch", map[string]any{"patch": patch})
		require.False(t, o.res.IsError, o.text)
		require.EqualValues(t, 2, o.receipt["files_changed"])
		require.ElementsMatch(t, []any{"docs/guide.txt", "docs/new.txt"}, o.receipt["changed_paths"])
		require.Contains(t, o.text, "+BETA")
		require.Equal(t, "alpha\nBETA\ngamma\n", c.mustCall("read_file", map[string]any{"path": "docs/guide.txt"}).text)
		require.Equal(t, "fresh\n", c.mustCall("read_file", map[string]any{"path": "docs/new.txt"}).text)
	})
	t.Run("failures", func(t *testing.T) {
		o := c.mustCall("edit_file", map[string]any{"path": "src/main.go", "old_string": "no such text", "new_string": "x"})
		require.True(t, o.res.IsError)
		require.Equal(t, "not_found", o.receipt["status"])
		require.Equal(t, "not_found", o.receipt["error_code"])
		require.NotEmpty(t, o.receipt["summary_text"])
		require.Equal(t, o.receipt["summary_text"], o.text)

		o = c.mustCall("read_file", map[string]any{"path": "missing.txt"})
		require.True(t, o.res.IsError)
		require.Equal(t, "not_found", o.receipt["status"])

		o = c.mustCall("write_file", map[string]any{"path": "README.md", "content": "x", "mode": "create_new"})
		require.True(t, o.res.IsError)
		require.Equal(t, "already_exists", o.receipt["status"])

		o = c.mustCall("apply_patch", map[string]any{"patch": "*** Begin Patch\n*** Update File: README.md\n@@\n-not there\n+x\n*** End Patch\n"})
		require.True(t, o.res.IsError)
		require.NotEqual(t, "ok", o.receipt["status"])

		o = c.mustCall("read_file", map[string]any{"path": "README.md", "bogus": 1})
		require.True(t, o.res.IsError, "the tools check their parameters")
		require.Equal(t, "invalid_input", o.receipt["status"])

		require.Equal(t, "# demo\n", c.mustCall("read_file", map[string]any{"path": "README.md"}).text, "failed calls change nothing")

		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}})
		require.Error(t, err, "an unknown tool is a protocol error")
	})
	t.Run("concurrent", func(t *testing.T) {
		const n = 16
		var wg sync.WaitGroup
		errs := make(chan error, 2*n)
		for i := range n {
			wg.Go(func() {
				path := fmt.Sprintf("concurrent/f%02d.txt", i)
				want := fmt.Sprintf("file %d\n", i)
				if o, err := c.call("write_file", map[string]any{"path": path, "content": want}); err != nil {
					errs <- err
					return
				} else if o.res.IsError {
					errs <- fmt.Errorf("write %s: %s", path, o.text)
					return
				}
				if o, err := c.call("read_file", map[string]any{"path": path}); err != nil {
					errs <- err
				} else if o.text != want {
					errs <- fmt.Errorf("read %s: %q, want %q", path, o.text, want)
				}
			})
			wg.Go(func() {
				if o, err := c.call("read_file", map[string]any{"path": "README.md"}); err != nil {
					errs <- err
				} else if o.text != "# demo\n" {
					errs <- fmt.Errorf("read README.md: %q", o.text)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		o := c.mustCall("list_directory", map[string]any{"path": "concurrent"})
		require.False(t, o.res.IsError, o.text)
		require.Len(t, o.receipt["entries"], n)
	})
}

func TestInMemory(t *testing.T) {
	_, srv := sessionServer(t, "")
	exercise(t, connectInMemory(t, srv))
}

func TestStreamableHTTP(t *testing.T) {
	_, srv := sessionServer(t, "anthropic")
	exercise(t, connectHTTP(t, srv))
}

func TestStdio(t *testing.T) {
	exercise(t, connectStdio(t, "anthropic"))
}

func TestStdioConsolidated(t *testing.T) {
	c := newTestClient(t, connectStdio(t, "consolidated"))
	require.Equal(t, []string{tools.ConsolidatedTool}, c.names)
	o := c.mustCall(tools.ConsolidatedTool, map[string]any{"action": "read_file", "path": "README.md"})
	require.Equal(t, "# demo\n", o.text)
}

func TestProfiles(t *testing.T) {
	for _, profile := range tools.Profiles() {
		t.Run(profile, func(t *testing.T) {
			env, srv := sessionServer(t, profile)
			c := newTestClient(t, connectInMemory(t, srv))
			require.Equal(t, profileNames(t, profile), c.names)
			for _, name := range c.names {
				require.Equal(t, "object", c.tools[name].InputSchema.(map[string]any)["type"], name)
				require.Equal(t, "object", c.tools[name].OutputSchema.(map[string]any)["type"], name)
			}
			if profile == "consolidated" {
				in := c.tools[tools.ConsolidatedTool].InputSchema.(map[string]any)
				require.Contains(t, in["required"], "action")

				o := c.mustCall(tools.ConsolidatedTool, map[string]any{"action": "write_file", "path": "a.txt", "content": "A\n"})
				require.False(t, o.res.IsError, o.text)
				require.Equal(t, "A\n", env.Read("a.txt"))
				o = c.mustCall(tools.ConsolidatedTool, map[string]any{"action": "edit_file", "path": "a.txt", "old_string": "A", "new_string": "B"})
				require.False(t, o.res.IsError, o.text)
				require.Equal(t, "B\n", env.Read("a.txt"))
				o = c.mustCall(tools.ConsolidatedTool, map[string]any{"action": "read_file", "path": "nope"})
				require.True(t, o.res.IsError)
				require.Equal(t, "not_found", o.receipt["status"])
				o = c.mustCall(tools.ConsolidatedTool, map[string]any{"path": "a.txt"})
				require.True(t, o.res.IsError)
				require.Equal(t, "invalid_input", o.receipt["status"])
				return
			}
			o := c.mustCall("read_file", map[string]any{"path": "README.md"})
			require.Equal(t, "# demo\n", o.text)
		})
	}
}

func TestServerInfo(t *testing.T) {
	_, srv := sessionServer(t, "openai")
	cs := connectInMemory(t, srv)
	init := cs.InitializeResult()
	require.Equal(t, "vfsd", init.ServerInfo.Name)
	require.Equal(t, "test", init.ServerInfo.Version)
	r, err := tools.Render("openai")
	require.NoError(t, err)
	require.Equal(t, r.Prompt, init.Instructions, "the profile's prompt is the instructions")
	require.NotNil(t, init.Capabilities.Tools)
	require.Nil(t, init.Capabilities.Logging)

	env := toolstest.New(t, nil, seedFiles)
	srv, err = mcpserver.NewServer(mcpserver.ToolsetBackend(env.Tools, env.S.ID()),
		mcpserver.Options{Name: "custom", Version: "v9", Instructions: "Be brief.", NoOutputSchema: true})
	require.NoError(t, err)
	cs = connectInMemory(t, srv)
	require.Equal(t, "custom", cs.InitializeResult().ServerInfo.Name)
	require.Equal(t, "Be brief.", cs.InitializeResult().Instructions)
	c := newTestClient(t, cs)
	require.Equal(t, profileNames(t, mcpserver.DefaultProfile), c.names)
	require.Nil(t, c.tools["read_file"].OutputSchema)
	o := c.mustCall("read_file", map[string]any{"path": "README.md"})
	require.Equal(t, "ok", o.receipt["status"], "structured content without an output schema")
}

// TestPolicyFiltersTools: a policy's disallowed tools are not listed.
func TestPolicyFiltersTools(t *testing.T) {
	pol := policy.Default()
	pol.AllowedOps = []string{"read_file", "list_directory"}
	env := toolstest.New(t, pol, seedFiles)
	srv := mcpserver.New(mcpserver.ToolsetBackend(env.Tools, env.S.ID()), mcpserver.Options{Profile: "minimal"})
	c := newTestClient(t, connectInMemory(t, srv))
	require.Equal(t, []string{"read_file", "list_directory"}, c.names)
}

func TestOutputSchema(t *testing.T) {
	env := toolstest.New(t, nil, seedFiles)
	for _, tool := range tools.All() {
		s := mcpserver.OutputSchema(tool.Name)
		require.Equal(t, "object", s.Type, tool.Name)
		require.Equal(t, []string{"status", "summary_text"}, s.Required, tool.Name)
		require.Contains(t, s.Properties, "error_code", tool.Name)
		require.Contains(t, s.Properties, "closest", tool.Name)
		for name := range tool.Receipt.Properties {
			require.Contains(t, s.Properties, name, tool.Name)
		}
	}
	s := mcpserver.OutputSchema(tools.ConsolidatedTool)
	require.Equal(t, "object", s.Type)
	require.ElementsMatch(t, []string{"status", "error_code", "error_number", "summary_text"}, propertyNames(s))
	require.Empty(t, tools.All()[0].Receipt.Description, "the registry's schemas are not changed")
	require.NotNil(t, tools.All()[0].Receipt.AdditionalProperties, "the registry's schemas are not changed")

	// Every receipt validates, success or failure, including receipts with
	// fields a newer daemon might add.
	for _, tc := range []struct{ tool, params string }{
		{"read_file", `{"path":"README.md"}`},
		{"read_file", `{"path":"nope"}`},
		{"edit_file", `{"path":"README.md","old_string":"# dem","new_string":"# Dem"}`},
		{"edit_file", `{"path":"README.md","old_string":"zzz","new_string":"y"}`},
		{"grep", `{"pattern":"demo"}`},
		{"grep", `{"pattern":"("}`},
		{"stat", `{"path":"src"}`},
		{"list_directory", `{"path":""}`},
		{tools.ConsolidatedTool, `{"action":"glob","pattern":"**/*.go"}`},
	} {
		r := env.Call(tc.tool, tc.params)
		schema, err := json.Marshal(mcpserver.OutputSchema(tc.tool))
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(r.JSON(), &m))
		m["added_later"] = map[string]any{"x": 1}
		extended, err := json.Marshal(m)
		require.NoError(t, err)
		for _, receipt := range [][]byte{r.JSON(), extended} {
			require.NoError(t, validate(json.RawMessage(schema), receipt), "%s %s: %s", tc.tool, tc.params, receipt)
		}
	}
}

func propertyNames(s *jsonschema.Schema) []string {
	var names []string
	for name := range s.Properties {
		names = append(names, name)
	}
	return names
}

// fakeBackend is a remote-like backend: receipts as raw JSON, and errors.
type fakeBackend struct {
	defsErr error
	call    func(name string, params json.RawMessage) (*tools.Response, error)
}

func (f *fakeBackend) Definitions(profile string) ([]tools.Definition, error) {
	if f.defsErr != nil {
		return nil, f.defsErr
	}
	p, err := tools.LookupProfile(profile)
	if err != nil {
		return nil, err
	}
	return p.Definitions(), nil
}

func (f *fakeBackend) Call(_ context.Context, name string, params json.RawMessage) (*tools.Response, error) {
	return f.call(name, params)
}

func TestBackendFailures(t *testing.T) {
	fb := &fakeBackend{}
	srv := mcpserver.New(fb, mcpserver.Options{Profile: "minimal"})
	c := newTestClient(t, connectInMemory(t, srv))

	// A remote receipt, passed through as it came.
	fb.call = func(name string, params json.RawMessage) (*tools.Response, error) {
		return &tools.Response{Tool: name, Text: "remote text " + string(params),
			Receipt: json.RawMessage(`{"status":"ok","summary_text":"done","path":"a","inline_text":"x","encoding":"utf-8","size_bytes":1,"version":3,"offset_bytes":0,"truncated":false}`)}, nil
	}
	o := c.mustCall("read_file", map[string]any{"path": "a"})
	require.False(t, o.res.IsError)
	require.Equal(t, `remote text {"path":"a"}`, o.text)
	require.EqualValues(t, 3, o.receipt["version"])

	fb.call = func(name string, _ json.RawMessage) (*tools.Response, error) {
		return &tools.Response{Tool: name, Text: "gone", Receipt: json.RawMessage(`{"status":"not_found","error_code":"not_found","summary_text":"gone","path":"a"}`)}, nil
	}
	o = c.mustCall("read_file", map[string]any{"path": "a"})
	require.True(t, o.res.IsError)
	require.Equal(t, "not_found", o.receipt["status"])

	for name, call := range map[string]func(string, json.RawMessage) (*tools.Response, error){
		"error": func(string, json.RawMessage) (*tools.Response, error) {
			return nil, errors.New("dial unix /run/vfsd.sock: connection refused")
		},
		"nil response": func(string, json.RawMessage) (*tools.Response, error) { return nil, nil },
		"panic":        func(string, json.RawMessage) (*tools.Response, error) { panic("boom") },
		"no status": func(name string, _ json.RawMessage) (*tools.Response, error) {
			return &tools.Response{Tool: name, Receipt: json.RawMessage(`[1,2]`)}, nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			fb.call = call
			o := c.mustCall("write_file", map[string]any{"path": "a", "content": "x"})
			require.True(t, o.res.IsError)
			require.Equal(t, "error", o.receipt["status"])
			require.Equal(t, "error", o.receipt["error_code"])
			require.Equal(t, o.receipt["summary_text"], o.text)
			require.Contains(t, o.text, "write_file")
		})
	}

	_, err := mcpserver.NewServer(&fakeBackend{defsErr: errors.New("daemon unreachable")}, mcpserver.Options{})
	require.ErrorContains(t, err, "daemon unreachable")
	_, err = mcpserver.NewServer(fb, mcpserver.Options{Profile: "nope"})
	require.ErrorContains(t, err, `unknown profile "nope"`)
	_, err = mcpserver.NewServer(nil, mcpserver.Options{})
	require.Error(t, err)
	require.Panics(t, func() { mcpserver.New(fb, mcpserver.Options{Profile: "nope"}) })
}

// TestHTTPRouting: getServer picks a session's server by URL, and a
// session's endpoint never reaches another's.
func TestHTTPRouting(t *testing.T) {
	envA, srvA := sessionServer(t, "anthropic")
	envB, srvB := sessionServer(t, "minimal")
	servers := map[string]*mcp.Server{"a": srvA, "b": srvB}
	handler := mcpserver.HTTPHandler(func(r *http.Request) *mcp.Server { return servers[r.PathValue("id")] })
	mux := http.NewServeMux()
	mux.Handle("/sessions/{id}/mcp", handler)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)

	connect := func(id string) *client {
		cs, err := newClient().Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: hs.URL + "/sessions/" + id + "/mcp", MaxRetries: -1}, nil)
		require.NoError(t, err)
		t.Cleanup(func() { cs.Close() })
		return newTestClient(t, cs)
	}
	a, b := connect("a"), connect("b")
	require.Equal(t, profileNames(t, "anthropic"), a.names)
	require.Equal(t, profileNames(t, "minimal"), b.names)
	a.mustCall("write_file", map[string]any{"path": "who.txt", "content": "a"})
	b.mustCall("write_file", map[string]any{"path": "who.txt", "content": "b"})
	require.Equal(t, "a", envA.Read("who.txt"))
	require.Equal(t, "b", envB.Read("who.txt"))

	_, err := newClient().Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: hs.URL + "/sessions/zzz/mcp", MaxRetries: -1}, nil)
	require.Error(t, err, "getServer returning nil refuses the request")
}

// TestHTTPOlderProtocol speaks the 2025-06-18 protocol by hand, as
// clients of that version (with their own HTTP stacks) do.
func TestHTTPOlderProtocol(t *testing.T) {
	env, srv := sessionServer(t, "anthropic")
	hs := httptest.NewServer(mcpserver.HTTPHandler(func(*http.Request) *mcp.Server { return srv }))
	t.Cleanup(hs.Close)

	post := func(body string) (int, map[string]any) {
		req, err := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		data := message(t, resp)
		if data == "" {
			return resp.StatusCode, nil
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(data), &m), data)
		return resp.StatusCode, m
	}

	code, m := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"old","version":"1"}}}`)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "2025-06-18", m["result"].(map[string]any)["protocolVersion"])
	code, _ = post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	require.Equal(t, http.StatusAccepted, code)
	_, m = post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	toolList := m["result"].(map[string]any)["tools"].([]any)
	require.Len(t, toolList, len(profileNames(t, "anthropic")))
	require.Equal(t, "edit_file", toolList[0].(map[string]any)["name"])
	_, m = post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"old.txt","content":"v1"}}}`)
	res := m["result"].(map[string]any)
	require.Nil(t, res["isError"], "isError is left out when false")
	require.Equal(t, "ok", res["structuredContent"].(map[string]any)["status"])
	require.Equal(t, "v1", env.Read("old.txt"))
	_, m = post(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"nope"}}}`)
	res = m["result"].(map[string]any)
	require.Equal(t, true, res["isError"])
	require.Equal(t, "not_found", res["structuredContent"].(map[string]any)["status"])
}

// message returns the JSON-RPC message of a response: its JSON body, or
// the data of its server-sent event.
func message(t *testing.T, resp *http.Response) string {
	t.Helper()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return strings.TrimSpace(string(body))
	}
	for line := range strings.Lines(string(body)) {
		if data, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data: "); ok {
			return data
		}
	}
	return ""
}

// TestServeStdioArgs: ServeStdio refuses a nil server.
func TestServeStdioArgs(t *testing.T) {
	require.Error(t, mcpserver.ServeStdio(context.Background(), nil))
}
