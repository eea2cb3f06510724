package httpapi

import (
	"net/http"

	"github.com/vfsd/vfsd/api"
)

func (s *Server) handleCreateSnapshot(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.d.CheckSession(r.Context(), id); err != nil {
		return err
	}
	var req api.SnapshotRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	// Lazily streamed: a snapshot the quota refuses is an ordinary error.
	return respondWithProgress(w, r, http.StatusCreated, true, func(progress func(api.Progress)) (any, error) {
		return s.d.Snapshot(r.Context(), id, req.Label, progress)
	})
}

func (s *Server) handleSessionSnapshots(w http.ResponseWriter, r *http.Request) error {
	list, err := s.d.SessionSnapshots(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}

func (s *Server) handleListSnapshots(w http.ResponseWriter, r *http.Request) error {
	list, err := s.d.ListSnapshots(r.Context(), r.URL.Query().Get("session"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}

func (s *Server) handleGetSnapshot(w http.ResponseWriter, r *http.Request) error {
	snap, err := s.d.GetSnapshot(r.Context(), r.PathValue("snap"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, snap)
	return nil
}

func (s *Server) handleRestore(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.d.CheckSession(r.Context(), id); err != nil {
		return err
	}
	var req api.RestoreRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	sess, err := s.d.Restore(r.Context(), id, req.Snapshot)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sess)
	return nil
}

// handleDeleteSnapshot deletes any snapshot (admin).
func (s *Server) handleDeleteSnapshot(w http.ResponseWriter, r *http.Request) error {
	resp, err := s.d.DeleteSnapshot(r.Context(), r.PathValue("snap"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// handleDeleteSessionSnapshot deletes a snapshot taken of the session: what
// a session's own token may delete.
func (s *Server) handleDeleteSessionSnapshot(w http.ResponseWriter, r *http.Request) error {
	resp, err := s.d.DeleteSessionSnapshot(r.Context(), r.PathValue("id"), r.PathValue("snap"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

func (s *Server) handleGC(w http.ResponseWriter, r *http.Request) error {
	rep, err := s.d.GC(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}
