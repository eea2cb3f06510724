package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/coord"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/policy"
)

// defaultProfile is the tool profile of sessions created without one.
const defaultProfile = "anthropic"

// parseTTL reads a TTL: "" is the daemon's default, "0" or "never" no
// expiry, anything else a Go duration of at least a second.
func (d *Daemon) parseTTL(s string) (time.Duration, error) {
	switch strings.TrimSpace(s) {
	case "":
		return d.cfg.DefaultTTL, nil
	case "0", "never":
		return 0, nil
	}
	ttl, err := time.ParseDuration(s)
	if err != nil || ttl < time.Second {
		return 0, apiErr(api.CodeInvalidInput, "ttl %q is not a duration of at least 1s (like \"90m\" or \"24h\"); use \"never\" for no expiry", s)
	}
	return ttl, nil
}

// expiry returns when a session with this TTL, starting now, expires.
func expiry(now time.Time, ttl time.Duration) time.Time {
	if ttl == 0 {
		return time.Time{}
	}
	return now.Add(ttl)
}

// createSession creates a session as req says: empty, staged from host
// mounts, from a snapshot, or forked from a live session. by is who asks: a
// session's own token may fork it, but not into a different policy or
// contract, nor with contract options of its own (sessionContract), nor
// under an ID of its choosing, nor to outlive it, nor beyond its fork budget
// (see forksLocked). progress, if not nil, hears how an import goes.
func (d *Daemon) createSession(ctx context.Context, req api.CreateSessionRequest, by Caller, progress progressFunc) (*api.CreateSessionResponse, error) {
	bySession := !by.Admin
	if bySession && req.Fork == "" {
		return nil, apiErr(api.CodeForbidden, "a session token may only fork its own session; ask the admin for anything else")
	}
	if bySession && req.ID != "" {
		// IDs are reused once a session is closed; letting a token pick one
		// would let it pose as a closed session to people and tools.
		return nil, apiErr(api.CodeForbidden, "a session token cannot choose a fork's id (%q); leave id out and the daemon picks one, which the response names", req.ID)
	}
	given := 0
	for _, set := range []bool{len(req.Mounts) > 0, req.Base != "", req.Fork != ""} {
		if set {
			given++
		}
	}
	if given > 1 {
		return nil, apiErr(api.CodeInvalidInput, "give at most one of mounts, base and fork: a session starts from host folders, a snapshot or another session")
	}
	id := req.ID
	if id == "" {
		id = snapshot.NewSessionID()
	} else if !snapshot.ValidSessionID(id) { // which also makes it a safe file name
		return nil, apiErr(api.CodeInvalidInput, "session id %q: use 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit", id)
	}
	ttl, err := d.parseTTL(req.TTL)
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	if len(req.Label) > d.cfg.MaxLabelBytes {
		return nil, apiErr(api.CodeInvalidInput, "label is %d bytes; the daemon takes at most %d (vfsd serve --max-label-bytes)", len(req.Label), d.cfg.MaxLabelBytes)
	}
	if req.KeepRef != "" && !coord.ValidRef(req.KeepRef) {
		return nil, apiErr(api.CodeInvalidInput, "keep_ref %q: use letters, digits, '_', '.', '-' and '/' (128 at most)", req.KeepRef)
	}
	m := &sessionMeta{ID: id, Created: now, Expires: expiry(now, ttl), Profile: req.Profile,
		Contract: req.Contract, UID: newSessionUID(), Label: req.Label, KeepRef: req.KeepRef}
	var src *entry
	if req.Fork != "" {
		if src, err = d.lookup(req.Fork); err != nil {
			return nil, err
		}
	}
	// The session's contract (a fork's: its origin's, unless the admin
	// names another) decodes a policy object in its document's names, and
	// gives the default policy when the request names none.
	k, err := sessionContract(req, src, bySession, m)
	if err != nil {
		return nil, err
	}
	pol, customPolicy, err := sessionPolicy(k.Name(), req, src)
	if err != nil {
		return nil, err
	}
	m.Policy, m.PolicyObject = pol.Name, customPolicy
	if src != nil {
		src.mu.Lock()
		if m.Profile == "" {
			m.Profile = src.meta.Profile
		}
		m.ForkOf, m.Import, m.Mounts = src.id, src.meta.Import, slices.Clone(src.meta.Mounts)
		m.Quota = inheritQuota(req.Quota, src.meta.Quota)
		srcExpires := src.meta.Expires
		if bySession {
			// A session token's fork never outlives its parent, and draws
			// on the fork budget its parent draws on.
			if !srcExpires.IsZero() && (m.Expires.IsZero() || m.Expires.After(srcExpires)) {
				m.Expires = srcExpires
			}
			m.Lineage, m.LineageOf = src.uid, src.id
			if src.lineage != "" {
				m.Lineage, m.LineageOf = src.lineage, src.meta.LineageOf
			}
		}
		src.mu.Unlock()
		if bySession && !samePolicy(pol, src.pol) {
			return nil, apiErr(api.CodeForbidden, "a session token cannot fork into another policy (%s, not %s's %s); ask the admin", m.Policy, src.id, src.pol.Name)
		}
	}
	if m.Profile == "" {
		m.Profile = defaultProfile
	}
	if _, err := tools.LookupProfile(m.Profile); err != nil {
		return nil, apiErr(api.CodeInvalidInput, "%v", err)
	}
	if src == nil {
		m.Quota = inheritQuota(req.Quota, nil)
	}
	if err := d.checkQuotaRequest(req.Quota, by, src, pol, m); err != nil {
		return nil, err
	}

	e := newEntry(id, pol, m, k)
	d.mu.Lock()
	if _, taken := d.sessions[id]; taken {
		d.mu.Unlock()
		return nil, apiErr(api.CodeAlreadyExists, "a session %q exists; choose another id, or leave id out to get a fresh one", id)
	}
	if limit := pol.Caps.MaxForks; m.Lineage != "" && limit > 0 {
		if n := d.forksLocked(m.Lineage); int64(n) >= limit {
			d.mu.Unlock()
			return nil, apiErr(api.CodeLimitExceeded, "the forks made with session tokens from session %s are at their bound: %d open, and its policy %s allows max_forks=%d; close a fork you no longer need, or ask the admin", m.LineageOf, n, pol.Name, limit)
		}
	}
	d.sessions[id] = e // reserved: policyHook finds it, lookup does not yet
	d.mu.Unlock()
	created := false
	// The fleet: an adoption brings its lease; a new session is claimed
	// (an ID another daemon owns is refused here, before any work).
	lease, adopted := ctx.Value(adoptKey{}).(*coord.Lease)
	claimLater := false
	if !adopted {
		if lease, claimLater, err = d.claimNew(ctx, id, m); err != nil {
			d.mu.Lock()
			delete(d.sessions, id)
			d.mu.Unlock()
			return nil, err
		}
	}
	defer func() {
		if !created && lease != nil && !adopted {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			if err := d.fleet.Release(rctx, lease); err != nil {
				d.log.Warn("fleet: could not release the claim of a session whose creation failed; another daemon may take it once its lease ends", "session", id, "err", err)
			}
			cancel()
		}
	}()
	defer func() {
		if !created {
			d.mu.Lock()
			delete(d.sessions, id)
			d.mu.Unlock()
			// What was staged for the session goes with it.
			d.releaseSnapshots(context.WithoutCancel(ctx), &sessionMeta{ID: id, Owned: m.Owned}, nil)
		}
	}()

	resp := &api.CreateSessionResponse{}
	if resp.Import, err = d.startingPoint(ctx, req, src, pol, m, progress); err != nil {
		return nil, err
	}
	if err := d.checkStagedQuota(ctx, pol, m); err != nil {
		return nil, err
	}
	token := newToken(sessionTokenPrefix)
	m.TokenHash = tokenHash(token)
	if err := d.metas.save(m); err != nil {
		return nil, err
	}
	// A call log left by an earlier session of this ID is not this one's.
	if err := os.Remove(d.callLogPath(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, errors.Join(fmt.Errorf("session %s: remove an old call log: %w", id, err), d.metas.remove(id))
	}
	s, err := d.repo.NewSession(ctx, snapshot.SessionOptions{ID: id, Base: m.Base})
	if err == nil {
		// The contract's options apply before anyone can reach the
		// session; if they fail, the session is discarded.
		err = d.initNewSession(ctx, e, s)
	}
	if err == nil {
		err = d.attach(e, s)
	}
	if err == nil {
		// A contract whose document gives each session a directory on
		// disk (weakincentives' root_path) has it from the start.
		e.hostMu.Lock()
		_, err = d.provisionRootDir(e)
		e.hostMu.Unlock()
	}
	if err != nil {
		e.hostMu.Lock()
		for dir := range e.fuse {
			_ = d.unmountFuse(e, dir)
		}
		e.hostMu.Unlock()
		e.mu.Lock()
		rootErr := d.removeRootDir(id, e.meta)
		e.mu.Unlock()
		if s != nil {
			_ = d.repo.DeleteSession(id)
		}
		return nil, errors.Join(err, rootErr, d.metas.remove(id))
	}
	created = true
	d.installLease(e, lease, claimLater)
	d.prefetch(m.Base)
	d.log.Info("session created", "session", id, "policy", m.Policy, "contract", m.Contract, "base", m.Base, "fork_of", m.ForkOf)
	resp.Session, resp.Token = d.view(e), token
	return resp, nil
}

// startingPoint sets m.Base to the snapshot a new session starts from: its
// host folders imported (which is also its import snapshot), a given
// snapshot, or src's current state. An empty session has none.
func (d *Daemon) startingPoint(ctx context.Context, req api.CreateSessionRequest, src *entry, pol *policy.Policy, m *sessionMeta, progress progressFunc) (*api.ImportReport, error) {
	switch {
	case len(req.Mounts) > 0:
		if err := checkFoldersExist(req.Mounts); err != nil {
			return nil, err
		}
		im, err := d.importer(pol.ASCIIOnly)
		if err != nil {
			return nil, err
		}
		m.Mounts = fromAPIMounts(req.Mounts)
		snap, rep, err := im.Import(ctx, d.repo, m.Mounts, progress.imports())
		if err != nil {
			return nil, fmt.Errorf("stage the host folders: %w", err)
		}
		m.Base, m.Import, m.Restage = snap.ID, snap.ID, true
		m.Owned = append(m.Owned, snap.ID)
		out := importReport(rep)
		out.Warnings = emptyFolderWarnings(req.Mounts, out.Mounts)
		return out, nil
	case req.Base != "":
		snap, err := d.snapshotByRef(ctx, req.Base)
		if err != nil {
			return nil, err
		}
		m.Base = snap.ID
	case src != nil:
		if err := d.settle(ctx, src); err != nil {
			return nil, err
		}
		snap, err := d.repo.Snapshot(ctx, src.s, "fork")
		if err != nil {
			return nil, fmt.Errorf("fork %s: %w", src.id, err)
		}
		m.Base = snap.ID
		m.Owned = append(m.Owned, snap.ID) // the fork's, not its origin's
	}
	return nil, nil
}

// forksLocked counts the sessions, open or being created, that draw on the
// fork budget of lineage (the UID of the session the admin created). The
// caller holds d.mu. A fork that is closed gives its place back; the count
// survives restarts because each fork's metadata names its lineage.
func (d *Daemon) forksLocked(lineage string) int {
	n := 0
	for _, e := range d.sessions {
		if e.lineage == lineage {
			n++
		}
	}
	return n
}

// forks counts the sessions that draw on the fork budget session e draws on.
func (d *Daemon) forks(e *entry) int {
	lineage := e.lineage
	if lineage == "" {
		lineage = e.uid
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.forksLocked(lineage)
}

// view describes a session.
func (d *Daemon) view(e *entry) api.Session {
	v := d.viewLocal(e)
	v.Owner = d.ownerView(e)
	return v
}

// viewLocal is view without the fleet's part.
func (d *Daemon) viewLocal(e *entry) api.Session {
	forks := d.forks(e)
	d.mu.RLock()
	s, calls := e.s, e.calls
	d.mu.RUnlock()
	var info vfs.Info
	if s != nil { // else it could not be opened: see handleListSessions
		info = s.Info()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.meta
	v := api.Session{
		ID: e.id, CreatedAt: m.Created, Label: m.Label, Policy: m.Policy, EffectivePolicy: policyJSON(e.pol), Profile: m.Profile, Contract: e.k.Name(),
		Base: m.Base, ImportSnapshot: m.Import, ForkOf: m.ForkOf, Mounts: toAPIMounts(m.Mounts),
		ResetRestages: m.Restage, FuseMounts: slices.Clone(m.Fuse),
		LastSnapshot: info.Ref, Seq: info.Seq, Dirty: info.Dirty, Files: info.Files, Bytes: info.Bytes,
		UID: m.UID, Forks: forks, ForkBudgetOf: m.LineageOf, ContractOptions: m.ContractOptions,
	}
	if calls != nil {
		v.Calls = calls.count()
	}
	q := d.effectiveQuota(e.pol, m)
	v.Quota = &q
	if !m.Expires.IsZero() {
		t := m.Expires
		v.ExpiresAt = &t
	}
	return v
}

// updateMeta changes a session's metadata with fn and saves it; if the
// save fails the change is undone.
func (d *Daemon) updateMeta(e *entry, fn func(m *sessionMeta)) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.gone {
		return errClosed(e.id)
	}
	next := *e.meta
	next.Mounts = slices.Clone(e.meta.Mounts)
	next.Fuse = slices.Clone(e.meta.Fuse)
	fn(&next)
	if err := d.metas.save(&next); err != nil {
		return err
	}
	e.meta = &next
	return nil
}

// resetSession returns a session to its start: a session staged from host
// folders imports them again (fast for what did not change); any other
// returns to its base snapshot.
func (d *Daemon) resetSession(ctx context.Context, e *entry, progress progressFunc) (*api.ResetResponse, error) {
	e.hostMu.Lock()
	defer e.hostMu.Unlock()
	e.mu.Lock()
	restage, mounts := e.meta.Restage, e.meta.Mounts
	e.mu.Unlock()
	resp := &api.ResetResponse{}
	if restage {
		im, err := d.importer(e.pol.ASCIIOnly)
		if err != nil {
			return nil, err
		}
		rep, err := im.Restage(ctx, d.repo, e.s, mounts, progress.imports())
		if err != nil {
			return nil, fmt.Errorf("reset %s: import the mounts again: %w", e.id, err)
		}
		if err := d.updateMeta(e, func(m *sessionMeta) {
			m.Base, m.Import = rep.Snapshot, rep.Snapshot
			m.Owned = append(m.Owned, rep.Snapshot) // released when the session closes
		}); err != nil {
			return nil, err
		}
		resp.Import = importReport(rep)
	} else if err := e.s.Reset(ctx); err != nil {
		return nil, fmt.Errorf("reset %s: %w", e.id, err)
	}
	// The reset replays the contract's initialisation (weakincentives:
	// "reset replays the mount initialisation").
	if err := d.initContract(ctx, e, e.s, e.ts, true); err != nil {
		ae := APIError(err)
		return nil, apiErr(ae.Code, "reset %s: the session was reset, but %s; fix the cause and reset again", e.id, ae.Message)
	}
	resp.Session = d.view(e)
	return resp, nil
}

// closeSession closes a session for good: its FUSE mounts are unmounted,
// its event streams end with reason, its state and metadata are removed.
// The snapshots made for it (its imports, a fork's starting point) are
// deleted unless another session needs them; the snapshots taken of it
// stay (see closeSessionPurge) unless its contract purges them by default
// (contract.SnapshotLifetime).
func (d *Daemon) closeSession(id, reason string) error {
	d.mu.RLock()
	e := d.sessions[id]
	d.mu.RUnlock()
	return d.closeSessionPurge(id, reason, e != nil && purgeByDefault(e))
}

// closeSessionPurge is closeSession that, with purge, also deletes every
// snapshot taken of the session that no other session needs.
func (d *Daemon) closeSessionPurge(id, reason string, purge bool) error {
	d.mu.Lock()
	e := d.sessions[id]
	if e == nil || (e.s == nil && !e.stored) {
		d.mu.Unlock()
		return apiErr(api.CodeNotFound, "no session %q; list the sessions with vfsd session list (GET /v1/sessions)", id)
	}
	delete(d.sessions, id)
	delete(d.tokens, e.meta.TokenHash)
	d.mu.Unlock()
	// An open in flight finishes first; none starts after (the entry is
	// gone). A session never opened is removed without opening it.
	e.openMu.Lock()
	d.mu.RLock()
	calls := e.calls
	d.mu.RUnlock()
	e.openMu.Unlock()

	e.hostMu.Lock()
	e.mu.Lock()
	e.gone = true
	var errs []error
	for dir, m := range e.fuse {
		if err := m.Unmount(); err != nil {
			errs = append(errs, fmt.Errorf("unmount %s: %w", dir, err))
		}
		delete(e.fuse, dir)
	}
	e.mu.Unlock()
	e.hostMu.Unlock()
	e.closeReason = reason
	close(e.done)
	d.releaseClaim(e)
	errs = append(errs, d.repo.DeleteSession(id), d.metas.remove(id))
	if calls != nil {
		errs = append(errs, calls.close(true))
	} else if err := os.Remove(d.callLogPath(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("session %s: remove its call log: %w", id, err))
	}
	e.mu.Lock()
	m := e.meta
	e.mu.Unlock()
	// Its directory on disk (contract.RootDirectory) goes with it, now
	// that its mounts are down.
	e.hostMu.Lock()
	if e.rootCopyWatch != nil {
		e.rootCopyWatch()
	}
	e.hostMu.Unlock()
	if err := d.removeRootDir(id, m); err != nil {
		errs = append(errs, err)
	}
	var took func(snapshot.Record) bool
	if purge {
		took = e.took
	}
	d.releaseSnapshots(context.Background(), m, took)
	d.log.Info("session closed", "session", id, "reason", reason, "purge", purge)
	return errors.Join(errs...)
}

// errClosed reports a session closed while a request was working on it.
func errClosed(id string) error {
	return apiErr(api.CodeNotFound, "session %q was closed meanwhile", id)
}

// closeInBackground closes a session off the request's path (an expired
// one found by a request).
func (d *Daemon) closeInBackground(id, reason string) {
	d.bgMu.Lock()
	defer d.bgMu.Unlock()
	select {
	case <-d.stopping:
		return // Close waits for d.bg: nothing may join it now
	default:
	}
	d.bg.Go(func() {
		if err := d.closeSession(id, reason); err != nil && !errors.Is(err, &api.Error{Code: api.CodeNotFound}) {
			d.log.Error("close session", "session", id, "reason", reason, "err", err)
		}
	})
}

// expire closes every session whose lifetime is over at now, and returns
// how many it closed.
func (d *Daemon) expire(now time.Time) int {
	n := 0
	for _, e := range d.entries() {
		e.mu.Lock()
		expired := e.meta.expired(now)
		e.mu.Unlock()
		if !expired {
			continue
		}
		if err := d.closeSession(e.id, "expired"); err != nil {
			if !errors.Is(err, &api.Error{Code: api.CodeNotFound}) {
				d.log.Error("close an expired session", "session", e.id, "err", err)
			}
			continue
		}
		n++
	}
	return n
}

// checkFoldersExist refuses host folders that do not exist, before they
// are looked for under the allowed roots: a mistyped path should say so,
// not that it is outside the roots. Only the admin stages folders at
// creation, so saying whether a path exists tells nobody anything new.
func checkFoldersExist(mounts []api.Mount) error {
	for _, m := range mounts {
		if !filepath.IsAbs(m.HostPath) {
			continue // the importer says what is wrong with it
		}
		if _, err := os.Lstat(m.HostPath); errors.Is(err, fs.ErrNotExist) {
			return apiErr(api.CodeNotFound, "host folder %s does not exist; check the path (vfsd session create --folder DIR takes an existing folder beneath one of the daemon's --allow-root directories)", m.HostPath)
		}
	}
	return nil
}

// emptyFolderWarnings says which folders staged no file although they
// asked for some with include globs: a pattern that matched nothing is
// more likely a mistake than an intent.
func emptyFolderWarnings(req []api.Mount, got []api.ImportMountReport) []string {
	var out []string
	for i, m := range req {
		if len(m.Include) == 0 || i >= len(got) || got[i].Files > 0 {
			continue
		}
		out = append(out, fmt.Sprintf("folder %s staged no files: include %s matched nothing (globs match paths relative to the folder, like **/*.go)",
			m.HostPath, strings.Join(m.Include, ", ")))
	}
	return out
}
