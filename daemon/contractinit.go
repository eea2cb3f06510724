package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/contract"
	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/vfs"
)

// What the daemon does with the optional interfaces of a session's
// contract (package contract): it gives a contract.SessionInitializer its
// session-creation options when the session is created and again after
// every reset, gives a session of a contract.PolicyDefaulter the
// contract's policy when it names none, closes a session of a
// contract.SnapshotLifetime with its snapshots purged by default, and
// serves a contract.StateReporter's state.

// sessionContract sets the contract of the session m, being created as
// req says from src (nil unless it is a fork), and its contract options,
// and returns the contract. A fork speaks its origin's contract unless the
// request names one, and keeps its origin's options — on record only
// (OptionsInherited): it starts from the state they made — unless it
// gives options of its own, which are applied as a new session's are.
//
// A session token's fork (bySession) may do neither: the contract
// initialiser imports host folders with the daemon's allowed roots, which
// only the admin may choose (hostAccess). It may name its origin's own
// contract and options, which changes nothing.
func sessionContract(req api.CreateSessionRequest, src *entry, bySession bool, m *sessionMeta) (contract.Contract, error) {
	name := req.Contract
	var srcOpts json.RawMessage
	if src != nil {
		src.mu.Lock()
		srcOpts = src.meta.ContractOptions
		src.mu.Unlock()
		if name == "" {
			name = src.k.Name()
		}
	}
	k, err := lookupContract(name)
	if err != nil {
		return nil, err
	}
	m.Contract = k.Name()
	if src == nil {
		m.ContractOptions, err = contractOptions(k, req.ContractOptions)
		return k, err
	}
	if bySession && k.Name() != src.k.Name() {
		return nil, apiErr(api.CodeForbidden, "a session token cannot fork into another contract (%s, not %s's %s); leave contract out: the fork speaks its origin's (ask the admin for a session of another contract)", k.Name(), src.id, src.k.Name())
	}
	given, err := contractOptions(k, req.ContractOptions)
	switch {
	case bySession && given != nil && !sameJSON(given, srcOpts):
		return nil, apiErr(api.CodeForbidden, "a session token cannot give a fork contract_options of its own: they may import host folders, which only the admin chooses; leave contract_options out: the fork keeps %s's (ask the admin for a session with other options)", src.id)
	case err != nil:
		return nil, err
	case given != nil && !bySession:
		m.ContractOptions = given // the admin's: applied to the fork
	case k.Name() == src.k.Name():
		m.ContractOptions, m.OptionsInherited = srcOpts, len(srcOpts) > 0
	}
	return k, nil
}

// sameJSON reports whether a and b are the same JSON value (both absent
// included), whatever their spacing and key order.
func sameJSON(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// contractOptions checks the contract options of a new session: none, or
// a JSON object for a contract that takes options.
func contractOptions(k contract.Contract, raw json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return nil, nil
	}
	if _, ok := k.(contract.SessionInitializer); !ok {
		return nil, apiErr(api.CodeInvalidInput, "contract %s takes no contract_options; leave them out, or choose a contract that takes them", k.Name())
	}
	if trimmed[0] != '{' || !json.Valid(trimmed) {
		return nil, apiErr(api.CodeInvalidInput, "contract_options must be a JSON object (the %s contract's session options), not %.40s", k.Name(), trimmed)
	}
	return json.RawMessage(bytes.Clone(trimmed)), nil
}

// initContract gives session e's contract its session options, if it is
// a contract.SessionInitializer: on the fresh session s with toolset ts
// (not yet published, at creation) or on e's own (after a reset, holding
// e.hostMu: hostLocked). A failure is an API error naming the contract;
// the caller discards the session (creation) or reports the reset failed.
//
// Options a fork inherited are not applied (sessionMeta.OptionsInherited).
// The contract reaches the host only where hostAccess allows it.
func (d *Daemon) initContract(ctx context.Context, e *entry, s *vfs.Session, ts *tools.Toolset, hostLocked bool) error {
	init, ok := e.k.(contract.SessionInitializer)
	if !ok {
		return nil
	}
	e.mu.Lock()
	opts, inherited, host := e.meta.ContractOptions, e.meta.OptionsInherited, d.hostAccess(e.meta)
	e.mu.Unlock()
	if inherited {
		return nil
	}
	env := d.contractEnvFor(e, s, ts)
	if host {
		env.Host = daemonHost{d: d, e: e, s: s, locked: hostLocked}
	}
	if err := init.InitSession(ctx, env, opts); err != nil {
		return initError(e.k, err)
	}
	return nil
}

