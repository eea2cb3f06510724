package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
	"github.com/vfsd/vfsd/contract"
	"github.com/vfsd/vfsd/contract/contracttest"
	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/policy"
)

// initContract is a contract for these tests that uses every optional
// interface the daemon honours: it takes session options (writes, host
// mounts, a forced failure), defaults to the x07 policy, purges snapshots
// on close and reports a state.
type initContract struct{}

func init() { contract.Register(initContract{}) }

var (
	_ contract.SessionInitializer = initContract{}
	_ contract.PolicyDefaulter    = initContract{}
	_ contract.SnapshotLifetime   = initContract{}
	_ contract.StateReporter      = initContract{}
)

func (initContract) Name() string   { return "test_init" }
func (initContract) Prompt() string { return "" }
func (initContract) Tools() []contract.Tool {
	obj := json.RawMessage(`{"type":"object"}`)
	return []contract.Tool{
		{Name: "files", Description: "the session's files", InputSchema: obj},
		{Name: "touch", Description: "writes path", InputSchema: obj},
	}
}

func (initContract) Call(ctx context.Context, env *contract.Env, tool string, params json.RawMessage) contract.Result {
	fail := func(err error) contract.Result {
		b, _ := json.Marshal(map[string]string{"error": err.Error()})
		return contract.Result{Body: b, Text: err.Error(), Status: "E", IsError: true}
	}
	switch tool {
	case "files":
		files, err := contracttest.SessionFiles(ctx, env.Session)
		if err != nil {
			return fail(err)
		}
		b, _ := json.Marshal(files)
		return contract.Result{Body: b, Text: string(b), Status: "OK"}
	case "touch":
		var p struct{ Path string }
		_ = json.Unmarshal(params, &p)
		if _, err := env.Session.WriteFile(ctx, vfs.MustPath(p.Path), strings.NewReader("touched"), vfs.WriteOptions{CreateParents: true}); err != nil {
			return fail(err)
		}
		return contract.Result{Body: json.RawMessage(`{}`), Status: "OK"}
	}
	return fail(errors.New("no tool " + tool))
}

// initOptions are test_init's session options.
type initOptions struct {
	// Write are files to write: path → content.
	Write map[string]string `json:"write"`
	// Mounts are host imports, in order.
	Mounts []contract.ImportRequest `json:"mounts"`
	// Fail fails the initialisation with this message (after the writes).
	Fail string `json:"fail"`
	// RootsTo writes the host's roots, one a line, to this path.
	RootsTo string `json:"roots_to"`
}

func (initContract) InitSession(ctx context.Context, env *contract.Env, raw json.RawMessage) error {
	if len(raw) == 0 {
		return nil
	}
	var o initOptions
	if err := json.Unmarshal(raw, &o); err != nil {
		return err
	}
	for p, content := range o.Write {
		if _, err := env.Session.WriteFile(ctx, vfs.MustPath(p), strings.NewReader(content), vfs.WriteOptions{CreateParents: true}); err != nil {
			return err
		}
	}
	for _, m := range o.Mounts {
		if env.Host == nil {
			return errors.New("no host access")
		}
		if _, err := env.Host.Import(ctx, m); err != nil {
			return err
		}
	}
	if o.RootsTo != "" {
		hr, ok := env.Host.(contract.HostRoots)
		if !ok {
			return errors.New("the daemon's Host lists no roots")
		}
		if _, err := env.Session.WriteFile(ctx, vfs.MustPath(o.RootsTo), strings.NewReader(strings.Join(hr.Roots(), "\n")), vfs.WriteOptions{CreateParents: true}); err != nil {
			return err
		}
	}
	if o.Fail != "" {
		return errors.New(o.Fail)
	}
	return nil
}

func (initContract) DefaultPolicy() *policy.Policy {
	p, _ := policy.Preset(policy.PresetX07)
	return p
}

func (initContract) PurgeSnapshotsOnClose() bool { return true }

func (initContract) State(ctx context.Context, env *contract.Env, rootPath string) (any, error) {
	return map[string]any{"session": env.SessionID, "files": env.Session.Info().Files, "root_path": rootPath}, nil
}

// sessionFiles lists a test_init session's files through its "files" tool.
func sessionFiles(t testing.TB, c *client.Client, id string) map[string]string {
	t.Helper()
	r, err := c.CallTool(context.Background(), id, "files", nil)
	require.NoError(t, err)
	require.False(t, r.IsError, "%s", r.JSON)
	var files map[string]string
	require.NoError(t, json.Unmarshal(r.JSON, &files))
	return files
}

