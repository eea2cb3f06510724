package daemon

import (
	"context"
	"errors"
	"time"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/coord"
)

// CreateSession creates a session as req says: staged from host folders,
// forked from a session or a snapshot, or empty. progress, if not nil,
// receives the import's progress.
func (d *Daemon) CreateSession(ctx context.Context, req api.CreateSessionRequest, progress func(api.Progress)) (*api.CreateSessionResponse, error) {
	if req.FromRef != "" {
		if req.Base != "" || req.Fork != "" || len(req.Mounts) > 0 {
			return nil, apiErr(api.CodeInvalidInput, "give from_ref alone: a session starts from one snapshot, ref, session or set of host folders")
		}
		r, err := d.GetRef(ctx, req.FromRef)
		if err != nil {
			return nil, err
		}
		req.Base, req.FromRef = r.Snapshot, ""
	}
	return d.createSession(ctx, req, callerOf(ctx), progress)
}

// ForkSession forks the live session id into a new session; req is a
// CreateSessionRequest without mounts, base or fork.
func (d *Daemon) ForkSession(ctx context.Context, id string, req api.CreateSessionRequest) (*api.CreateSessionResponse, error) {
	if err := checkForkRequest(req); err != nil {
		return nil, err
	}
	req.Fork = id
	return d.createSession(ctx, req, callerOf(ctx), nil)
}

// ForkSnapshot forks snapshot snap (an ID or a unique prefix) into a new
// session; req is a CreateSessionRequest without mounts, base or fork.
func (d *Daemon) ForkSnapshot(ctx context.Context, snap string, req api.CreateSessionRequest) (*api.CreateSessionResponse, error) {
	if err := checkForkRequest(req); err != nil {
		return nil, err
	}
	req.Base = snap
	return d.createSession(ctx, req, callerOf(ctx), nil)
}

// checkForkRequest refuses a fork's body that names its own start.
func checkForkRequest(req api.CreateSessionRequest) error {
	if len(req.Mounts) > 0 || req.Base != "" || req.Fork != "" {
		return apiErr(api.CodeInvalidInput, "a fork starts from what the URL names; leave mounts, base and fork out")
	}
	return nil
}

// ListSessions lists the sessions. Their state fields (files, bytes,
// seq...) are the open session's: a session not opened since the daemon
// started is opened here (once; later listings find it open).
func (d *Daemon) ListSessions(ctx context.Context) (*api.SessionList, error) {
	out := &api.SessionList{Sessions: []api.Session{}}
	now := time.Now()
	for _, e := range d.entries() {
		e.mu.Lock()
		expired := e.meta.expired(now)
		e.mu.Unlock()
		if expired {
			d.closeInBackground(e.id, "expired")
			continue
		}
		var openErr string
		if err := d.open(e); errors.Is(err, &api.Error{Code: api.CodeNotFound}) {
			continue // closed meanwhile
		} else if err != nil {
			openErr = err.Error()
		}
		v := d.view(e)
		v.OpenError = openErr
		out.Sessions = append(out.Sessions, v)
	}
	return out, nil
}

// Session describes session id.
func (d *Daemon) Session(ctx context.Context, id string) (*api.Session, error) {
	e, err := d.lookup(id)
	if err != nil {
		return nil, err
	}
	v := d.view(e)
	return &v, nil
}

// UpdateSession restarts a session's lifetime with a new TTL.
func (d *Daemon) UpdateSession(ctx context.Context, id string, req api.UpdateSessionRequest) (*api.Session, error) {
	e, err := d.lookup(id)
	if err != nil {
		return nil, err
	}
	if req.TTL == "" && req.KeepRef == "" {
		return nil, apiErr(api.CodeInvalidInput, `give ttl (a duration like "2h", or "never") or keep_ref (a ref name, "-" for none)`)
	}
	if req.KeepRef != "" && req.KeepRef != "-" && !coord.ValidRef(req.KeepRef) {
		return nil, apiErr(api.CodeInvalidInput, "keep_ref %q: use letters, digits, '_', '.', '-' and '/' (128 at most)", req.KeepRef)
	}
	var ttl time.Duration
	if req.TTL != "" {
		if ttl, err = d.parseTTL(req.TTL); err != nil {
			return nil, err
		}
	}
	if err := d.updateMeta(e, func(m *sessionMeta) {
		if req.TTL != "" {
			m.Expires = expiry(time.Now().UTC(), ttl)
		}
		switch req.KeepRef {
		case "":
		case "-":
			m.KeepRef = ""
		default:
			m.KeepRef = req.KeepRef
		}
	}); err != nil {
		return nil, err
	}
	v := d.view(e)
	return &v, nil
}

// ResetSession puts session id back to its start, importing its host
// folders again; progress, if not nil, receives the import's progress.
func (d *Daemon) ResetSession(ctx context.Context, id string, progress func(api.Progress)) (*api.ResetResponse, error) {
	e, err := d.lookup(id)
	if err != nil {
		return nil, err
	}
	return d.resetSession(ctx, e, progress)
}

// CloseSession closes session id. purge says whether the snapshots taken
// of it are deleted too; nil leaves that to the session's contract.
func (d *Daemon) CloseSession(ctx context.Context, id string, purge *bool) error {
	e, err := d.lookupUnopened(id) // a session that cannot be opened can be closed
	if err != nil {
		return err
	}
	p := purgeByDefault(e)
	if purge != nil {
		p = *purge
	}
	return d.closeSessionPurge(id, "closed by request", p)
}

// Health says whether the daemon serves, how many sessions it has and its
// version; the admin also learns its private paths.
func (d *Daemon) Health(ctx context.Context) *api.Health {
	status := "ok"
	select {
	case <-d.stopping:
		status = "stopping"
	default:
	}
	h := &api.Health{Status: status, Sessions: len(d.entries()), Version: d.cfg.Version}
	if c, ok := CallerFrom(ctx); ok && c.Admin {
		h.Private = &api.DaemonPaths{DataDir: d.cfg.DataDir, Socket: d.cfg.Socket, TokenFile: d.cfg.TokenFile, Other: d.cfg.PrivatePaths}
	}
	return h
}

// CheckSession returns the error a call on session id would meet first:
// not_found for a session that does not exist, the reason one cannot be
// opened. (The API answers it before reading a request's body.)
func (d *Daemon) CheckSession(ctx context.Context, id string) error {
	_, err := d.lookup(id)
	return err
}
