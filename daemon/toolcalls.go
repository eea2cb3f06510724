package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
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

// Transports a call log record names.
const (
	transportHTTP = "http"
	transportMCP  = "mcp"
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
	code := toAPIError(err).Code
	if code == api.CodeInternal {
		code = "internal"
	}
	body, _ := json.Marshal(map[string]string{"status": "error", "error_code": code, "summary_text": err.Error()})
	return contract.Result{Body: body, Text: err.Error(), Status: code, IsError: true}
}

// callTool runs one tool of session e's contract, counts it, and appends
// it to the session's call log. It never fails: every failure is a result
// in the contract's shape.
func (d *Daemon) callTool(ctx context.Context, e *entry, name string, params json.RawMessage, transport string) contract.Result {
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

// handleToolCall runs one tool of the session's contract. The body is the
// tool's parameters; the response is the result's body — for vfsd's own
// contract the receipt exactly as tools.Response.JSON renders it — with
// 200 whatever its status (the Vfsd-Tool-Status header carries it). With
// text=true the body is {"receipt": ..., "text": ..., "status": ...,
// "is_error": ...}, the text being the rendering for a model.
func (d *Daemon) handleToolCall(w http.ResponseWriter, r *http.Request) error {
	e, err := d.lookup(r.PathValue("id"))
	if err != nil {
		return err
	}
	withText := false
	if v := r.URL.Query().Get("text"); v != "" {
		if withText, err = strconv.ParseBool(v); err != nil {
			return apiErr(api.CodeInvalidInput, "text=%q: use true or false", v)
		}
	}
	if c := r.URL.Query().Get("contract"); c != "" && c != e.k.Name() {
		return apiErr(api.CodeInvalidInput, "session %s speaks the %s contract, not %s, so the call was not made; write it as a %s call, or run it on a session created with contract %s", e.id, e.k.Name(), c, e.k.Name(), c)
	}
	params, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxJSONBytes))
	if err != nil {
		return err
	}
	res := d.callTool(r.Context(), e, r.PathValue("name"), json.RawMessage(params), transportHTTP)
	w.Header().Set(api.ToolStatusHeader, res.Status)
	w.Header().Set(api.ToolContractHeader, e.k.Name())
	if res.IsError {
		w.Header().Set(api.ToolErrorHeader, "true")
	}
	if withText {
		writeJSON(w, http.StatusOK, api.ToolResult{Receipt: res.Body, Text: res.Text, Status: res.Status, IsError: res.IsError})
		return nil
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(res.Body)
	return nil
}

// handleToolList renders the tools of the session's contract in a
// profile's provider JSON (the session's profile by default), with its
// prompt section. For vfsd's own contract that is the profile's tools as
// always; for another contract, the contract's tools in the profile's
// format.
func (d *Daemon) handleToolList(w http.ResponseWriter, r *http.Request) error {
	e, err := d.lookup(r.PathValue("id"))
	if err != nil {
		return err
	}
	profile := e.profile(r)
	if e.k.Name() == contract.Default {
		rendered, err := tools.Render(profile)
		if err != nil {
			return apiErr(api.CodeInvalidInput, "%v", err)
		}
		writeJSON(w, http.StatusOK, api.ToolList{Profile: rendered.Profile, Tools: rendered.Tools, Prompt: rendered.Prompt, Contract: e.k.Name()})
		return nil
	}
	p, err := tools.LookupProfile(profile)
	if err != nil {
		return apiErr(api.CodeInvalidInput, "%v", err)
	}
	defs, err := contractDefinitions(e.k)
	if err != nil {
		return err
	}
	list, err := tools.RenderFormat(p.Format, defs)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.ToolList{Profile: profile, Tools: list, Prompt: e.k.Prompt(), Contract: e.k.Name()})
	return nil
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

// profile is the tool profile a request asks for with ?profile=, else the
// session's.
func (e *entry) profile(r *http.Request) string {
	if p := r.URL.Query().Get("profile"); p != "" {
		return p
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.meta.Profile
}

// handleCallLog lists a session's tool calls: ?since=N (the calls after
// the N-th), ?limit= (at most callPageMax).
func (d *Daemon) handleCallLog(w http.ResponseWriter, r *http.Request) error {
	e, err := d.lookup(r.PathValue("id"))
	if err != nil {
		return err
	}
	q := r.URL.Query()
	var since uint64
	if v := q.Get("since"); v != "" {
		if since, err = strconv.ParseUint(v, 10, 64); err != nil {
			return apiErr(api.CodeInvalidInput, "since=%q: give a call number (0 for the first page)", v)
		}
	}
	limit := callPageMax
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return apiErr(api.CodeInvalidInput, "limit=%q: give a number from 1 to %d", v, callPageMax)
		}
		limit = min(n, callPageMax)
	}
	if e.calls == nil {
		return apiErr(api.CodeInternal, "session %s has no call log (it could not be opened at start; see the daemon's log)", e.id)
	}
	list, err := e.calls.list(since, limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, list)
	return nil
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
// where a file or symlink comes) is replaced. Symlinks come in as symlinks;
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
