package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
)

// wiRead reads path in a weakincentives session through its read_file
// tool: its content, or "" and false when the file is not there.
func wiRead(t *testing.T, c *client.Client, session, path string) (string, bool) {
	t.Helper()
	segs, err := json.Marshal(strings.Split(path, "/"))
	require.NoError(t, err)
	r, err := c.CallTool(context.Background(), session, "read_file", json.RawMessage(fmt.Sprintf(`{"path":{"segments":%s}}`, segs)))
	require.NoError(t, err)
	if r.IsError {
		return "", false
	}
	var res struct {
		Content string `json:"content"`
	}
	require.NoError(t, json.Unmarshal(r.JSON, &res), "%s", r.JSON)
	return res.Content, true
}

// TestForkCannotImportHostFolders is finding 4 of security round 3: a
// session token forking its session named a contract and contract options
// of its choosing, and the contract's initialiser imported them with the
// daemon's allowed roots — the session's own excluded *.env, another
// tenant's 0600 key. A fork made with a session token keeps its origin's
// contract and options (inherited when left out, forbidden when
// different), applies neither again, and no contract gets host access on
// a session the admin did not create.
func TestForkCannotImportHostFolders(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	write := func(rel, content string, mode os.FileMode) {
		full := filepath.Join(root, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), mode))
	}
	write("app/main.go", "package main\n", 0o644)
	write("app/secret.env", "TOKEN=hunter2\n", 0o600)
	write("tenant-b/id_key", "tenant b's private key\n", 0o600)

	cfg := newConfig(t)
	cfg.Listen = "127.0.0.1:0"
	cfg.AllowRoots = []string{root}
	s := start(t, cfg)
	admin := s.tcpClient(s.d.AdminToken())
	ctx := context.Background()

	// The admin stages the app without its secrets, for the weakincentives
	// contract; and a plain session of vfsd's own contract.
	opts := fmt.Sprintf(`{"mounts":[{"host_path":%q,"mount_path":"app","exclude_glob":["*.env"]}]}`, filepath.Join(root, "app"))
	w, err := admin.CreateSession(ctx, api.CreateSessionRequest{ID: "w", Contract: "weakincentives", ContractOptions: json.RawMessage(opts)})
	require.NoError(t, err)
	_, ok := wiRead(t, admin, "w", "app/secret.env")
	require.False(t, ok, "the admin's mount excludes *.env")
	plain, err := admin.CreateSession(ctx, api.CreateSessionRequest{ID: "plain"})
	require.NoError(t, err)
	wTok, plainTok := s.tcpClient(w.Token), s.tcpClient(plain.Token)

	attacks := []struct {
		name     string
		c        *client.Client
		origin   string
		contract string
		options  string
		leaked   string // the host file the attack would bring in
	}{
		{"the session's excluded .env", wTok, "w", "", fmt.Sprintf(`{"mounts":[{"host_path":%q,"mount_path":"app"}]}`, filepath.Join(root, "app")), "app/secret.env"},
		{"another tenant's key", wTok, "w", "weakincentives", fmt.Sprintf(`{"mounts":[{"host_path":%q,"mount_path":"b"}]}`, filepath.Join(root, "tenant-b")), "b/id_key"},
		{"a plain session turned weakincentives", plainTok, "plain", "weakincentives", fmt.Sprintf(`{"mounts":[{"host_path":%q,"mount_path":"b"}]}`, filepath.Join(root, "tenant-b")), "b/id_key"},
		{"another contract", wTok, "w", "vfsd", "", ""},
	}
	for _, tc := range attacks {
		t.Run(tc.name, func(t *testing.T) {
			f, err := tc.c.ForkSession(ctx, tc.origin, api.CreateSessionRequest{Contract: tc.contract, ContractOptions: json.RawMessage(tc.options)})
			if err == nil && tc.leaked != "" {
				content, ok := wiRead(t, admin, f.Session.ID, tc.leaked)
				t.Fatalf("a session token's fork imported host files with options of its choosing: %s present=%v content=%q", tc.leaked, ok, content)
			}
			requireCode(t, err, api.CodeForbidden)
			require.Contains(t, err.Error(), "a session token cannot")
			require.Contains(t, err.Error(), "leave ", "the message says what to do instead")
		})
	}

	// Inherited, not applied again: the fork starts from its origin's
	// state, which holds what the options did; a host file added since is
	// not imported, at the fork nor at its reset.
	_, err = admin.CallTool(ctx, "w", "write_file", json.RawMessage(`{"path":{"segments":["app","main.go"]},"content":"package main // edited\n","mode":"overwrite"}`))
	require.NoError(t, err)
	edited, ok := wiRead(t, admin, "w", "app/main.go")
	require.True(t, ok)
	write("app/later.go", "package main // later\n", 0o644)
	for _, given := range []string{"", " { \"mounts\" : " + mustJSON(t, opts, "mounts") + " } "} {
		f, err := wTok.ForkSession(ctx, "w", api.CreateSessionRequest{ContractOptions: json.RawMessage(given)})
		require.NoError(t, err, "options left out or the same as the origin's: %q", given)
		require.Equal(t, "weakincentives", f.Session.Contract)
		require.JSONEq(t, opts, string(f.Session.ContractOptions), "the fork keeps its origin's options")
		fc := s.tcpClient(f.Token)
		for _, check := range []string{"at the fork", "after its reset"} {
			got, ok := wiRead(t, fc, f.Session.ID, "app/main.go")
			require.True(t, ok, check)
			require.Equal(t, edited, got, "%s: the origin's state, not the host's", check)
			_, ok = wiRead(t, fc, f.Session.ID, "app/later.go")
			require.False(t, ok, "%s: the options were not applied again", check)
			_, err = fc.ResetSession(ctx, f.Session.ID)
			require.NoError(t, err)
		}
	}

	// A fork of a snapshot is the admin's only, by a token as by anyone.
	snap, err := wTok.CreateSnapshot(ctx, "w", "")
	require.NoError(t, err)
	_, err = wTok.ForkSnapshot(ctx, snap.ID, api.CreateSessionRequest{Contract: "weakincentives",
		ContractOptions: json.RawMessage(fmt.Sprintf(`{"mounts":[{"host_path":%q}]}`, filepath.Join(root, "tenant-b")))})
	requireCode(t, err, api.CodeForbidden)

	// The admin still forks with options of its choosing.
	f, err := admin.ForkSession(ctx, "w", api.CreateSessionRequest{ContractOptions: json.RawMessage(
		fmt.Sprintf(`{"mounts":[{"host_path":%q,"mount_path":"app"}]}`, filepath.Join(root, "app")))})
	require.NoError(t, err)
	got, ok := wiRead(t, admin, f.Session.ID, "app/later.go")
	require.True(t, ok, "the admin's own options are applied")
	require.Equal(t, "package main // later\n", got)
}

