package contracts

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
	"github.com/vfsd/vfsd/contract"
	"github.com/vfsd/vfsd/contract/contracttest"
	"github.com/vfsd/vfsd/mcpserver"

	_ "github.com/vfsd/vfsd/contract/all"
)

// caseSessionID is the ID every case's session has, on every transport
// (the Go transport's toolstest session is "test-session" too), so that a
// case may name it in its parameters (AOS's session_id).
const caseSessionID = "test-session"

// runAll runs a contract's cases through the Go API, then through the HTTP
// API and MCP against one running daemon (`vfsd serve`, built from this
// tree): a fresh session per case, seeded with the case's files through
// the API (a host folder staged as the session's mount) and read back
// through the API (the session applied to that folder).
func runAll(t *testing.T, contractName string, cases []contracttest.Case) {
	t.Run("go", func(t *testing.T) { contracttest.RunGo(t, contractName, cases) })
	if testing.Short() {
		t.Log("-short: the HTTP and MCP transports need a daemon; skipped")
		return
	}
	d := startDaemon(t)
	t.Run("http", func(t *testing.T) {
		contracttest.Run(t, contractName, cases, func(t *testing.T, name string, c contracttest.Case) contracttest.Caller {
			return d.newHTTPCaller(t, name, c)
		})
	})
	t.Run("mcp", func(t *testing.T) {
		contracttest.Run(t, contractName, cases, func(t *testing.T, name string, c contracttest.Case) contracttest.Caller {
			return d.newMCPCaller(t, name, c)
		})
	})
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// vfsdBinary builds cmd/vfsd once per test run.
func vfsdBinary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "vfsd-contracts-bin")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "vfsd")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "go", "build", "-o", binPath, "github.com/vfsd/vfsd/cmd/vfsd").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	require.NoError(t, binErr)
	return binPath
}

// daemon is a `vfsd serve` process for one test function.
type daemon struct {
	socket string
	// hostRoot is the first allowed root: a case's Host files are laid out
	// at its top (so that a relative host_path like "docs/" resolves to
	// them), and contracttest.HostRootVar in its Init names it. It is
	// emptied when each case ends.
	hostRoot string
	// hosts is the second allowed root: each case's Files live in a folder
	// of their own beneath it, staged as the session's mount.
	hosts string
	c     *client.Client
	http  *http.Client // over the socket, for MCP

	mu  sync.Mutex
	log bytes.Buffer
}

// startDaemon starts `vfsd serve` with a fresh data dir, a socket and two
// allowed roots under one temporary folder (the cases' host files, then
// their seeded files), and stops it when t ends.
func startDaemon(t *testing.T) *daemon {
	t.Helper()
	bin := vfsdBinary(t)
	short, err := os.MkdirTemp("", "vfsdc") // Unix socket paths are short
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(short) })
	parent, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	d := &daemon{socket: filepath.Join(short, "d.sock"), hostRoot: filepath.Join(parent, "host"), hosts: filepath.Join(parent, "files")}
	require.NoError(t, os.Mkdir(d.hostRoot, 0o755))
	require.NoError(t, os.Mkdir(d.hosts, 0o755))
	cmd := exec.Command(bin, "serve", "--data-dir", t.TempDir(), "--socket", d.socket,
		"--allow-root", d.hostRoot, "--allow-root", d.hosts)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			d.mu.Lock()
			d.log.WriteString(sc.Text() + "\n")
			d.mu.Unlock()
		}
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(d.logText(), `msg="vfsd serving"`) {
		select {
		case <-exited:
			t.Fatalf("vfsd serve exited:\n%s", d.logText())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("vfsd serve did not start within 60s:\n%s", d.logText())
		}
	}
	d.c, err = client.New(client.Options{Socket: d.socket})
	require.NoError(t, err)
	t.Cleanup(d.c.Close)
	d.http = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var dl net.Dialer
		return dl.DialContext(ctx, "unix", d.socket)
	}}}
	return d
}

func (d *daemon) logText() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.log.String()
}

// apiSession is one case's session on the daemon: created from a host
// folder holding the case's files, closed when the case ends.
type apiSession struct {
	t     *testing.T
	d     *daemon
	host  string
	snaps map[string]string // snapshot names → IDs
}

// TakeSnapshot snapshots the session through the API.
func (s *apiSession) TakeSnapshot(ctx context.Context, name string) error {
	snap, err := s.d.c.CreateSnapshot(ctx, caseSessionID, name)
	if err != nil {
		return err
	}
	if s.snaps == nil {
		s.snaps = map[string]string{}
	}
	s.snaps[name] = snap.ID
	return nil
}

