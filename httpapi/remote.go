package httpapi

import "net/http"

func (s *Server) handleRemoteStatus(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, s.d.RemoteStatus(r.Context()))
	return nil
}