// hostAccess reports whether the contract of the session m may import
// host folders (contract.Env.Host): only while its initialiser runs
// (initContract: at creation and at resets, with the options the session
// was created with), only with allowed roots configured, and only on a
// session the admin created. A fork made with a session token (m.Lineage)
// never has it, whatever its metadata says of its options: what a token
// asks for must not reach the daemon's allowed roots.
func (d *Daemon) hostAccess(m *sessionMeta) bool {
	return len(d.cfg.AllowRoots) > 0 && m.Lineage == ""
}

// initError classifies a failed contract initialisation: an API error
// keeps its code, an engine error its engine code (too_large, forbidden
// ...), a cancelled request is unavailable, anything else — the
// contract's own refusal of its options — invalid_input.
func initError(k contract.Contract, err error) error {
	const format = "contract %s: the session options failed: %s"
	var ae *api.Error
	var ve *vfs.Error
	switch {
	case errors.As(err, &ae):
		return apiErr(ae.Code, format, k.Name(), err.Error())
	case errors.As(err, &ve):
		return apiErr(vfsCode(ve.Code), format, k.Name(), err.Error())
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return apiErr(api.CodeUnavailable, format, k.Name(), err.Error())
	}
	return apiErr(api.CodeInvalidInput, format, k.Name(), err.Error())
}

// contractEnvFor is the Env of session e's contract on session s and
// toolset ts, without host access (initContract adds it where allowed).
func (d *Daemon) contractEnvFor(e *entry, s *vfs.Session, ts *tools.Toolset) *contract.Env {
	return &contract.Env{SessionID: e.id, Session: s, Tools: ts, Policy: e.pol,
		Blobs: sessionBlobs{BlobStore: d.repo.Blobs(), d: d, e: e}}
}

// purgeByDefault reports whether closing session e without ?purge=
// deletes the snapshots taken of it: its contract says so
// (contract.SnapshotLifetime).
func purgeByDefault(e *entry) bool {
	sl, ok := e.k.(contract.SnapshotLifetime)
	return ok && sl.PurgeSnapshotsOnClose()
}

// ContractState is the state session id's contract offers
// (contract.StateReporter), as the contract renders it.
func (d *Daemon) ContractState(ctx context.Context, id string) (any, error) {
	e, err := d.lookup(id)
	if err != nil {
		return nil, err
	}
	sr, ok := e.k.(contract.StateReporter)
	if !ok {
		return nil, apiErr(api.CodeNotFound, "session %s speaks the %s contract, which offers no state; read its files with the session's tools", e.id, e.k.Name())
	}
	// Programs may have changed the session through its mounts: the state
	// (and a copy written out for it) takes that in.
	if err := d.settle(ctx, e); err != nil {
		return nil, err
	}
	rootPath, err := d.rootDir(ctx, e)
	if err != nil {
		return nil, err
	}
	st, err := sr.State(ctx, d.contractEnv(e), rootPath)
	if err != nil {
		return nil, fmt.Errorf("session %s: contract %s state: %w", e.id, e.k.Name(), err)
	}
	return st, nil
}

// initNewSession applies the contract options of session e, being
// created, to its fresh session s (not yet attached to e).
func (d *Daemon) initNewSession(ctx context.Context, e *entry, s *vfs.Session) error {
	if _, ok := e.k.(contract.SessionInitializer); !ok {
		return nil
	}
	ts, err := tools.New(s, tools.Options{Policy: e.pol, Blobs: sessionBlobs{BlobStore: d.repo.Blobs(), d: d, e: e}, Checkpoints: checkpointer{d: d, e: e}})
	if err != nil {
		return fmt.Errorf("session %s: %w", e.id, err)
	}
	return d.initContract(ctx, e, s, ts, false)
}
