package httpapi

import "net/http"

func (s *Server) handlePush(w http.ResponseWriter, r *http.Request) error {
	rep, err := s.d.Push(r.Context(), r.PathValue("snap"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}

func (s *Server) handleRemoteStatus(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, s.d.RemoteStatus(r.Context()))
	return nil
}

func (s *Server) handleRemoteGC(w http.ResponseWriter, r *http.Request) error {
	rep, err := s.d.RemoteGC(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}
