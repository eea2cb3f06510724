package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/contract"
	_ "github.com/vfsd/vfsd/contract/all" // every contract a session may select
	"github.com/vfsd/vfsd/hostmount"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/vfs"
)

// lookupContract resolves a session's contract name ("" is the default)
// as an API error naming the choices.
func lookupContract(name string) (contract.Contract, error) {
	k, err := contract.Lookup(name)
	if err != nil {
		return nil, apiErr(api.CodeInvalidInput, "%v", err)
	}
	return k, nil
}

// internalResult is a call that failed before its contract ran: the
// session's mounts could not be settled. Its code is the API's for err:
// internal, or the code a tool gets for a change a mount made that the
// session refused (too_large over the quota, invalid_path), which the
// mount has undone: the next call goes through.
func internalResult(err error) contract.Result {
	code := APIError(err).Code
	if code == api.CodeInternal {
		code = "internal"
	}
	body, _ := json.Marshal(map[string]string{"status": "error", "error_code": code, "summary_text": err.Error()})
	return contract.Result{Body: body, Text: err.Error(), Status: code, IsError: true}
}

// fencedResult is a tool's answer on a session the fleet's gate refuses:
// the error code is the API error's (fenced).
func fencedResult(err error) contract.Result {
	code := APIError(err).Code
	body, _ := json.Marshal(map[string]string{"status": "error", "error_code": code, "summary_text": err.Error()})
	return contract.Result{Body: body, Text: err.Error(), Status: code, IsError: true}
}

// callTool runs one tool of session e's contract, counts it, and appends
// it to the session's call log. It never fails: every failure is a result
// in the contract's shape.
func (d *Daemon) callTool(ctx context.Context, e *entry, name string, params json.RawMessage, transport string) contract.Result {
	done, err := d.enterCall(ctx, e)
	if err != nil {
		return fencedResult(err)
	}
	defer done()
	start := time.Now()
	// What programs changed through the session's mounts (an overlay's
	// upper directory) is taken in first: the call sees it, and its own
	// changes never race the mount's.
	if err := d.settle(ctx, e); err != nil {
		return internalResult(err)
	}
	// What programs wrote through a FUSE mount since is sealed into blobs,
	// so the state just before this call stays in the history (rewind).
	if err := e.s.SealUppers(ctx); err != nil {
		return internalResult(err)
	}
	before := e.s.Info().Seq
	res := e.k.Call(ctx, d.contractEnv(e), name, params)
	took := time.Since(start)
	if len(res.Body) == 0 { // a contract bug: the document's shape is unknown here
		res.Body = json.RawMessage(`{"status":"error","summary_text":"the contract returned no result body"}`)
		res.IsError = true
	}
	d.countCall(e, name, res.Status, took)
	if e.calls != nil {
		c := api.Call{Time: start.UTC(), DurationMs: float64(took.Microseconds()) / 1000, Contract: e.k.Name(),
			Tool: name, Transport: transport, Status: res.Status, IsError: res.IsError, Summary: res.Text,
			SeqBefore: before, Seq: e.s.Info().Seq}
		if _, err := e.calls.append(context.WithoutCancel(ctx), c, params, res.Body, e.blobs.add); err != nil {
			d.log.Error("call log: a tool call was not recorded", "session", e.id, "tool", name, "err", err)
		}
	}
	return res
}

// countCall counts a call in the metrics: under its name for vfsd's own
// contract, as "contract.tool" for a tool of another, "unknown" otherwise.
func (d *Daemon) countCall(e *entry, name, status string, took time.Duration) {
	if e.k.Name() == contract.Default {
		d.metrics.toolCall(name, status, took)
		return
	}
	label := "unknown"
	if e.toolNames[name] {
		label = e.k.Name() + "." + name
	}
	d.metrics.observeCall(label, status, took)
}

// contractEnv is what session e's contract works on.
func (d *Daemon) contractEnv(e *entry) *contract.Env {
	return d.contractEnvFor(e, e.s, e.ts)
}

// Transport names how a call reached the daemon, as its call log record
// says.
type Transport string

// The transports calls arrive by.
const (
	TransportHTTP Transport = "http"
	TransportMCP  Transport = "mcp"
)

// ToolCall is the answer to a tool call: the result in the contract's
// shape, and the contract that gave it.
type ToolCall struct {
	contract.Result
	// Contract is the session's contract.
	Contract string
}

