package httpapi

import (
	"net/http"
)

// handleUnmount unmounts a session's mount at ?dir=, or all of them when
// dir is not given.
func (s *Server) handleUnmount(w http.ResponseWriter, r *http.Request) error {
	if err := s.d.Unmount(r.Context(), r.PathValue("id"), r.URL.Query().Get("dir")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
