// Package contracttest runs a contract's conformance cases: each case is
// one clause of the contract's document, a call and what the document says
// it returns. The same cases run through every transport a session offers
// (the Go API here; the HTTP API and MCP in tests/contracts).
package contracttest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/contract"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/tools/toolstest"
	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/policy"
)

// Case is one clause of a contract's document.
type Case struct {
	// Clause names the document's clause the case checks: the section and
	// a short quote, e.g. `§4 "read_all_v1 of a missing file fails with
	// FS_ERR_NOT_FOUND (60010)"`.
	Clause string
	// Files seed the session: path → content; a path ending in "/" is an
	// empty directory.
	Files map[string]string
	// Symlinks seed symlinks: path → target (after Files).
	Symlinks map[string]string
	// Modes set permission bits (e.g. 0o444): path → mode (after Files and
	// Symlinks).
	Modes map[string]uint32
	// Policy is the session's policy as data, exactly as the API takes it
	// on every transport: a preset's name as a JSON string (`"x07"`), or a
	// policy object in the fields of the contract's document, decoded by
	// contract.DecodePolicy ("" is the contract's default policy, else
	// vfsd's default).
	Policy string
	// Steps run in order on one session; most cases have one.
	Steps []Step
	// Host, when set, are files on the host (path → content; a path ending
	// in "/" an empty directory) under an allow-listed root made for the
	// case, which the session's Env.Host imports from.
	Host map[string]string
	// HostSymlinks are symlinks on the host, beside Host: path → target.
	HostSymlinks map[string]string
	// Init, when set, are the contract's session-creation options (JSON,
	// see contract.SessionInitializer), given to the session once it is
	// created; HostRootVar in it is replaced by the host root's path.
	Init string
	// WantInitError, when set, is text the error of Init must contain;
	// the steps then run on the session as the failed Init left it.
	WantInitError string
}

// Step is one call and its checks.
type Step struct {
	// Snapshot, when set, takes a snapshot of the session under this name
	// before the call; Restore, when set, returns the session to the
	// snapshot taken under that name (after Snapshot).
	Snapshot, Restore string
	// Tool and Params are the call (Params as JSON text; "" is {}). A step
	// without a Tool makes no call: it takes or restores a snapshot, or
	// checks the state.
	Tool   string
	Params string
	// WantError says the call must fail (Result.IsError).
	WantError bool
	// WantStatus, when set, must equal Result.Status.
	WantStatus string
	// WantBody, when set, is JSON that must be contained in the result's
	// body: every field it names must be there with the same value
	// (objects compared recursively, arrays and scalars exactly).
	WantBody string
	// Check, when set, runs on the result and the session's files after the
	// call, as SessionFiles shows them on every transport: "/path" →
	// content, directories as "/path/", symlinks as "-> target".
	Check func(t testing.TB, r contract.Result, files map[string]string)
	// State, when set, runs on the state the session's contract offers
	// (contract.StateReporter) after the call, as the transport gives it to
	// the orchestrator (JSON), with the session's files.
	State func(t testing.TB, state json.RawMessage, files map[string]string)
}

// Snapshotter is a Caller that can take and restore snapshots of its
// session (Step.Snapshot, Step.Restore).
type Snapshotter interface {
	TakeSnapshot(ctx context.Context, name string) error
	RestoreSnapshot(ctx context.Context, name string) error
}

// StateReader is a Caller that can read the state its session's contract
// offers (Step.State).
type StateReader interface {
	State(ctx context.Context) (json.RawMessage, error)
}

// Caller runs calls on one session through some transport.
type Caller interface {
	// Call runs one tool of the session's contract.
	Call(ctx context.Context, tool string, params json.RawMessage) (contract.Result, error)
	// Files returns the session's files: path → content, directories as
	// "path/".
	Files(ctx context.Context) (map[string]string, error)
}

// NewCaller makes a fresh session for a case through some transport.
type NewCaller func(t *testing.T, contractName string, c Case) Caller

