package httpapi

import (
	"net/http"

	"github.com/vfsd/vfsd/api"
)

// The fleet's routes (docs/api.md, "Fleet"): hand-off and takeover of
// sessions, refs, and the daemons of the fleet. The one-call routes are in
// the route table; these decode a body or answer no content.

// handleSetRef moves a ref (PUT /v1/refs/{name...}).
func (s *Server) handleSetRef(w http.ResponseWriter, r *http.Request) error {
	var req api.RefRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	out, err := s.d.SetRef(r.Context(), r.PathValue("name"), req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// handleDeleteRef removes a ref (DELETE /v1/refs/{name...}).
func (s *Server) handleDeleteRef(w http.ResponseWriter, r *http.Request) error {
	if err := s.d.DeleteRef(r.Context(), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
