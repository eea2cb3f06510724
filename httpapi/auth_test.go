package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
	"github.com/vfsd/vfsd/daemon"
)

func TestTokens(t *testing.T) {
	root := t.TempDir()
	cfg := newConfig(t)
	cfg.Listen = "127.0.0.1:0"
	cfg.AllowRoots = []string{root}
	s := start(t, cfg)
	ctx := context.Background()

	// The admin token was generated into the data dir, mode 0600.
	fi, err := os.Stat(filepath.Join(cfg.DataDir, "token"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	b, err := os.ReadFile(filepath.Join(cfg.DataDir, "token"))
	require.NoError(t, err)
	require.Equal(t, s.d.AdminToken(), strings.TrimSpace(string(b)))
	fi, err = os.Stat(cfg.Socket)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the socket is 0600")

	admin := s.tcpClient(s.d.AdminToken())
	a, err := admin.CreateSession(ctx, api.CreateSessionRequest{ID: "a"})
	require.NoError(t, err)
	bs, err := admin.CreateSession(ctx, api.CreateSessionRequest{ID: "b", Policy: "x07"})
	require.NoError(t, err)

	ca, cb := s.tcpClient(a.Token), s.tcpClient(bs.Token)
	call(t, ca, "a", "write_file", `{"path":"mine.txt","inline_text":"a\n"}`, "ok")
	call(t, cb, "b", "write_file", `{"path":"mine.txt","inline_text":"b\n"}`, "ok")

	// Each token reaches its own session only.
	_, err = ca.CallTool(ctx, "b", "read_file", []byte(`{"path":"mine.txt"}`))
	requireCode(t, err, api.CodeForbidden)
	_, err = cb.Session(ctx, "a")
	requireCode(t, err, api.CodeForbidden)
	requireCode(t, cb.CloseSession(ctx, "a"), api.CodeForbidden)
	_, err = ca.Events(ctx, "b")
	requireCode(t, err, api.CodeForbidden)
	// ... and none of the admin's endpoints.
	_, err = ca.Sessions(ctx)
	requireCode(t, err, api.CodeForbidden)
	_, err = ca.CreateSession(ctx, api.CreateSessionRequest{})
	requireCode(t, err, api.CodeForbidden)
	_, err = ca.Snapshots(ctx, "")
	requireCode(t, err, api.CodeForbidden)
	_, err = ca.GC(ctx)
	requireCode(t, err, api.CodeForbidden)
	_, err = ca.Apply(ctx, "a", true)
	requireCode(t, err, api.CodeForbidden)
	_, err = ca.Mount(ctx, "a", api.MountRequest{Dir: root})
	requireCode(t, err, api.CodeForbidden)
	_, err = ca.Metrics(ctx)
	requireCode(t, err, api.CodeForbidden)
	_, err = ca.SetTTL(ctx, "a", "never")
	requireCode(t, err, api.CodeForbidden)

	// Its own session's endpoints work.
	_, err = ca.Session(ctx, "a")
	require.NoError(t, err)
	snapA, err := ca.CreateSnapshot(ctx, "a", "mine")
	require.NoError(t, err)
	snapB, err := cb.CreateSnapshot(ctx, "b", "theirs")
	require.NoError(t, err)
	_, err = ca.Restore(ctx, "a", snapB.ID)
	requireCode(t, err, api.CodeNotFound) // another session's snapshot: as if there were none
	_, err = ca.SessionDiff(ctx, "a", client.DiffQuery{From: snapB.ID})
	requireCode(t, err, api.CodeNotFound)
	_, err = ca.Restore(ctx, "a", snapA.ID)
	require.NoError(t, err)
	up, err := ca.PutBlob(ctx, strings.NewReader("blob"))
	require.NoError(t, err)
	rc, _, err := ca.GetBlob(ctx, up.BlobRef)
	require.NoError(t, err)
	rc.Close()

	// A session token may fork its session, keeping its policy.
	_, err = cb.ForkSession(ctx, "b", api.CreateSessionRequest{Policy: "aos"})
	requireCode(t, err, api.CodeForbidden)
	_, err = cb.ForkSession(ctx, "b", api.CreateSessionRequest{ID: "b2"})
	requireCode(t, err, api.CodeForbidden) // the daemon names a session token's forks
	fb, err := cb.ForkSession(ctx, "b", api.CreateSessionRequest{})
	require.NoError(t, err)
	require.Equal(t, "x07", fb.Session.Policy)
	b2 := fb.Session.ID
	cb2 := s.tcpClient(fb.Token)
	r := call(t, cb2, b2, "read_file", `{"path":"mine.txt"}`, "ok")
	require.Equal(t, "b\n", r["inline_text"])
	_, err = cb2.Session(ctx, "b")
	requireCode(t, err, api.CodeForbidden)

	// No token, or a wrong one: 401.
	_, err = s.tcpClient("").Session(ctx, "a")
	requireCode(t, err, api.CodeUnauthorized)
	_, err = s.tcpClient("vfsd_sess_forged").Session(ctx, "a")
	requireCode(t, err, api.CodeUnauthorized)
	resp, err := http.Get("http://" + s.srv.TCPAddr() + "/v1/sessions")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Equal(t, `Bearer realm="vfsd"`, resp.Header.Get("WWW-Authenticate"))
	require.Contains(t, string(body), `"code":"unauthorized"`)
	// Health needs none.
	_, err = s.tcpClient("").Health(ctx)
	require.NoError(t, err)

	// A closed session's token stops working.
	require.NoError(t, admin.CloseSession(ctx, "a"))
	_, err = ca.Session(ctx, "a")
	requireCode(t, err, api.CodeUnauthorized)
}

func TestGivenTokenAndToolset(t *testing.T) {
	cfg := newConfig(t)
	cfg.Listen = "127.0.0.1:0"
	cfg.Token = "vfsd_admin_given"
	s := start(t, cfg)
	ctx := context.Background()
	require.NoFileExists(t, filepath.Join(cfg.DataDir, "token"), "a given token is not written")
	admin := s.tcpClient("vfsd_admin_given")
	_, err := admin.CreateSession(ctx, api.CreateSessionRequest{ID: "a"})
	require.NoError(t, err)

	ts, err := s.d.Toolset("a")
	require.NoError(t, err)
	require.Equal(t, "a", ts.Session().ID())
	_, err = s.d.Toolset("zzz")
	requireCode(t, err, api.CodeNotFound)
}

func TestSecondDaemonOnTheDataDir(t *testing.T) {
	cfg := newConfig(t)
	start(t, cfg)
	_, err := daemon.New(context.Background(), cfg)
	require.ErrorContains(t, err, "another vfsd is using the data dir")
}
