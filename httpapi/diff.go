package httpapi

import (
	"net/http"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/daemon"
)

func (s *Server) handleSessionDiff(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.d.CheckSession(r.Context(), id); err != nil {
		return err
	}
	unified, text, err := diffFormat(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	diff, err := s.d.SessionDiff(r.Context(), id, q.Get("from"), q.Get("to"), text)
	if err != nil {
		return err
	}
	return writeDiff(w, diff, unified)
}

func (s *Server) handleDiff(w http.ResponseWriter, r *http.Request) error {
	unified, text, err := diffFormat(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	diff, err := s.d.DiffStates(r.Context(), q.Get("from"), q.Get("to"), text)
	if err != nil {
		return err
	}
	return writeDiff(w, diff, unified)
}

// diffFormat reads how a diff is sent: JSON by default (with unified text
// per file when text=true), or one unified diff as text with
// format=unified.
func diffFormat(r *http.Request) (unified, text bool, err error) {
	format := r.URL.Query().Get("format")
	if format != "" && format != "json" && format != "unified" {
		return false, false, apiErr(api.CodeInvalidInput, "format %q: use json or unified", format)
	}
	unified = format == "unified"
	t, err := boolParam(r, "text", false)
	if err != nil {
		return false, false, err
	}
	return unified, unified || t, nil
}

// writeDiff sends a diff: as JSON, or as git's unified format, with
// symlink targets, modes and quoted paths (snapshot.Diff.WriteUnified).
func writeDiff(w http.ResponseWriter, diff *daemon.Diff, unified bool) error {
	if unified {
		w.Header().Set("Content-Type", "text/x-diff; charset=utf-8")
		return diff.WriteUnified(w)
	}
	writeJSON(w, http.StatusOK, diff.View())
	return nil
}
