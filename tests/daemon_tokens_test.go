package tests

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
)

// TestDaemonTokenIsolation checks over TCP that each session's token
// reaches its own session and nothing else, with the Go client and with
// the CLI.
func TestDaemonTokenIsolation(t *testing.T) {
	dataDir, socket := newDaemonDirs(t)
	p := startDaemon(t, dataDir, socket, "--listen", "127.0.0.1:0")
	ctx := context.Background()
	addr := p.tcpAddr()
	dial := func(token string) *client.Client {
		c, err := client.New(client.Options{Addr: addr, Token: token})
		require.NoError(t, err)
		t.Cleanup(c.Close)
		return c
	}
	admin := dial(p.adminToken())
	a, err := admin.CreateSession(ctx, api.CreateSessionRequest{ID: "alice"})
	require.NoError(t, err)
	b, err := admin.CreateSession(ctx, api.CreateSessionRequest{ID: "bob"})
	require.NoError(t, err)
	ca, cb := dial(a.Token), dial(b.Token)

	r, err := ca.CallTool(ctx, "alice", "write_file", json.RawMessage(`{"path":"secret.txt","inline_text":"alice's"}`))
	require.NoError(t, err)
	require.True(t, r.OK())
	snapA, err := ca.CreateSnapshot(ctx, "alice", "")
	require.NoError(t, err)

	forbidden := func(err error) {
		t.Helper()
		require.Equal(t, api.CodeForbidden, client.Code(err), "%v", err)
	}
	_, err = cb.CallTool(ctx, "alice", "read_file", json.RawMessage(`{"path":"secret.txt"}`))
	forbidden(err)
	_, err = cb.Session(ctx, "alice")
	forbidden(err)
	_, err = cb.SessionDiff(ctx, "alice", client.DiffQuery{})
	forbidden(err)
	_, err = cb.ForkSession(ctx, "alice", api.CreateSessionRequest{})
	forbidden(err)
	_, err = cb.Restore(ctx, "bob", snapA.ID)
	forbidden(err)
	_, err = cb.Snapshot(ctx, snapA.ID)
	forbidden(err)
	_, err = cb.Diff(ctx, client.DiffQuery{From: "session:alice", To: "session:bob"})
	forbidden(err)
	forbidden(cb.CloseSession(ctx, "alice"))
	_, err = cb.Sessions(ctx)
	forbidden(err)

	// The CLI over TCP, with bob's token.
	env := []string{"VFSD_ADDR=" + addr, "VFSD_TOKEN=" + b.Token, "VFSD_SOCKET="}
	out, errOut, code := p.cli(ctx, env, "tool", "alice", "read_file", "--json", `{"path":"secret.txt"}`)
	require.Equal(t, 1, code, out)
	require.Contains(t, errOut, "forbidden")
	out, errOut, code = p.cli(ctx, env, "tool", "bob", "write_file", "--json", `{"path":"mine.txt","inline_text":"bob's"}`)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `"status":"ok"`)

	// Without a token, or with a made-up one: 401.
	_, err = dial("").Session(ctx, "alice")
	require.Equal(t, api.CodeUnauthorized, client.Code(err))
	_, err = dial("vfsd_sess_made-up").Session(ctx, "alice")
	require.Equal(t, api.CodeUnauthorized, client.Code(err))

	// Bob's work is bob's: alice cannot see it either.
	r, err = ca.CallTool(ctx, "alice", "exists", json.RawMessage(`{"path":"mine.txt"}`))
	require.NoError(t, err)
	require.Contains(t, string(r.JSON), `"exists":false`)
	p.stop()
}