// Run runs every case on a fresh session made by newCaller.
func Run(t *testing.T, contractName string, cases []Case, newCaller NewCaller) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Clause, func(t *testing.T) {
			caller := newCaller(t, contractName, c)
			ctx := context.Background()
			for i, s := range c.Steps {
				if s.Snapshot != "" || s.Restore != "" {
					sn, ok := caller.(Snapshotter)
					require.True(t, ok, "step %d: this transport's caller (%T) takes no snapshots", i, caller)
					if s.Snapshot != "" {
						require.NoError(t, sn.TakeSnapshot(ctx, s.Snapshot), "step %d: snapshot %s", i, s.Snapshot)
					}
					if s.Restore != "" {
						require.NoError(t, sn.RestoreSnapshot(ctx, s.Restore), "step %d: restore %s", i, s.Restore)
					}
				}
				var r contract.Result
				if s.Tool != "" {
					params := json.RawMessage(s.Params)
					if s.Params == "" {
						params = json.RawMessage("{}")
					}
					var err error
					r, err = caller.Call(ctx, s.Tool, params)
					require.NoError(t, err, "step %d: %s", i, s.Tool)
					require.NotEmpty(t, r.Body, "step %d: %s returned no body", i, s.Tool)
					require.Equal(t, s.WantError, r.IsError, "step %d: %s: is_error; body %s", i, s.Tool, r.Body)
					if s.WantStatus != "" {
						require.Equal(t, s.WantStatus, r.Status, "step %d: %s: status; body %s", i, s.Tool, r.Body)
					}
					if s.WantBody != "" {
						RequireContains(t, s.WantBody, r.Body, "step %d: %s", i, s.Tool)
					}
				}
				if s.Check == nil && s.State == nil {
					continue
				}
				files, err := caller.Files(ctx)
				require.NoError(t, err)
				if s.Check != nil {
					s.Check(t, r, files)
				}
				if s.State != nil {
					sr, ok := caller.(StateReader)
					require.True(t, ok, "step %d: this transport's caller (%T) reads no contract state", i, caller)
					st, err := sr.State(ctx)
					require.NoError(t, err, "step %d: the contract's state", i)
					s.State(t, st, files)
				}
			}
		})
	}
}

// RunGo runs the cases through the Go API: contract.Call on a session in
// a temporary repository.
func RunGo(t *testing.T, contractName string, cases []Case) {
	t.Helper()
	Run(t, contractName, cases, NewGoCaller)
}

// NewGoCaller makes a session in a temporary repository for c and calls
// the contract directly.
func NewGoCaller(t *testing.T, contractName string, c Case) Caller {
	t.Helper()
	k, err := contract.Lookup(contractName)
	require.NoError(t, err)
	pol, err := DecodePolicy(contractName, c.Policy)
	require.NoError(t, err, "the case's policy %s", c.Policy)
	env := toolstest.New(t, pol, c.Files)
	require.NoError(t, Seed(context.Background(), env.S, c))
	g := &goCaller{t: t, k: k, env: env, cenv: &contract.Env{
		SessionID: env.S.ID(), Session: env.S, Tools: env.Tools, Policy: env.Tools.Policy(), Blobs: env.Repo.Blobs(),
	}}
	root := ""
	if c.Host != nil || c.Init != "" {
		root = t.TempDir()
		writeHostFiles(t, root, c.Host)
		writeHostSymlinks(t, root, c.HostSymlinks)
		g.cenv.Host = NewImportHost(t, []string{root}, env.Tools.Policy().ASCIIOnly, env.Repo, env.S)
	}
	if c.Init != "" {
		init, ok := k.(contract.SessionInitializer)
		require.True(t, ok, "contract %s takes no session-creation options (it is not a contract.SessionInitializer)", contractName)
		err := init.InitSession(context.Background(), g.cenv, json.RawMessage(strings.ReplaceAll(c.Init, HostRootVar, root)))
		if c.WantInitError != "" {
			require.ErrorContains(t, err, c.WantInitError)
		} else {
			require.NoError(t, err, "session options %s", c.Init)
		}
	}
	return g
}

// DecodePolicy is the policy a session of the contract gets for a case's
// Policy, as the daemon decides it: a preset by its name, an object by
// contract.DecodePolicy, none the contract's default (PolicyDefaulter)
// or vfsd's.
func DecodePolicy(contractName, raw string) (*policy.Policy, error) {
	raw = strings.TrimSpace(raw)
	switch {
	case raw == "":
		k, err := contract.Lookup(contractName)
		if err != nil {
			return nil, err
		}
		if d, ok := k.(contract.PolicyDefaulter); ok {
			return d.DefaultPolicy(), nil
		}
		return policy.Default(), nil
	case raw[0] == '"':
		var name string
		if err := json.Unmarshal([]byte(raw), &name); err != nil {
			return nil, fmt.Errorf("policy %s: %w", raw, err)
		}
		return policy.Preset(name)
	}
	return contract.DecodePolicy(contractName, json.RawMessage(raw))
}

