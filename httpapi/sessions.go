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

func (s *Server) handleListSessions(w http.ResponseWriter, r *http.Request) error {
	list, err := s.d.ListSessions(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}

func (s *Server) handleGetSession(w http.ResponseWriter, r *http.Request) error {
	sess, err := s.d.Session(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sess)
	return nil
}

// handleUpdateSession restarts a session's lifetime with a new TTL.
func (s *Server) handleUpdateSession(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.d.CheckSession(r.Context(), id); err != nil {
		return err // a session that does not exist says so before its body is read
	}
	var req api.UpdateSessionRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	sess, err := s.d.UpdateSession(r.Context(), id, req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sess)
	return nil
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

// handleContractState serves the state the session's contract offers.
func (s *Server) handleContractState(w http.ResponseWriter, r *http.Request) error {
	st, err := s.d.ContractState(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}
