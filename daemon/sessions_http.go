package daemon

import (
	"errors"
	"net/http"
	"time"

	"github.com/vfsd/vfsd/api"
)

func (d *Daemon) handleCreateSession(w http.ResponseWriter, r *http.Request) error {
	var req api.CreateSessionRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	return respondWithProgress(w, r, http.StatusCreated, func(progress progressFunc) (any, error) {
		return d.createSession(r.Context(), req, principalOf(r.Context()), progress)
	})
}

// handleListSessions lists the sessions. Their state fields (files, bytes,
// seq...) are the open session's: a session not opened since the daemon
// started is opened here (once; later listings find it open).
func (d *Daemon) handleListSessions(w http.ResponseWriter, r *http.Request) error {
	out := api.SessionList{Sessions: []api.Session{}}
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
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (d *Daemon) handleGetSession(w http.ResponseWriter, r *http.Request) error {
	e, err := d.lookup(r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, d.view(e))
	return nil
}

// handleUpdateSession restarts a session's lifetime with a new TTL.
func (d *Daemon) handleUpdateSession(w http.ResponseWriter, r *http.Request) error {
	e, err := d.lookup(r.PathValue("id"))
	if err != nil {
		return err
	}
	var req api.UpdateSessionRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	if req.TTL == "" {
		return apiErr(api.CodeInvalidInput, `ttl is required: a duration like "2h", or "never"`)
	}
	ttl, err := d.parseTTL(req.TTL)
	if err != nil {
		return err
	}
	if err := d.updateMeta(e, func(m *sessionMeta) { m.Expires = expiry(time.Now().UTC(), ttl) }); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, d.view(e))
	return nil
}

func (d *Daemon) handleResetSession(w http.ResponseWriter, r *http.Request) error {
	e, err := d.lookup(r.PathValue("id"))
	if err != nil {
		return err
	}
	return respondWithProgress(w, r, http.StatusOK, func(progress progressFunc) (any, error) {
		return d.resetSession(r.Context(), e, progress)
	})
}

func (d *Daemon) handleCloseSession(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	e, err := d.lookupUnopened(id) // a session that cannot be opened can be closed
	if err != nil {
		return err
	}
	purge, err := closePurge(r, e)
	if err != nil {
		return err
	}
	if err := d.closeSessionPurge(id, "closed by request", purge); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (d *Daemon) handleHealth(w http.ResponseWriter, r *http.Request) error {
	status := "ok"
	select {
	case <-d.stopping:
		status = "stopping"
	default:
	}
	h := api.Health{Status: status, Sessions: len(d.entries()), Version: d.cfg.Version}
	if p := principalOf(r.Context()); p != nil && p.admin {
		h.Private = &api.DaemonPaths{DataDir: d.cfg.DataDir, Socket: d.cfg.Socket, TokenFile: d.cfg.TokenFile, Other: d.cfg.PrivatePaths}
	}
	writeJSON(w, http.StatusOK, h)
	return nil
}
