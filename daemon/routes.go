package daemon

import (
	"net/http"
	"strings"
	"time"

	"github.com/vfsd/vfsd/api"
)

// apiHandler handles one request; an error it returns (before writing
// anything) is sent as the API's error envelope.
type apiHandler func(w http.ResponseWriter, r *http.Request) error

// routes builds the daemon's HTTP handler. docs/api.md documents every
// route.
func (d *Daemon) routes() {
	d.mux = http.NewServeMux()
	d.route("GET /healthz", scopePublic, d.handleHealth)
	d.route("GET /metrics", scopeAdmin, d.handleMetrics)

	d.route("POST /v1/sessions", scopeAdmin, d.handleCreateSession)
	d.route("GET /v1/sessions", scopeAdmin, d.handleListSessions)
	d.route("GET /v1/sessions/{id}", scopeSession, d.handleGetSession)
	d.route("PATCH /v1/sessions/{id}", scopeAdmin, d.handleUpdateSession)
	d.route("DELETE /v1/sessions/{id}", scopeSession, d.handleCloseSession)
	d.route("POST /v1/sessions/{id}/reset", scopeSession, d.handleResetSession)
	d.route("POST /v1/sessions/{id}/fork", scopeSession, d.handleFork)

	d.route("GET /v1/sessions/{id}/tools", scopeSession, d.handleToolList)
	d.route("POST /v1/sessions/{id}/tools/{name}", scopeSession, d.handleToolCall)
	d.route("GET /v1/sessions/{id}/calls", scopeSession, d.handleCallLog)
	d.route("GET /v1/sessions/{id}/log", scopeSession, d.handleLog)
	d.route("POST /v1/sessions/{id}/rewind", scopeSession, d.handleRewind)
	d.route("POST /v1/sessions/{id}/rebase", scopeAdmin, d.handleRebase)
	d.route("GET /v1/sessions/{id}/contract/state", scopeSession, d.handleContractState)

	d.route("POST /v1/sessions/{id}/snapshots", scopeSession, d.handleCreateSnapshot)
	d.route("GET /v1/sessions/{id}/snapshots", scopeSession, d.handleSessionSnapshots)
	d.route("POST /v1/sessions/{id}/restore", scopeSession, d.handleRestore)
	d.route("GET /v1/sessions/{id}/diff", scopeSession, d.handleSessionDiff)
	d.route("GET /v1/snapshots", scopeAdmin, d.handleListSnapshots)
	d.route("GET /v1/snapshots/{snap}", scopeAdmin, d.handleGetSnapshot)
	d.route("DELETE /v1/snapshots/{snap}", scopeAdmin, d.handleDeleteSnapshot)
	d.route("DELETE /v1/sessions/{id}/snapshots/{snap}", scopeSession, d.handleDeleteSessionSnapshot)
	d.route("POST /v1/snapshots/{snap}/fork", scopeAdmin, d.handleFork)
	d.route("POST /v1/snapshots/{snap}/push", scopeAdmin, d.handlePush)
	d.route("GET /v1/remote", scopeAdmin, d.handleRemoteStatus)
	d.route("POST /v1/remote/gc", scopeAdmin, d.handleRemoteGC)
	d.route("GET /v1/diff", scopeAdmin, d.handleDiff)
	d.route("POST /v1/gc", scopeAdmin, d.handleGC)

	d.route("POST /v1/sessions/{id}/apply", scopeAdmin, d.handleApply)
	d.route("POST /v1/sessions/{id}/mount", scopeAdmin, d.handleMount)
	d.route("DELETE /v1/sessions/{id}/mount", scopeAdmin, d.handleUnmount)
	d.route("GET /v1/sessions/{id}/events", scopeSession, d.handleEvents)

	d.route("GET /v1/blobs/{ref}", scopeAny, d.handleGetBlob)
	d.route("POST /v1/blobs", scopeAny, d.handlePutBlob)

	d.route("/v1/sessions/{id}/mcp", scopeSession, d.handleMCP)
	d.uiRoutes()
	d.route("/", scopePublic, d.handleNoRoute)
	d.handler = d.authenticate(d.mux)
}

// route registers h for pattern behind the scope's authorization, counting
// every request by its pattern and status.
func (d *Daemon) route(pattern string, sc scope, h apiHandler) {
	d.mux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		start := time.Now()
		defer func() {
			d.metrics.request(pattern, sw.code())
			d.log.Debug("request", "method", r.Method, "path", r.URL.Path, "route", pattern, "code", sw.code(), "took", time.Since(start))
		}()
		if err := authorize(r, sc); err != nil {
			writeError(sw, err)
			return
		}
		if err := h(sw, r); err != nil {
			if sw.status != 0 {
				d.log.Warn("request failed after its response started", "route", pattern, "err", err)
				return
			}
			writeError(sw, err)
		}
	}))
}

// handleNoRoute answers requests no route matches: 405 when the path
// exists under another method, 404 otherwise.
func (d *Daemon) handleNoRoute(w http.ResponseWriter, r *http.Request) error {
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := d.mux.Handler(probe); pattern != "/" && pattern != "" {
			allowed = append(allowed, m)
		}
	}
	if len(allowed) > 0 {
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		return apiErr(api.CodeMethod, "%s %s is not supported; use %s (see docs/api.md)", r.Method, r.URL.Path, strings.Join(allowed, " or "))
	}
	return apiErr(api.CodeNotFound, "no endpoint %s %s; the API is under /v1 (see docs/api.md)", r.Method, r.URL.Path)
}

// statusWriter remembers the status a handler sent.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (to flush event
// streams).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}
