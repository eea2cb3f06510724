package daemon

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/hostmount"
)

// progressFunc receives import progress; nil when nobody listens.
type progressFunc func(hostmount.Progress)

// respondWithProgress runs work and sends its result with status. With
// ?progress=true the response is a stream of api.ProgressLine (NDJSON,
// status 200): the import's progress as work reports it, then the result
// or the error, with the status it would have had.
func respondWithProgress(w http.ResponseWriter, r *http.Request, status int, work func(progressFunc) (any, error)) error {
	stream := false
	if v := r.URL.Query().Get("progress"); v != "" {
		var err error
		if stream, err = strconv.ParseBool(v); err != nil {
			return apiErr(api.CodeInvalidInput, "progress=%q: use true or false", v)
		}
	}
	if !stream {
		out, err := work(nil)
		if err != nil {
			return err
		}
		writeJSON(w, status, out)
		return nil
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	var mu sync.Mutex
	send := func(line api.ProgressLine) {
		mu.Lock()
		defer mu.Unlock()
		if enc.Encode(line) == nil {
			rc.Flush()
		}
	}
	out, err := work(func(p hostmount.Progress) {
		send(api.ProgressLine{Progress: &api.Progress{Phase: p.Phase, Files: p.Files, FilesTotal: p.FilesTotal,
			Bytes: p.Bytes, BytesTotal: p.BytesTotal}})
	})
	if err != nil {
		ae := toAPIError(err)
		send(api.ProgressLine{Error: ae, Status: ae.Status})
		return nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		ae := toAPIError(err)
		send(api.ProgressLine{Error: ae, Status: ae.Status})
		return nil
	}
	send(api.ProgressLine{Result: b, Status: status})
	return nil
}
