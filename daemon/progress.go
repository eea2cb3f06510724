package daemon

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/hostmount"
	"github.com/vfsd/vfsd/vfs"
)

// progressFunc receives the progress of a long operation (an import, a
// snapshot's sealing); nil when nobody listens.
type progressFunc func(api.Progress)

// imports adapts f to an import's progress callback (nil for nil).
func (f progressFunc) imports() func(hostmount.Progress) {
	if f == nil {
		return nil
	}
	return func(p hostmount.Progress) {
		f(api.Progress{Phase: p.Phase, Files: p.Files, FilesTotal: p.FilesTotal, Bytes: p.Bytes, BytesTotal: p.BytesTotal})
	}
}

// seals returns ctx under which a snapshot reports its sealing to f
// (phase "seal"): the start, the end, and at most every 100 ms between.
func (f progressFunc) seals(ctx context.Context) context.Context {
	if f == nil {
		return ctx
	}
	var last time.Time // the calls are serialised
	return vfs.WithSealProgress(ctx, func(p vfs.SealProgress) {
		if p.Files != 0 && p.Files != p.FilesTotal && time.Since(last) < 100*time.Millisecond {
			return
		}
		last = time.Now()
		f(api.Progress{Phase: "seal", Files: int64(p.Files), FilesTotal: int64(p.FilesTotal), Bytes: p.Bytes, BytesTotal: p.BytesTotal})
	})
}

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
	out, err := work(func(p api.Progress) { send(api.ProgressLine{Progress: &p}) })
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
