package daemon

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/tools"
)

// handleToolCall runs one tool on a session. The body is the tool's
// parameters; the response is the receipt exactly as tools.Response.JSON
// renders it, with 200 whatever the receipt's status (the receipt carries
// it, and so does the Vfsd-Tool-Status header). With text=true the body is
// {"receipt": ..., "text": ...}, the text being the rendering for a model.
func (d *Daemon) handleToolCall(w http.ResponseWriter, r *http.Request) error {
	e, err := d.lookup(r.PathValue("id"))
	if err != nil {
		return err
	}
	withText := false
	if v := r.URL.Query().Get("text"); v != "" {
		if withText, err = strconv.ParseBool(v); err != nil {
			return apiErr(api.CodeInvalidInput, "text=%q: use true or false", v)
		}
	}
	params, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxJSONBytes))
	if err != nil {
		return err
	}
	name := r.PathValue("name")
	if err := d.settle(r.Context(), e); err != nil {
		return err
	}
	start := time.Now()
	resp := e.ts.Call(r.Context(), e.id, name, json.RawMessage(params))
	d.metrics.toolCall(name, string(resp.Status()), time.Since(start))
	w.Header().Set(api.ToolStatusHeader, string(resp.Status()))
	if withText {
		writeJSON(w, http.StatusOK, api.ToolResult{Receipt: resp.JSON(), Text: resp.Text})
		return nil
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(resp.JSON())
	return nil
}

// handleToolList renders the tools of a profile (the session's by default)
// in its provider's JSON, with its prompt section.
func (d *Daemon) handleToolList(w http.ResponseWriter, r *http.Request) error {
	e, err := d.lookup(r.PathValue("id"))
	if err != nil {
		return err
	}
	rendered, err := tools.Render(e.profile(r))
	if err != nil {
		return apiErr(api.CodeInvalidInput, "%v", err)
	}
	writeJSON(w, http.StatusOK, api.ToolList{Profile: rendered.Profile, Tools: rendered.Tools, Prompt: rendered.Prompt})
	return nil
}

// profile is the tool profile a request asks for with ?profile=, else the
// session's.
func (e *entry) profile(r *http.Request) string {
	if p := r.URL.Query().Get("profile"); p != "" {
		return p
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.meta.Profile
}