// mustJSON returns the JSON of field key of the object raw.
func mustJSON(t *testing.T, raw, key string) string {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(raw), &m))
	return string(m[key])
}

// TestTokenForksHaveNoHostAccess: a fork made with a session token never
// reaches the host through its contract, whatever its metadata says — a
// fork the daemon's earlier code let a token give options to keeps them in
// its metadata, and its reset replayed them with the allowed roots.
func TestTokenForksHaveNoHostAccess(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "tenant-b"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "tenant-b", "id_key"), []byte("key"), 0o600))
	cfg := newConfig(t)
	cfg.Listen = "127.0.0.1:0"
	cfg.AllowRoots = []string{root}
	s := start(t, cfg)
	ctx := context.Background()
	o, err := s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "o", Contract: "test_init"})
	require.NoError(t, err)
	f, err := s.tcpClient(o.Token).ForkSession(ctx, "o", api.CreateSessionRequest{})
	require.NoError(t, err)

	// The fork's metadata as the earlier code wrote it for a token that
	// gave options of its own.
	s.stop()
	path := filepath.Join(cfg.DataDir, "meta", f.Session.ID+".json")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	require.NotEmpty(t, m["lineage"], "a token's fork records the budget it draws on")
	m["contract_options"] = map[string]any{"mounts": []any{map[string]any{"HostPath": filepath.Join(root, "tenant-b"), "MountPath": "/b"}}}
	delete(m, "contract_options_inherited")
	b, err = json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, 0o600))

	s = start(t, cfg)
	_, err = s.tcpClient(f.Token).ResetSession(ctx, f.Session.ID)
	files := sessionFiles(t, s.c, f.Session.ID)
	require.NotContains(t, files, "/b/id_key", "a token's fork imported host files at its reset")
	requireCode(t, err, api.CodeInvalidInput)
	require.Contains(t, err.Error(), "no host access")
}
