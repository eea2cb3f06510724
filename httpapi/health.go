package httpapi

import (
	"net/http"

	"github.com/vfsd/vfsd/api"
)

// handleOpenAPI serves the OpenAPI 3.1 description of this API
// (api/openapi.json).
func handleOpenAPI(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	_, err := w.Write(api.OpenAPI())
	return err
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, s.d.Health(r.Context()))
	return nil
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	s.d.WriteMetrics(r.Context(), w)
	return nil
}