// CallTool runs tool name of session id's contract with params, as a
// caller arriving by transport. asContract, when not "", is the contract
// the caller wrote the call for: a session of another contract refuses
// it without making the call. A call that fails is a result (IsError),
// not an error; the error is for a call that could not be made.
func (d *Daemon) CallTool(ctx context.Context, id, name string, params json.RawMessage, transport Transport, asContract string) (*ToolCall, error) {
	e, err := d.lookup(id)
	if err != nil {
		return nil, err
	}
	if err := checkContract(e, asContract); err != nil {
		return nil, err
	}
	if err := d.fleetGate(ctx, e); err != nil {
		return nil, err
	}
	res := d.callTool(ctx, e, name, params, string(transport))
	return &ToolCall{Result: res, Contract: e.k.Name()}, nil
}

// CheckContract refuses a call written for contract asContract ("" for
// any) on session id when the session speaks another.
func (d *Daemon) CheckContract(ctx context.Context, id, asContract string) error {
	e, err := d.lookup(id)
	if err != nil {
		return err
	}
	return checkContract(e, asContract)
}

func checkContract(e *entry, asContract string) error {
	if asContract != "" && asContract != e.k.Name() {
		return apiErr(api.CodeInvalidInput, "session %s speaks the %s contract, not %s, so the call was not made; write it as a %s call, or run it on a session created with contract %s", e.id, e.k.Name(), asContract, e.k.Name(), asContract)
	}
	return nil
}

// ListTools renders the tools of session id's contract in a profile's
// provider JSON (the session's profile when profile is ""), with its
// prompt section. For vfsd's own contract that is the profile's tools as
// always; for another contract, the contract's tools in the profile's
// format.
func (d *Daemon) ListTools(ctx context.Context, id, profile string) (*api.ToolList, error) {
	e, err := d.lookup(id)
	if err != nil {
		return nil, err
	}
	profile = e.profile(profile)
	if e.k.Name() == contract.Default {
		rendered, err := tools.RenderFor(profile, e.pol)
		if err != nil {
			return nil, apiErr(api.CodeInvalidInput, "%v", err)
		}
		return &api.ToolList{Profile: rendered.Profile, Tools: rendered.Tools, Prompt: rendered.Prompt, Contract: e.k.Name()}, nil
	}
	p, err := tools.LookupProfile(profile)
	if err != nil {
		return nil, apiErr(api.CodeInvalidInput, "%v", err)
	}
	defs, err := contractDefinitions(e.k)
	if err != nil {
		return nil, err
	}
	list, err := tools.RenderFormat(p.Format, defs)
	if err != nil {
		return nil, err
	}
	return &api.ToolList{Profile: profile, Tools: list, Prompt: e.k.Prompt(), Contract: e.k.Name()}, nil
}

// contractDefinitions turns a contract's tools into definitions a profile
// format renders.
func contractDefinitions(k contract.Contract) ([]tools.Definition, error) {
	var defs []tools.Definition
	for _, t := range k.Tools() {
		var s jsonschema.Schema
		if err := json.Unmarshal(t.InputSchema, &s); err != nil {
			return nil, fmt.Errorf("contract %s: tool %s: input schema: %w", k.Name(), t.Name, err)
		}
		defs = append(defs, tools.Definition{Name: t.Name, Description: t.Description, Params: &s})
	}
	return defs, nil
}