// RestoreSnapshot restores the session through the API.
func (s *apiSession) RestoreSnapshot(ctx context.Context, name string) error {
	id, ok := s.snaps[name]
	if !ok {
		return fmt.Errorf("no snapshot %q was taken", name)
	}
	_, err := s.d.c.Restore(ctx, caseSessionID, id)
	return err
}

// State reads the contract's state as the orchestrator does: GET
// /v1/sessions/{id}/contract/state.
func (s *apiSession) State(ctx context.Context) (json.RawMessage, error) {
	return s.d.c.ContractState(ctx, caseSessionID)
}

// newSession creates the case's session under the contract, with the
// case's policy as the API takes it (a preset's name, or a policy object in
// the contract's own fields). The case's Host
// files are laid out under the host root, and its Init given as the
// session's contract_options; with WantInitError the creation must fail
// with that text and leave no session, and the steps run on a session
// created without the options (the daemon discards a session whose
// options fail, so that is the state a failed Init leaves).
func (d *daemon) newSession(t *testing.T, contractName string, c contracttest.Case) *apiSession {
	t.Helper()
	req := api.CreateSessionRequest{ID: caseSessionID, Contract: contractName}
	var err error
	req.Policy, req.PolicyObject, err = contracttest.PolicyRequest(c.Policy)
	require.NoError(t, err, "the case's policy %s", c.Policy)
	host, err := os.MkdirTemp(d.hosts, "case")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(host) })
	for p, content := range c.Files {
		full := filepath.Join(host, filepath.FromSlash(strings.TrimSuffix(p, "/")))
		if strings.HasSuffix(p, "/") {
			require.NoError(t, os.MkdirAll(full, 0o755))
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
	for p, target := range c.Symlinks {
		full := filepath.Join(host, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.Symlink(target, full))
	}
	for p, mode := range c.Modes {
		require.NoError(t, os.Chmod(filepath.Join(host, filepath.FromSlash(p)), fs.FileMode(mode)))
	}
	req.Mounts = []api.Mount{{HostPath: host, MountPath: "/"}}
	d.layOutHost(t, c.Host)
	for p, target := range c.HostSymlinks {
		full := filepath.Join(d.hostRoot, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.Symlink(target, full))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if c.Init != "" {
		req.ContractOptions = json.RawMessage(strings.ReplaceAll(c.Init, contracttest.HostRootVar, d.hostRoot))
	}
	if c.WantInitError != "" {
		_, err = d.c.CreateSession(ctx, req)
		require.ErrorContains(t, err, c.WantInitError, "create the case's session with contract_options %s", req.ContractOptions)
		var ae *api.Error
		_, err = d.c.Session(ctx, caseSessionID)
		require.ErrorAs(t, err, &ae, "a session whose contract options failed must not exist")
		require.Equal(t, api.CodeNotFound, ae.Code, "%v", err)
		req.ContractOptions = nil
	}
	_, err = d.c.CreateSession(ctx, req)
	require.NoError(t, err, "create the case's session")
	// A client references content it stored (POST /v1/blobs) by its
	// hash; the Go runner's files are in the store already. Store every
	// file's content, so blob_ref cases mean the same on every transport.
	for p, content := range c.Files {
		if !strings.HasSuffix(p, "/") {
			_, err := d.c.PutBlob(ctx, strings.NewReader(content))
			require.NoError(t, err, "store %s as a blob", p)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, d.c.CloseSessionPurge(ctx, caseSessionID))
	})
	return &apiSession{t: t, d: d, host: host}
}

// layOutHost writes a case's Host files at the top of the host root
// (path → content, a path ending in "/" an empty directory) and empties
// the root when the case ends.
func (d *daemon) layOutHost(t *testing.T, files map[string]string) {
	t.Helper()
	t.Cleanup(func() {
		entries, err := os.ReadDir(d.hostRoot)
		require.NoError(t, err)
		for _, e := range entries {
			require.NoError(t, os.RemoveAll(filepath.Join(d.hostRoot, e.Name())))
		}
	})
	for p, content := range files {
		full := filepath.Join(d.hostRoot, filepath.FromSlash(strings.TrimSuffix(p, "/")))
		if strings.HasSuffix(p, "/") {
			require.NoError(t, os.MkdirAll(full, 0o755))
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
}

// Files applies the session to its host folder and reads the folder back
// as contracttest.SessionFiles shows a session: "/path" → content,
// directories as "/path/", symlinks as "-> target".
func (s *apiSession) Files(ctx context.Context) (map[string]string, error) {
	rep, err := s.d.c.Apply(ctx, caseSessionID, false)
	if err != nil {
		return nil, fmt.Errorf("apply the session to read its files: %w", err)
	}
	if len(rep.Conflicts) > 0 || len(rep.Outside) > 0 {
		return nil, fmt.Errorf("apply the session to read its files: conflicts %v, outside %v", rep.Conflicts, rep.Outside)
	}
	out := map[string]string{}
	err = filepath.WalkDir(s.host, func(p string, de fs.DirEntry, err error) error {
		if err != nil || p == s.host {
			return err
		}
		rel := "/" + filepath.ToSlash(strings.TrimPrefix(p, s.host+string(filepath.Separator)))
		switch {
		case de.IsDir():
			out[rel+"/"] = ""
		case de.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "-> " + target
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = string(b)
		}
		return nil
	})
	return out, err
}

// httpCaller calls the session's tools through POST
// /v1/sessions/{id}/tools/{name}.
type httpCaller struct {
	*apiSession
	contract string
}

func (d *daemon) newHTTPCaller(t *testing.T, contractName string, c contracttest.Case) contracttest.Caller {
	return &httpCaller{apiSession: d.newSession(t, contractName, c), contract: contractName}
}

func (h *httpCaller) Call(ctx context.Context, tool string, params json.RawMessage) (contract.Result, error) {
	r, err := h.d.c.CallToolAs(ctx, caseSessionID, h.contract, tool, params)
	if err != nil {
		return contract.Result{}, err
	}
	if r.Contract != h.contract {
		return contract.Result{}, fmt.Errorf("the daemon ran the call under contract %q, not %q", r.Contract, h.contract)
	}
	return contract.Result{Body: r.JSON, Text: r.Text, Status: r.Status, IsError: r.IsError}, nil
}

// mcpCaller calls the session's tools through its MCP endpoint
// (streamable HTTP, over the daemon's socket).
type mcpCaller struct {
	*apiSession
	cs     *mcp.ClientSession
	listed map[string]bool // the tools tools/list names
}

func (d *daemon) newMCPCaller(t *testing.T, contractName string, c contracttest.Case) contracttest.Caller {
	s := d.newSession(t, contractName, c)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := mcp.NewClient(&mcp.Implementation{Name: "vfsd-contracts", Version: "1"}, nil)
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://vfsd/v1/sessions/" + caseSessionID + "/mcp",
		HTTPClient: d.http, MaxRetries: -1}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	listed := map[string]bool{}
	list, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	for _, tl := range list.Tools {
		listed[tl.Name] = true
	}
	return &mcpCaller{apiSession: s, cs: cs, listed: listed}
}

func (m *mcpCaller) Call(ctx context.Context, tool string, params json.RawMessage) (contract.Result, error) {
	var args map[string]any
	if err := json.Unmarshal(params, &args); err != nil || args == nil {
		// MCP's arguments are an object: a case that sends anything else
		// tests a transport that can carry it.
		m.t.Skipf("MCP carries only object arguments; %s takes %s", tool, params)
	}
	if !m.listed[tool] {
		// MCP refuses a tool its server does not list at the protocol
		// level, before any contract sees the call.
		m.t.Skipf("MCP refuses %s before the contract sees it: the server does not list it", tool)
	}
	res, err := m.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(params)})
	if err != nil {
		return contract.Result{}, err
	}
	out := contract.Result{IsError: res.IsError}
	if len(res.Content) > 0 {
		tc, ok := res.Content[0].(*mcp.TextContent)
		if !ok {
			return contract.Result{}, fmt.Errorf("%s: the first content is %T, not text", tool, res.Content[0])
		}
		out.Text = tc.Text
	}
	if st, ok := res.Meta[mcpserver.StatusMeta].(string); ok {
		out.Status = st
	} else {
		return contract.Result{}, errors.New(tool + ": the result's _meta has no " + mcpserver.StatusMeta)
	}
	if res.StructuredContent != nil {
		if out.Body, err = json.Marshal(res.StructuredContent); err != nil {
			return contract.Result{}, err
		}
	} else {
		// A body that is not an object travels as the text alone.
		out.Body = json.RawMessage(out.Text)
		if !json.Valid(out.Body) {
			out.Body, _ = json.Marshal(out.Text)
		}
	}
	return out, nil
}

// body decodes a result's body as a JSON object.
func body(t testing.TB, r contract.Result) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &m), "%s", r.Body)
	return m
}