// TestContractOptions: a session's contract options run when it is
// created, before any call, are shown and kept, and run again after a
// reset; the contract's default policy applies when none is named.
func TestContractOptions(t *testing.T) {
	root1, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	root2, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(root2, "docs"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root2, "docs", "a.md"), []byte("A"), 0o644))
	cfg := newConfig(t)
	cfg.AllowRoots = []string{root2, root1} // Roots() keeps this order
	s := start(t, cfg)
	ctx := context.Background()

	opts := fmt.Sprintf(`{"write":{"/seed.txt":"seed"},"mounts":[{"HostPath":%q,"MountPath":"/docs"}],"roots_to":"/roots"}`, filepath.Join(root2, "docs"))
	resp, err := s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "s", Contract: "test_init", ContractOptions: json.RawMessage(opts)})
	require.NoError(t, err)
	require.Equal(t, policy.PresetX07, resp.Session.Policy, "the contract's default policy")
	require.JSONEq(t, opts, string(resp.Session.ContractOptions))
	want := map[string]string{"/seed.txt": "seed", "/docs/": "", "/docs/a.md": "A", "/roots": root2 + "\n" + root1}
	require.Equal(t, want, sessionFiles(t, s.c, "s"))

	// A named policy wins over the contract's default.
	named, err := s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "named", Contract: "test_init", Policy: policy.PresetDefault})
	require.NoError(t, err)
	require.Equal(t, policy.PresetDefault, named.Session.Policy)
	// vfsd's own contract keeps vfsd's default policy.
	plain, err := s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "plain"})
	require.NoError(t, err)
	require.Equal(t, policy.PresetDefault, plain.Session.Policy)

	// A reset returns to the start and replays the options: the host's
	// current content comes in.
	call(t, s.c, "s", "touch", `{"path":"/mine.txt"}`, "OK")
	require.NoError(t, os.WriteFile(filepath.Join(root2, "docs", "a.md"), []byte("A2"), 0o644))
	_, err = s.c.ResetSession(ctx, "s")
	require.NoError(t, err)
	want["/docs/a.md"] = "A2"
	require.Equal(t, want, sessionFiles(t, s.c, "s"))

	// The options survive a restart, and are replayed by a reset after it.
	s.stop()
	s = start(t, cfg)
	got, err := s.c.Session(ctx, "s")
	require.NoError(t, err)
	require.JSONEq(t, opts, string(got.ContractOptions))
	call(t, s.c, "s", "touch", `{"path":"/mine.txt"}`, "OK")
	_, err = s.c.ResetSession(ctx, "s")
	require.NoError(t, err)
	require.Equal(t, want, sessionFiles(t, s.c, "s"))

	// A fork starts from its origin's state and keeps its options on
	// record, without applying them again: not at the fork, not at its
	// reset (the host's newer content stays out).
	require.NoError(t, os.WriteFile(filepath.Join(root2, "docs", "a.md"), []byte("A3"), 0o644))
	fork, err := s.c.ForkSession(ctx, "s", api.CreateSessionRequest{ID: "f"})
	require.NoError(t, err)
	require.JSONEq(t, opts, string(fork.Session.ContractOptions))
	require.Equal(t, want, sessionFiles(t, s.c, "f"))
	_, err = s.c.ResetSession(ctx, "f")
	require.NoError(t, err)
	require.Equal(t, want, sessionFiles(t, s.c, "f"))

	// Options are refused where the contract takes none, and must be an
	// object.
	_, err = s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "x", ContractOptions: json.RawMessage(`{"a":1}`)})
	requireCode(t, err, api.CodeInvalidInput)
	require.Contains(t, err.Error(), "contract vfsd takes no contract_options")
	_, err = s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "x", Contract: "test_init", ContractOptions: json.RawMessage(`[1]`)})
	requireCode(t, err, api.CodeInvalidInput)
	require.Contains(t, err.Error(), "must be a JSON object")
}

