package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"

	"github.com/vfsd/vfsd/api"
)

// respondWithProgress runs work and sends its result with status. With
// ?progress=true the response is a stream of api.ProgressLine (NDJSON,
// status 200): the progress as work reports it, then the result or the
// error, with the status it would have had. The stream starts at once, or
// — lazily — with the first progress: an error before that is an
// ordinary error answer (a refused snapshot says so with its status).
func respondWithProgress(w http.ResponseWriter, r *http.Request, status int, lazy bool, work func(progress func(api.Progress)) (any, error)) error {
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
	rc := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	var mu sync.Mutex
	started := false
	start := func() {
		if !started {
			started = true
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.WriteHeader(http.StatusOK)
		}
	}
	send := func(line api.ProgressLine) {
		mu.Lock()
		defer mu.Unlock()
		start()
		if enc.Encode(line) == nil {
			rc.Flush()
		}
	}
	if !lazy {
		start()
	}
	out, err := work(func(p api.Progress) { send(api.ProgressLine{Progress: &p}) })
	mu.Lock()
	beforeStream := !started
	mu.Unlock()
	if err != nil && beforeStream {
		return err
	}
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
