package httpapi

import (
	"net/http"
	"strconv"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/daemon"
)

// handleLog lists a session's history: ?offset= (the first entry, 0 by
// default), ?limit= (at most daemon.LogPageMax), ?patch=true (each
// entry's diff).
func (s *Server) handleLog(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.d.CheckSession(r.Context(), id); err != nil {
		return err
	}
	var opts daemon.LogOptions
	if v := r.URL.Query().Get("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return apiErr(api.CodeInvalidInput, "offset=%q: give the index of the first entry (0 for the first page)", v)
		}
		opts.Offset = n
	}
	var err error
	if opts.Limit, err = limitParam(r, daemon.LogPageMax); err != nil {
		return err
	}
	if opts.Patch, err = boolParam(r, "patch", false); err != nil {
		return err
	}
	log, err := s.d.Log(r.Context(), id, opts)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, log)
	return nil
}
