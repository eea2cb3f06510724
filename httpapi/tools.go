package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/daemon"
)

// handleToolCall runs one tool of the session's contract. The body is the
// tool's parameters; the response is the result's body — for vfsd's own
// contract the receipt exactly as tools.Response.JSON renders it — with
// 200 whatever its status (the Vfsd-Tool-Status header carries it). With
// text=true the body is {"receipt": ..., "text": ..., "status": ...,
// "is_error": ...}, the text being the rendering for a model.
func (s *Server) handleToolCall(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.d.CheckSession(r.Context(), id); err != nil {
		return err
	}
	withText, err := boolParam(r, "text", false)
	if err != nil {
		return err
	}
	asContract := r.URL.Query().Get("contract")
	if err := s.d.CheckContract(r.Context(), id, asContract); err != nil {
		return err // before the body is read
	}
	params, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxJSONBytes))
	if err != nil {
		return err
	}
	call, err := s.d.CallTool(r.Context(), id, r.PathValue("name"), json.RawMessage(params), daemon.TransportHTTP, asContract)
	if err != nil {
		return err
	}
	res := call.Result
	w.Header().Set(api.ToolStatusHeader, res.Status)
	w.Header().Set(api.ToolContractHeader, call.Contract)
	if res.IsError {
		w.Header().Set(api.ToolErrorHeader, "true")
	}
	if withText {
		writeJSON(w, http.StatusOK, api.ToolResult{Receipt: res.Body, Text: res.Text, Status: res.Status, IsError: res.IsError})
		return nil
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(res.Body)
	return nil
}

// handleToolList renders the tools of the session's contract in a
// profile's provider JSON (?profile=, the session's by default).
func (s *Server) handleToolList(w http.ResponseWriter, r *http.Request) error {
	list, err := s.d.ListTools(r.Context(), r.PathValue("id"), r.URL.Query().Get("profile"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}

// handleCallLog lists a session's tool calls: ?since=N (the calls after
// the N-th), ?limit= (at most daemon.CallPageMax).
func (s *Server) handleCallLog(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.d.CheckSession(r.Context(), id); err != nil {
		return err
	}
	var since uint64
	if v := r.URL.Query().Get("since"); v != "" {
		var err error
		if since, err = strconv.ParseUint(v, 10, 64); err != nil {
			return apiErr(api.CodeInvalidInput, "since=%q: give a call number (0 for the first page)", v)
		}
	}
	limit, err := limitParam(r, daemon.CallPageMax)
	if err != nil {
		return err
	}
	list, err := s.d.CallLog(r.Context(), id, since, limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}
