package tests

import (
	"context"
	"encoding/json"
	"strings"
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
	require.Equal(t, api.CodeNotFound, client.Code(err), "another session's snapshot answers as none: %v", err)
	_, err = cb.Snapshot(ctx, snapA.ID)
	forbidden(err)
	_, err = cb.Diff(ctx, client.DiffQuery{From: "session:alice", To: "session:bob"})
	forbidden(err)
	forbidden(cb.CloseSession(ctx, "alice"))
	_, err = cb.Sessions(ctx)
	forbidden(err)

	// The CLI over TCP, with bob's token.
	env := []string{"VFSD_ADDR=" + addr, "VFSD_TOKEN=" + b.Token, "VFSD_SOCKET="}
	out, errOut, code := p.cli(ctx, env, "tool", "alice", "read_file", "--params", `{"path":"secret.txt"}`)
	require.Equal(t, 1, code, out)
	require.Contains(t, errOut, "forbidden")
	out, errOut, code = p.cli(ctx, env, "tool", "bob", "write_file", "--params", `{"path":"mine.txt","inline_text":"bob's"}`)
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

// TestDaemonSessionsStayApart replays the attacks of issue 11 against the
// binary over TCP with real tokens: a session token recreating a closed
// session's id by forking, a new session of the same id reaching the old
// one's snapshots, probing snapshot prefixes, forks outliving their parent
// or without bound; and across a restart.
func TestDaemonSessionsStayApart(t *testing.T) {
	dataDir, socket := newDaemonDirs(t)
	p := startDaemon(t, dataDir, socket, "--listen", "127.0.0.1:0")
	ctx := context.Background()
	dial := func(token string) *client.Client {
		c, err := client.New(client.Options{Addr: p.tcpAddr(), Token: token})
		require.NoError(t, err)
		t.Cleanup(c.Close)
		return c
	}
	code := func(err error) string { t.Helper(); require.Error(t, err); return client.Code(err) }
	admin := dial(p.adminToken())
	v, err := admin.CreateSession(ctx, api.CreateSessionRequest{ID: "victim"})
	require.NoError(t, err)
	cv := dial(v.Token)
	r, err := cv.CallTool(ctx, "victim", "write_file", json.RawMessage(`{"path":"secret.txt","inline_text":"victim's"}`))
	require.NoError(t, err)
	require.True(t, r.OK())
	old, err := cv.CreateSnapshot(ctx, "victim", "secret")
	require.NoError(t, err)
	m, err := admin.CreateSession(ctx, api.CreateSessionRequest{ID: "mallory", TTL: "60s"})
	require.NoError(t, err)
	cm := dial(m.Token)
	require.NoError(t, cv.CloseSession(ctx, "victim"))

	// Mallory cannot take the name.
	_, err = cm.ForkSession(ctx, "mallory", api.CreateSessionRequest{ID: "victim"})
	require.Equal(t, api.CodeForbidden, code(err))
	// Nor probe for the old snapshot: it answers as one that never was.
	_, seen := cm.Restore(ctx, "mallory", old.ID[:4])
	_, missing := cm.Restore(ctx, "mallory", strings.Repeat(flip(old.ID[0]), 4))
	require.Equal(t, api.CodeNotFound, code(seen))
	require.Equal(t, code(missing), code(seen))
	require.Equal(t, strings.ReplaceAll(missing.Error(), strings.Repeat(flip(old.ID[0]), 4), "REF"),
		strings.ReplaceAll(seen.Error(), old.ID[:4], "REF"))

	// A new "victim" the admin makes is not the old one.
	v2, err := admin.CreateSession(ctx, api.CreateSessionRequest{ID: "victim"})
	require.NoError(t, err)
	cv2 := dial(v2.Token)
	list, err := cv2.SessionSnapshots(ctx, "victim")
	require.NoError(t, err)
	require.Empty(t, list)
	_, err = cv2.Restore(ctx, "victim", old.ID)
	require.Equal(t, api.CodeNotFound, code(err))
	_, err = cv2.SessionDiff(ctx, "victim", client.DiffQuery{From: old.ID[:8]})
	require.Equal(t, api.CodeNotFound, code(err))
	_, err = cv2.ForkSnapshot(ctx, old.ID, api.CreateSessionRequest{})
	require.Equal(t, api.CodeForbidden, code(err))

	// Mallory's forks die with mallory, and are bounded.
	made := 0
	for ; ; made++ {
		f, err := cm.ForkSession(ctx, "mallory", api.CreateSessionRequest{TTL: "never"})
		if err != nil {
			require.Equal(t, api.CodeLimitExceeded, code(err), "%v", err)
			break
		}
		require.NotNil(t, f.Session.ExpiresAt)
		require.False(t, f.Session.ExpiresAt.After(*m.Session.ExpiresAt))
		require.Less(t, made, 1000, "forks are not bounded")
	}
	require.Positive(t, made)
	p.stop()

	p = startDaemon(t, dataDir, socket, "--listen", "127.0.0.1:0")
	admin, cm, cv2 = dial(p.adminToken()), dial(m.Token), dial(v2.Token)
	_, err = cm.ForkSession(ctx, "mallory", api.CreateSessionRequest{})
	require.Equal(t, api.CodeLimitExceeded, code(err), "the bound survives a restart")
	_, err = cv2.Restore(ctx, "victim", old.ID)
	require.Equal(t, api.CodeNotFound, code(err), "and so does the incarnation")
	_, err = admin.Restore(ctx, "victim", old.ID)
	require.NoError(t, err, "the admin reaches every snapshot")
	p.stop()
}

// flip returns a hex digit other than c.
func flip(c byte) string {
	if c == '0' {
		return "1"
	}
	return "0"
}