// TestContractOptionsFail: a session whose contract options fail is not
// created — nothing of it is left — and the error keeps the failure's
// code; a reset whose replay fails says so.
func TestContractOptionsFail(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "docs"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "docs", "a.md"), []byte("12345"), 0o644))
	cfg := newConfig(t)
	cfg.AllowRoots = []string{root}
	s := start(t, cfg)
	ctx := context.Background()

	for _, tc := range []struct {
		name, opts, code, text string
	}{
		{"refused", `{"write":{"/a":"a"},"fail":"the options are wrong"}`, api.CodeInvalidInput, "the options are wrong"},
		{"over max_bytes", fmt.Sprintf(`{"mounts":[{"HostPath":%q,"MaxBytes":4}]}`, filepath.Join(root, "docs")), api.CodeTooLarge, "max_bytes"},
		{"outside the roots", `{"mounts":[{"HostPath":"/etc","MountPath":"/etc"}]}`, api.CodeForbidden, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "bad", Contract: "test_init", ContractOptions: json.RawMessage(tc.opts)})
			requireCode(t, err, tc.code)
			require.Contains(t, err.Error(), "contract test_init: the session options failed")
			require.Contains(t, err.Error(), tc.text)
			_, err = s.c.Session(ctx, "bad")
			requireCode(t, err, api.CodeNotFound)
			list, err := s.c.Sessions(ctx)
			require.NoError(t, err)
			require.Empty(t, list)
			snaps, err := s.c.Snapshots(ctx, "")
			require.NoError(t, err)
			require.Empty(t, snaps, "the staging snapshots are gone")
			// The ID is free again.
			_, err = s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "bad", Contract: "test_init"})
			require.NoError(t, err)
			require.NoError(t, s.c.CloseSession(ctx, "bad"))
		})
	}

	// A reset whose replay fails reports it, and the session stays usable.
	opts := fmt.Sprintf(`{"mounts":[{"HostPath":%q,"MountPath":"/docs","MaxBytes":5}]}`, filepath.Join(root, "docs"))
	_, err = s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "r", Contract: "test_init", ContractOptions: json.RawMessage(opts)})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(root, "docs", "a.md"), []byte("123456"), 0o644))
	_, err = s.c.ResetSession(ctx, "r")
	requireCode(t, err, api.CodeTooLarge)
	require.Contains(t, err.Error(), "the session was reset, but")
	require.Equal(t, map[string]string{}, sessionFiles(t, s.c, "r"))
	require.NoError(t, os.WriteFile(filepath.Join(root, "docs", "a.md"), []byte("1234"), 0o644))
	_, err = s.c.ResetSession(ctx, "r")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"/docs/": "", "/docs/a.md": "1234"}, sessionFiles(t, s.c, "r"))
}

// TestContractHostImportMerges: the daemon's Host merges an import into
// the session — files replaced, directories merged, an entry of another
// kind replaced — and an import that fails changes nothing.
func TestContractHostImportMerges(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	for p, content := range map[string]string{"m/keep/new.txt": "new", "m/same.txt": "host", "m/was-dir": "now a file", "m/d/x": "x"} {
		full := filepath.Join(root, "src", filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
	require.NoError(t, os.Symlink("same.txt", filepath.Join(root, "src", "m", "link")))
	cfg := newConfig(t)
	cfg.AllowRoots = []string{root}
	s := start(t, cfg)
	ctx := context.Background()

	opts := fmt.Sprintf(`{"write":{"/m/keep/old.txt":"old","/m/same.txt":"session","/m/was-dir/inner":"i","/m/link":"a file","/m/d":"a file"},
		"mounts":[{"HostPath":%q,"MountPath":"/"}]}`, filepath.Join(root, "src"))
	_, err = s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "s", Contract: "test_init", Policy: policy.PresetDefault, ContractOptions: json.RawMessage(opts)})
	require.NoError(t, err)
	require.Equal(t, map[string]string{
		"/m/": "", "/m/keep/": "", "/m/keep/old.txt": "old", "/m/keep/new.txt": "new",
		"/m/same.txt": "host", "/m/was-dir": "now a file", "/m/link": "-> same.txt",
		"/m/d/": "", "/m/d/x": "x",
	}, sessionFiles(t, s.c, "s"))

	// All or nothing: a mount over its cap imports none of its files.
	opts = fmt.Sprintf(`{"write":{"/a":"a"},"mounts":[{"HostPath":%q,"MountPath":"/docs"},{"HostPath":%q,"MountPath":"/big","MaxBytes":3}]}`,
		filepath.Join(root, "src", "m", "d"), filepath.Join(root, "src", "m"))
	_, err = s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "t", Contract: "test_init", Policy: policy.PresetDefault, ContractOptions: json.RawMessage(opts)})
	requireCode(t, err, api.CodeTooLarge)
}

