package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
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

// callTool runs one tool of session e's contract, counts it, and appends
// it to the session's call log. It never fails: every failure is a result
// in the contract's shape.
func (d *Daemon) callTool(ctx context.Context, e *entry, name string, params json.RawMessage, transport string) contract.Result {
	start := time.Now()
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
	env := &contract.Env{SessionID: e.id, Session: e.s, Tools: e.ts, Policy: e.pol,
		Blobs: sessionBlobs{BlobStore: d.repo.Blobs(), d: d, e: e}}
	if len(d.cfg.AllowRoots) > 0 {
		env.Host = daemonHost{d: d, e: e}
	}
	return env
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
}

// Import imports req.HostPath into the session at req.MountPath: it stages
// the host folder as a snapshot, then writes its files into the session in
// one batch (all or nothing). Symlinks come in as symlinks after the batch;
// devices, fifos and sockets are left out.
func (h daemonHost) Import(ctx context.Context, req contract.ImportRequest) (contract.ImportResult, error) {
	d, e := h.d, h.e
	e.hostMu.Lock()
	defer e.hostMu.Unlock()
	im, err := d.importer(e.pol.ASCIIOnly)
	if err != nil {
		return contract.ImportResult{}, err
	}
	mountPath := req.MountPath
	if mountPath == "" {
		mountPath = "/"
	}
	snap, _, err := im.Import(ctx, d.repo, []hostmount.Mount{{HostPath: req.HostPath, MountPath: mountPath,
		Include: req.Include, Exclude: req.Exclude, MaxBytes: req.MaxBytes, FollowSymlinks: req.FollowSymlinks}}, nil)
	if err != nil {
		return contract.ImportResult{}, err
	}
	defer func() { // the staging snapshot is only a means
		_, _ = d.repo.DeleteSnapshots(context.WithoutCancel(ctx), []string{snap.ID}, snapshot.DeleteOptions{})
	}()
	top, err := vfs.ParsePath(mountPath)
	if err != nil {
		return contract.ImportResult{}, err
	}
	var res contract.ImportResult
	b := e.s.NewBatch()
	type link struct {
		p      vfs.Path
		target string
	}
	var links []link
	blobs := d.repo.Blobs()
	err = snap.Tree.Walk(top, func(p vfs.Path, n vfs.Node) error {
		switch {
		case n.IsDir():
			if p.IsRoot() {
				return nil
			}
			return b.Mkdir(p, vfs.MkdirOptions{Parents: true, Perm: n.Mode.Perm()})
		case n.IsSymlink():
			links = append(links, link{p, n.Target})
			return nil
		case n.Kind != vfs.KindFile:
			return nil
		}
		blob, err := blobs.Open(ctx, n.Blob)
		if err != nil {
			return err
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
		return contract.ImportResult{}, err
	}
	var errs []error
	for _, l := range links {
		if _, err := e.s.Symlink(ctx, l.target, l.p); err != nil && !errors.Is(err, vfs.ErrExists) {
			errs = append(errs, err)
		}
	}
	return res, errors.Join(errs...)
}