// profile is the tool profile asked for, else the session's.
func (e *entry) profile(asked string) string {
	if asked != "" {
		return asked
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.meta.Profile
}

// CallPageMax is the most calls one page of a call log holds.
const CallPageMax = callPageMax

// CallLog lists session id's tool calls after the since-th, at most limit
// (and at most CallPageMax).
func (d *Daemon) CallLog(ctx context.Context, id string, since uint64, limit int) (*api.CallList, error) {
	e, err := d.lookup(id)
	if err != nil {
		return nil, err
	}
	if e.calls == nil {
		return nil, apiErr(api.CodeInternal, "session %s has no call log (it could not be opened at start; see the daemon's log)", e.id)
	}
	if limit < 1 || limit > callPageMax {
		limit = callPageMax
	}
	return e.calls.list(since, limit)
}

// daemonHost imports host folders into a session for its contract (a
// mount tool, like weakincentives' HostMount): through the daemon's
// importer, so only the allow-listed roots are reachable, under the
// session's policy and quota.
type daemonHost struct {
	d *Daemon
	e *entry
	// s is the session imported into: e's, or the fresh session not yet
	// attached to e while it is being created.
	s *vfs.Session
	// locked says the caller holds e.hostMu (a reset replaying the
	// contract's options).
	locked bool
}

var (
	_ contract.Host      = daemonHost{}
	_ contract.HostRoots = daemonHost{}
)

// Roots returns the daemon's allowed roots, in the order they were
// configured (--allow-root).
func (h daemonHost) Roots() []string { return slices.Clone(h.d.cfg.AllowRoots) }

// Import merges req.HostPath into the session at req.MountPath ("" or "/"
// is the session root): it stages the host folder (or file) as a snapshot,
// then writes its tree into the session in one batch, all or nothing.
// Files at the same paths are replaced, directories merge; an entry of
// another kind in the way (a file where a directory comes, a directory
// where a file or symlink comes) is replaced. Symlinks come in as symlinks
// (left out with req.SkipSymlinks);
// devices, fifos and sockets are left out. A mount over req.MaxBytes fails
// with a vfs.Error of code CodeTooLarge and imports nothing.
func (h daemonHost) Import(ctx context.Context, req contract.ImportRequest) (contract.ImportResult, error) {
	d, e, s := h.d, h.e, h.s
	if !h.locked {
		e.hostMu.Lock()
		defer e.hostMu.Unlock()
	}
	im, err := d.importer(e.pol.ASCIIOnly)
	if err != nil {
		return contract.ImportResult{}, err
	}
	mountPath := req.MountPath
	if mountPath == "" {
		mountPath = "/"
	}
	top, err := vfs.ParsePath(mountPath)
	if err != nil {
		return contract.ImportResult{}, fmt.Errorf("import %s: mount path: %w", req.HostPath, err)
	}
	snap, _, err := im.Import(ctx, d.repo, []hostmount.Mount{{HostPath: req.HostPath, MountPath: mountPath,
		Include: req.Include, Exclude: req.Exclude, MaxBytes: req.MaxBytes, FollowSymlinks: req.FollowSymlinks}}, nil)
	if err != nil {
		return contract.ImportResult{}, err
	}
	defer func() { // the staging snapshot is only a means
		_, _ = d.repo.DeleteSnapshots(context.WithoutCancel(ctx), []string{snap.ID}, snapshot.DeleteOptions{})
	}()
	var res contract.ImportResult
	cur := s.Tree()
	b := s.NewBatch()
	// clear removes what is at p unless it is of the kind that merges
	// (a directory over a directory); a file over a file is replaced by
	// the write itself.
	clearFor := func(p vfs.Path, incoming vfs.Node) error {
		old, ok, err := cur.Lookup(p)
		switch {
		case err != nil:
			return err // unreadable is not absent: never import over it
		case !ok:
			return nil
		case old.IsDir() && incoming.IsDir():
			return nil
		case old.Kind == vfs.KindFile && incoming.Kind == vfs.KindFile:
			return nil
		}
		return b.Remove(p, vfs.RemoveOptions{Recursive: old.IsDir()})
	}
	blobs := d.repo.Blobs()
	err = snap.Tree.Walk(top, func(p vfs.Path, n vfs.Node) error {
		if p.IsRoot() {
			return nil
		}
		switch {
		case n.IsDir():
			if err := clearFor(p, n); err != nil {
				return err
			}
			return b.Mkdir(p, vfs.MkdirOptions{Parents: true, Perm: n.Mode.Perm()})
		case n.IsSymlink():
			if req.SkipSymlinks {
				return nil
			}
			if err := clearFor(p, n); err != nil {
				return err
			}
			return b.Symlink(n.Target, p)
		case n.Kind != vfs.KindFile:
			return nil
		}
		if err := clearFor(p, n); err != nil {
			return err
		}
		blob, err := blobs.Open(ctx, n.Blob)
		if err != nil {
			return fmt.Errorf("import %s: %w", p, err)
		}
		defer blob.Close()
		res.Files++
		res.Bytes += blob.Size()
		return b.Write(ctx, p, io.NewSectionReader(blob, 0, blob.Size()), vfs.WriteOptions{CreateParents: true, Perm: n.Mode.Perm()})
	})
	if err != nil {
		b.Discard()
		return contract.ImportResult{}, err
	}
	if _, err := b.Commit(ctx); err != nil {
		return contract.ImportResult{}, fmt.Errorf("import %s into %s: %w", req.HostPath, top, err)
	}
	return res, nil
}
