package httpapi

import (
	"net/http"

	"github.com/vfsd/vfsd/api"
)

// handleApply writes what changed in a session since its import back to
// the host folders it was staged from (see daemon.Daemon.Apply).
func (s *Server) handleApply(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.d.CheckSession(r.Context(), id); err != nil {
		return err
	}
	var req api.ApplyRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	rep, err := s.d.Apply(r.Context(), id, req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}

// handleMount mounts a session at a host directory. The mount is kept in
// the session's metadata and mounted again when the daemon restarts.
func (s *Server) handleMount(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.d.CheckSession(r.Context(), id); err != nil {
		return err
	}
	var req api.MountRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	fm, err := s.d.Mount(r.Context(), id, req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, fm)
	return nil
}

// handleUnmount unmounts a session's mount at ?dir=, or all of them when
// dir is not given.
func (s *Server) handleUnmount(w http.ResponseWriter, r *http.Request) error {
	if err := s.d.Unmount(r.Context(), r.PathValue("id"), r.URL.Query().Get("dir")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
