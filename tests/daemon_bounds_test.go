package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
)

// mcpStdio is `vfsd mcp` spoken to line by line.
type mcpStdio struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
}

func startMCPStdio(t *testing.T, p *daemonProc, session string) *mcpStdio {
	t.Helper()
	cmd := exec.Command(p.bin, "mcp", "--session", session, "--socket", p.socket)
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	m := &mcpStdio{t: t, cmd: cmd, in: in, lines: make(chan string, 16)}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 32<<20)
		for sc.Scan() {
			m.lines <- sc.Text()
		}
		close(m.lines)
	}()
	t.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return m
}

func (m *mcpStdio) send(line string) {
	m.t.Helper()
	_, err := io.WriteString(m.in, line+"\n")
	require.NoError(m.t, err, "vfsd mcp stopped reading")
}

// recv returns the next message vfsd mcp writes.
func (m *mcpStdio) recv() map[string]any {
	m.t.Helper()
	select {
	case line, ok := <-m.lines:
		require.True(m.t, ok, "vfsd mcp ended its output")
		var msg map[string]any
		require.NoError(m.t, json.Unmarshal([]byte(line), &msg), line)
		return msg
	case <-time.After(30 * time.Second):
		m.t.Fatal("vfsd mcp did not answer within 30s")
	}
	return nil
}

const e2eInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`

// TestDaemonMCPStdioMalformedLine: `vfsd mcp` fed a line that is not JSON
// answers a parse error (id null) and goes on to serve initialize and
// tools/list, instead of exiting.
func TestDaemonMCPStdioMalformedLine(t *testing.T) {
	dataDir, socket := newDaemonDirs(t)
	p := startDaemon(t, dataDir, socket)
	_, err := p.client().CreateSession(context.Background(), api.CreateSessionRequest{ID: "s"})
	require.NoError(t, err)
	m := startMCPStdio(t, p, "s")

	m.send(`{"jsonrpc":"2.0","id":1,"method":`) // cut short
	msg := m.recv()
	require.Nil(t, msg["id"])
	require.Contains(t, msg, "id")
	require.EqualValues(t, -32700, msg["error"].(map[string]any)["code"])

	m.send(e2eInitialize)
	msg = m.recv()
	require.EqualValues(t, 1, msg["id"])
	require.Contains(t, msg, "result")
	m.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	m.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	msg = m.recv()
	require.EqualValues(t, 2, msg["id"])
	require.NotEmpty(t, msg["result"].(map[string]any)["tools"])

	require.NoError(t, m.in.Close())
	done := make(chan error, 1)
	go func() { done <- m.cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "vfsd mcp exits cleanly at the end of its input")
	case <-time.After(30 * time.Second):
		t.Fatal("vfsd mcp did not exit at the end of its input")
	}
}

// fakeRGDir writes, into a fresh directory, an `rg` that never finishes:
// it records its process ID and that of a child holding its output, in
// the returned pids file, and waits.
func fakeRGDir(t *testing.T) (dir, pids string) {
	dir = t.TempDir()
	pids = filepath.Join(dir, "pids")
	script := "#!/bin/sh\nsleep 600 &\necho $! >> " + pids + "\necho $$ >> " + pids + "\nwait\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rg"), []byte(script), 0o755))
	return dir, pids
}

// rgStarted waits until the fake rg has started (again: past n recorded
// processes) and returns the processes it recorded.
func rgStarted(t *testing.T, pids string, n int) []int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(pids)
		var out []int
		for _, f := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(f)
			require.NoError(t, err)
			out = append(out, pid)
		}
		if len(out) >= n+2 {
			return out[n:]
		}
		require.True(t, time.Now().Before(deadline), "rg did not start within 30s")
		time.Sleep(20 * time.Millisecond)
	}
}

// requireGone waits for the processes to exit, failing after a guard: the
// search must stop when its caller goes away, not run to its end.
func requireGone(t *testing.T, pids []int) {
	t.Helper()
	for _, pid := range pids {
		deadline := time.Now().Add(20 * time.Second)
		for {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
			if err != nil {
				break
			}
			if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && b[i+2] == 'Z' {
				break // exited, not yet reaped
			}
			require.True(t, time.Now().Before(deadline), "rg's process %d still runs after its caller went away", pid)
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// TestDaemonCancelStopsRG: a grep whose caller goes away — an MCP HTTP
// client that disconnects, a `vfsd mcp` client that sends
// notifications/cancelled, an HTTP API client that hangs up — stops its
// rg (and what rg started) at once.
func TestDaemonCancelStopsRG(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc to watch processes in")
	}
	rgDir, pids := fakeRGDir(t)
	t.Setenv("PATH", rgDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	dataDir, socket := newDaemonDirs(t)
	p := startDaemon(t, dataDir, socket, "--listen", "127.0.0.1:0")
	ctx := context.Background()
	c := p.client()
	sess, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "g"})
	require.NoError(t, err)
	_, err = c.CallTool(ctx, "g", "write_file", json.RawMessage(`{"path":"a.txt","content":"alpha\n"}`))
	require.NoError(t, err)
	seen := 0

	t.Run("MCP over HTTP, client disconnects", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		req, err := http.NewRequestWithContext(cctx, http.MethodPost, "http://"+p.tcpAddr()+"/v1/sessions/g/mcp",
			strings.NewReader(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"grep","arguments":{"pattern":"alpha"}}}`))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+sess.Token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
		go func() {
			if resp, err := http.DefaultClient.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
		procs := rgStarted(t, pids, seen)
		seen += len(procs)
		cancel()
		requireGone(t, procs)
	})

	t.Run("vfsd mcp, notifications/cancelled", func(t *testing.T) {
		m := startMCPStdio(t, p, "g")
		m.send(e2eInitialize)
		m.recv()
		m.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		m.send(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"grep","arguments":{"pattern":"alpha"}}}`)
		procs := rgStarted(t, pids, seen)
		seen += len(procs)
		m.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9,"reason":"the user stopped it"}}`)
		requireGone(t, procs)
	})

	t.Run("HTTP API, client hangs up", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() { _, _ = c.CallTool(cctx, "g", "grep", json.RawMessage(`{"pattern":"alpha"}`)) }()
		procs := rgStarted(t, pids, seen)
		seen += len(procs)
		cancel()
		requireGone(t, procs)
	})
}
