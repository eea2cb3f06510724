package httpapi

import (
	"net/http"
	"strconv"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/daemon"
)

// handleLog lists a session's history: ?offset= (the first entry, 0 by
// default), ?limit= (at most daemon.LogPageMax), ?patch=true (each
// entry's diff).
func (s *Server) handleLog(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.d.CheckSession(r.Context(), id); err != nil {
		return err
	}
	var opts daemon.LogOptions
	if v := r.URL.Query().Get("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return apiErr(api.CodeInvalidInput, "offset=%q: give the index of the first entry (0 for the first page)", v)
		}
		opts.Offset = n
	}
	var err error
	if opts.Limit, err = limitParam(r, daemon.LogPageMax); err != nil {
		return err
	}
	if opts.Patch, err = boolParam(r, "patch", false); err != nil {
		return err
	}
	log, err := s.d.Log(r.Context(), id, opts)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, log)
	return nil
}

// handleRewind puts a session back to an earlier state of its history.
func (s *Server) handleRewind(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.d.CheckSession(r.Context(), id); err != nil {
		return err
	}
	var req api.RewindRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	resp, err := s.d.Rewind(r.Context(), id, req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// handleRebase takes what changed on the host since the session's import
// into the session (see daemon.Daemon.Rebase).
func (s *Server) handleRebase(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.d.CheckSession(r.Context(), id); err != nil {
		return err
	}
	var req api.RebaseRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	rep, err := s.d.Rebase(r.Context(), id, req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}
