package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
)

// TestPolicyObjects: a session's policy may be given as data. An unknown
// field is refused with its name (an AOS-style fs_roots meant to confine
// the session once slipped through, and a read outside the intended root
// returned ok); vfsd's fields set roots, caps and allowed operations on a
// base preset; the policy survives a restart and passes to forks, and a
// session token cannot fork into another one.
func TestPolicyObjects(t *testing.T) {
	cfg := newConfig(t)
	cfg.Listen = "127.0.0.1:0"
	s := start(t, cfg)
	ctx := context.Background()

	// Over the wire: "policy" as an object.
	post := func(body string) (int, []byte) {
		req, err := http.NewRequest(http.MethodPost, "http://"+s.srv.TCPAddr()+"/v1/sessions", bytes.NewBufferString(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+s.d.AdminToken())
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	code, body := post(`{"id":"aos-style","policy":{"fs_roots":["src"]}}`)
	require.Equal(t, http.StatusBadRequest, code, "%s", body)
	require.Contains(t, string(body), `unknown field \"fs_roots\"`)
	require.Contains(t, string(body), "read_roots")
	_, err := s.c.Session(ctx, "aos-style")
	requireCode(t, err, api.CodeNotFound)

	for _, c := range []struct{ body, msg string }{
		{`{"policy":{"caps":{"max_scan_files":1}}}`, `unknown field \"caps.max_scan_files\"`},
		{`{"policy":{"allowed_ops":["reed_file"]}}`, `\"reed_file\", which is no operation of the vfsd contract`},
		{`{"policy":{"base":"nope"}}`, `unknown policy preset \"nope\"`},
		{`{"policy":7}`, `must be a preset's name`},
		{`{"policy":"nope"}`, `unknown policy preset \"nope\"`},
	} {
		code, body := post(c.body)
		require.Equal(t, http.StatusBadRequest, code, "%s: %s", c.body, body)
		require.Contains(t, string(body), c.msg, c.body)
	}

	code, body = post(`{"id":"confined","policy":{"base":"default","name":"src-only","read_roots":["src"],"write_roots":["src/out"],` +
		`"allowed_ops":["read_file","write_file","list_directory"],"caps":{"max_read_bytes":4}}}`)
	require.Equal(t, http.StatusCreated, code, "%s", body)
	var created api.CreateSessionResponse
	require.NoError(t, json.Unmarshal(body, &created))
	require.Equal(t, "src-only", created.Session.Policy)
	require.Contains(t, string(created.Session.EffectivePolicy), `"read_roots":["src"]`)

	check := func(id string) {
		t.Helper()
		call(t, s.c, id, "write_file", `{"path":"src/out/a.txt","inline_text":"hello"}`, "ok")
		call(t, s.c, id, "write_file", `{"path":"src/b.txt","inline_text":"x"}`, "forbidden")
		call(t, s.c, id, "read_file", `{"path":"etc/passwd"}`, "forbidden")
		r := call(t, s.c, id, "read_file", `{"path":"src/out/a.txt"}`, "ok")
		require.Equal(t, "hell", r["inline_text"], "max_read_bytes caps the read")
		call(t, s.c, id, "grep", `{"pattern":"x"}`, "forbidden")
	}
	check("confined")

	// Forks inherit it; a session token cannot fork into another policy.
	_, err = s.c.ForkSession(ctx, "confined", api.CreateSessionRequest{ID: "confined-fork"})
	require.NoError(t, err)
	check("confined-fork")
	tc := s.tcpClient(created.Token)
	fork, err := tc.ForkSession(ctx, "confined", api.CreateSessionRequest{})
	require.NoError(t, err)
	require.Equal(t, "src-only", fork.Session.Policy)
	_, err = tc.ForkSession(ctx, "confined", api.CreateSessionRequest{PolicyObject: json.RawMessage(`{"name":"src-only"}`)})
	requireCode(t, err, api.CodeForbidden)
	_, err = tc.ForkSession(ctx, "confined", api.CreateSessionRequest{Policy: "aos"})
	requireCode(t, err, api.CodeForbidden)

	// A policy object that is a preset as it stands is that preset.
	p, err := s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "plain", PolicyObject: json.RawMessage(`"x07"`)})
	require.NoError(t, err)
	require.Equal(t, "x07", p.Session.Policy)
	_, err = s.c.CreateSession(ctx, api.CreateSessionRequest{Policy: "x07", PolicyObject: json.RawMessage(`{}`)})
	require.Error(t, err, "not both")

	// The policy persists with the session.
	s.stop()
	s2 := start(t, cfg)
	after, err := s2.c.Session(ctx, "confined")
	require.NoError(t, err)
	require.Equal(t, "src-only", after.Policy)
	require.JSONEq(t, string(created.Session.EffectivePolicy), string(after.EffectivePolicy))
	call(t, s2.c, "confined", "read_file", `{"path":"etc/passwd"}`, "forbidden")
	call(t, s2.c, "confined", "write_file", `{"path":"src/b.txt","inline_text":"x"}`, "forbidden")
	r := call(t, s2.c, "confined", "read_file", `{"path":"src/out/a.txt"}`, "ok")
	require.Equal(t, "hell", r["inline_text"])
}
