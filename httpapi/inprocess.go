package httpapi

import (
	"io"
	"net/http"
	"sync"

	"github.com/vfsd/vfsd/daemon"
)

// inProcess is an http.RoundTripper that serves requests with a handler in
// the same process, as caller: no connection, no token. The response body
// streams from the handler through a pipe, so a reader that stops early
// (or closes the body) stops the handler's writes rather than having them
// buffered.
type inProcess struct {
	h      http.Handler
	caller daemon.Caller
}

func (t *inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.WithContext(daemon.WithCaller(req.Context(), t.caller))
	req.RequestURI = req.URL.RequestURI()
	if req.Body == nil {
		req.Body = http.NoBody
	}
	pr, pw := io.Pipe()
	w := &pipeWriter{header: http.Header{}, pw: pw, headed: make(chan struct{})}
	go func() {
		defer func() {
			w.writeHeader(http.StatusOK) // a handler that wrote nothing
			pw.Close()
		}()
		t.h.ServeHTTP(w, req)
	}()
	select {
	case <-w.headed:
	case <-req.Context().Done():
		pr.CloseWithError(req.Context().Err())
		return nil, req.Context().Err()
	}
	return &http.Response{Status: http.StatusText(w.status), StatusCode: w.status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: w.sent, Body: pr, ContentLength: -1, Request: req}, nil
}

// pipeWriter is the handler's side of an in-process response.
type pipeWriter struct {
	header http.Header
	sent   http.Header // header as of WriteHeader
	status int
	pw     *io.PipeWriter
	once   sync.Once
	headed chan struct{} // closed by WriteHeader
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) WriteHeader(code int) { w.writeHeader(code) }

func (w *pipeWriter) writeHeader(code int) {
	w.once.Do(func() {
		w.status, w.sent = code, w.header.Clone()
		close(w.headed)
	})
}

func (w *pipeWriter) Write(b []byte) (int, error) {
	w.writeHeader(http.StatusOK)
	return w.pw.Write(b)
}

// Flush is a no-op: every write reaches the reader at once.
func (w *pipeWriter) Flush() {}