// TestContractPurgeOnClose: closing a session of a contract that purges
// by default deletes the snapshots taken of it unless ?purge=false; other
// sessions keep theirs unless ?purge=true.
func TestContractPurgeOnClose(t *testing.T) {
	cfg := newConfig(t)
	cfg.JanitorInterval = 50 * time.Millisecond
	s := start(t, cfg)
	ctx := context.Background()
	snapOf := func(id, contractName string) string {
		_, err := s.c.CreateSession(ctx, api.CreateSessionRequest{ID: id, Contract: contractName})
		require.NoError(t, err)
		if contractName == "test_init" {
			call(t, s.c, id, "touch", `{"path":"/f"}`, "OK")
		}
		snap, err := s.c.CreateSnapshot(ctx, id, "mine")
		require.NoError(t, err)
		return snap.ID
	}
	exists := func(snap string) bool {
		_, err := s.c.Snapshot(ctx, snap)
		if err != nil {
			requireCode(t, err, api.CodeNotFound)
			return false
		}
		return true
	}

	a := snapOf("a", "test_init")
	require.NoError(t, s.c.CloseSession(ctx, "a"))
	require.False(t, exists(a), "closed without ?purge=: the contract purges")

	b := snapOf("b", "test_init")
	require.NoError(t, s.c.CloseSessionWith(ctx, "b", false))
	require.True(t, exists(b), "?purge=false keeps them")

	c := snapOf("c", "")
	require.NoError(t, s.c.CloseSession(ctx, "c"))
	require.True(t, exists(c), "vfsd's contract keeps them by default")
	d := snapOf("d", "")
	require.NoError(t, s.c.CloseSessionWith(ctx, "d", true))
	require.False(t, exists(d))

	// Expiry ends a session too: its contract's default applies.
	e := snapOf("e", "test_init")
	_, err := s.c.SetTTL(ctx, "e", "1s")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return !exists(e) }, 30*time.Second, 100*time.Millisecond)
}

// TestContractState: GET /v1/sessions/{id}/contract/state serves the
// state of a contract that reports one; other contracts have none.
func TestContractState(t *testing.T) {
	s := start(t, newConfig(t))
	ctx := context.Background()
	_, err := s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "s", Contract: "test_init", ContractOptions: json.RawMessage(`{"write":{"/a":"a","/b":"b"}}`)})
	require.NoError(t, err)
	st, err := s.c.ContractState(ctx, "s")
	require.NoError(t, err)
	require.JSONEq(t, `{"session":"s","files":2,"root_path":""}`, string(st))
	// weakincentives' state is its document's VirtualFileSystem.
	wi, err := s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "wi", Contract: "weakincentives"})
	require.NoError(t, err)
	require.Equal(t, policy.PresetWeakIncentives, wi.Session.Policy, "the contract's default policy")
	call(t, s.c, "wi", "write_file", `{"path":{"segments":["b","x.txt"]},"content":"x"}`, "ok")
	call(t, s.c, "wi", "write_file", `{"path":"a.txt","content":"aa"}`, "ok")
	st, err = s.c.ContractState(ctx, "wi")
	require.NoError(t, err)
	var vfsState struct {
		RootPath string `json:"root_path"`
		Files    []struct {
			Path      struct{ Segments []string } `json:"path"`
			SizeBytes int64                       `json:"size_bytes"`
		} `json:"files"`
	}
	require.NoError(t, json.Unmarshal(st, &vfsState), "%s", st)
	require.DirExists(t, vfsState.RootPath, "every weakincentives session has its directory on disk (TestRootDir*)")
	require.Len(t, vfsState.Files, 2, "%s", st)
	require.Equal(t, []string{"a.txt"}, vfsState.Files[0].Path.Segments)
	require.Equal(t, int64(2), vfsState.Files[0].SizeBytes)
	require.Equal(t, []string{"b", "x.txt"}, vfsState.Files[1].Path.Segments)

	_, err = s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "plain"})
	require.NoError(t, err)
	_, err = s.c.ContractState(ctx, "plain")
	requireCode(t, err, api.CodeNotFound)
	require.Contains(t, err.Error(), "offers no state")
}
