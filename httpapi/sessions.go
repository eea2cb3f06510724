package httpapi

import (
	"net/http"

	"github.com/vfsd/vfsd/api"
)

func (s *Server) handleCreateSession(w http.ResponseWriter, r *http.Request) error {
	var req api.CreateSessionRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	return respondWithProgress(w, r, http.StatusCreated, false, func(progress func(api.Progress)) (any, error) {
		return s.d.CreateSession(r.Context(), req, progress)
	})
}

func (s *Server) handleResetSession(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.d.CheckSession(r.Context(), id); err != nil {
		return err
	}
	return respondWithProgress(w, r, http.StatusOK, false, func(progress func(api.Progress)) (any, error) {
		return s.d.ResetSession(r.Context(), id, progress)
	})
}

// handleCloseSession closes a session; ?purge= says whether the snapshots
// taken of it go too (by default its contract decides).
func (s *Server) handleCloseSession(w http.ResponseWriter, r *http.Request) error {
	var purge *bool
	if r.URL.Query().Get("purge") != "" {
		p, err := boolParam(r, "purge", false)
		if err != nil {
			return err
		}
		purge = &p
	}
	if err := s.d.CloseSession(r.Context(), r.PathValue("id"), purge); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// handleFork forks a live session ({id}) or a snapshot ({snap}) into a new
// session; the body is a CreateSessionRequest without mounts, base or fork.
func (s *Server) handleFork(w http.ResponseWriter, r *http.Request) error {
	var req api.CreateSessionRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	var resp *api.CreateSessionResponse
	var err error
	if id := r.PathValue("id"); id != "" {
		resp, err = s.d.ForkSession(r.Context(), id, req)
	} else {
		resp, err = s.d.ForkSnapshot(r.Context(), r.PathValue("snap"), req)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, resp)
	return nil
}