// PolicyRequest puts a case's Policy into a session-creation request's
// fields: a preset's name into preset, an object into object.
func PolicyRequest(raw string) (preset string, object json.RawMessage, err error) {
	raw = strings.TrimSpace(raw)
	switch {
	case raw == "":
		return "", nil, nil
	case raw[0] == '"':
		err = json.Unmarshal([]byte(raw), &preset)
		return preset, nil, err
	}
	return "", json.RawMessage(raw), nil
}

type goCaller struct {
	t     testing.TB
	k     contract.Contract
	env   *toolstest.Env
	cenv  *contract.Env
	snaps map[string]string // snapshot names → IDs
}

func (g *goCaller) Call(ctx context.Context, tool string, params json.RawMessage) (contract.Result, error) {
	return g.k.Call(ctx, g.cenv, tool, params), nil
}

func (g *goCaller) Files(ctx context.Context) (map[string]string, error) {
	return Snapshot(ctx, g.env)
}

func (g *goCaller) TakeSnapshot(ctx context.Context, name string) error {
	snap, err := g.env.Repo.Snapshot(ctx, g.env.S, name)
	if err != nil {
		return err
	}
	if g.snaps == nil {
		g.snaps = map[string]string{}
	}
	g.snaps[name] = snap.ID
	return nil
}

func (g *goCaller) RestoreSnapshot(ctx context.Context, name string) error {
	id, ok := g.snaps[name]
	if !ok {
		return fmt.Errorf("no snapshot %q was taken", name)
	}
	return g.env.Repo.Restore(ctx, g.env.S, id)
}

// State is the contract's state with its files on disk: the Go API has no
// daemon to mount the session, so the session is materialised into a new
// directory for each read (snapshot.Repo.Materialize), as the daemon does
// where it cannot mount.
func (g *goCaller) State(ctx context.Context) (json.RawMessage, error) {
	sr, ok := g.k.(contract.StateReporter)
	if !ok {
		return nil, fmt.Errorf("contract %s offers no state", g.k.Name())
	}
	dir := filepath.Join(g.t.TempDir(), "root")
	if _, err := g.env.Repo.Materialize(ctx, snapshot.Source{Session: g.env.S}, dir); err != nil {
		return nil, err
	}
	st, err := sr.State(ctx, g.cenv, dir)
	if err != nil {
		return nil, err
	}
	return json.Marshal(st)
}

// Snapshot returns a session's files as path → content, directories as
// "path/".
func Snapshot(ctx context.Context, env *toolstest.Env) (map[string]string, error) {
	return SessionFiles(ctx, env.S)
}

// RequireContains fails t unless want (JSON) is contained in got (JSON):
// every field of a want object must be in the got object with a contained
// value; arrays and scalars must be equal.
func RequireContains(t testing.TB, want string, got json.RawMessage, msgAndArgs ...any) {
	t.Helper()
	var w, g any
	require.NoError(t, json.Unmarshal([]byte(want), &w), "WantBody is not JSON: %s", want)
	require.NoError(t, json.Unmarshal(got, &g), "body is not JSON: %s", got)
	if !contains(w, g) {
		require.Failf(t, "body does not contain the expected fields", "want ⊆ %s\ngot %s\n%v", want, got, msgAndArgs)
	}
}

func contains(want, got any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok || !contains(wv, gv) {
				return false
			}
		}
		return true
	default:
		wb, _ := json.Marshal(want)
		gb, _ := json.Marshal(got)
		return string(wb) == string(gb)
	}
}

// Seed adds a case's symlinks and modes to a session its files are in.
func Seed(ctx context.Context, s *vfs.Session, c Case) error {
	for _, p := range slices.Sorted(maps.Keys(c.Symlinks)) {
		q, err := vfs.ParsePath(p)
		if err != nil {
			return fmt.Errorf("seed symlink %q: %w", p, err)
		}
		if _, err := s.Symlink(ctx, c.Symlinks[p], q); err != nil {
			return fmt.Errorf("seed symlink %q: %w", p, err)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(c.Modes)) {
		q, err := vfs.ParsePath(p)
		if err != nil {
			return fmt.Errorf("seed mode of %q: %w", p, err)
		}
		if _, err := s.Chmod(ctx, q, vfs.ModeFromUnix(c.Modes[p])); err != nil {
			return fmt.Errorf("seed mode of %q: %w", p, err)
		}
	}
	return nil
}
