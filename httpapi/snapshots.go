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

func (s *Server) handleListSnapshots(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	list, err := s.d.ListSnapshots(r.Context(), q.Get("session"), q.Get("local") == "1" || q.Get("local") == "true")
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, list)
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
