package httpapi

import (
	"net/http"
	"strings"
	"time"

	"github.com/vfsd/vfsd/api"
)

// apiHandler handles one request; an error it returns (before writing
// anything) is sent as the API's error envelope.
type apiHandler func(w http.ResponseWriter, r *http.Request) error

// routes builds the API's handler: the route table, each route with the
// scope its caller needs. docs/api.md documents every route.
func (s *Server) routes() {
	s.mux = http.NewServeMux()
	s.route("GET /healthz", scopePublic, s.handleHealth)
	s.route("GET /openapi.json", scopePublic, handleOpenAPI)
	s.route("GET /metrics", scopeAdmin, s.handleMetrics)

	s.route("POST /v1/sessions", scopeAdmin, s.handleCreateSession)
	s.route("GET /v1/sessions", scopeAdmin, plainCall(s.d.ListSessions))
	s.route("GET /v1/sessions/{id}", scopeSession, pathCall("id", s.d.Session))
	s.route("PATCH /v1/sessions/{id}", scopeAdmin, bodyCall(s, http.StatusOK, s.d.UpdateSession))
	s.route("DELETE /v1/sessions/{id}", scopeSession, s.handleCloseSession)
	s.route("POST /v1/sessions/{id}/reset", scopeSession, s.handleResetSession)
	s.route("POST /v1/sessions/{id}/fork", scopeSession, s.handleFork)

	s.route("GET /v1/sessions/{id}/tools", scopeSession, s.handleToolList)
	s.route("POST /v1/sessions/{id}/tools/{name}", scopeSession, s.handleToolCall)
	s.route("GET /v1/sessions/{id}/calls", scopeSession, s.handleCallLog)
	s.route("GET /v1/sessions/{id}/log", scopeSession, s.handleLog)
	s.route("POST /v1/sessions/{id}/rewind", scopeSession, bodyCall(s, http.StatusOK, s.d.Rewind))
	s.route("POST /v1/sessions/{id}/rebase", scopeAdmin, bodyCall(s, http.StatusOK, s.d.Rebase))
	s.route("GET /v1/sessions/{id}/contract/state", scopeSession, pathCall("id", s.d.ContractState))

	s.route("POST /v1/sessions/{id}/snapshots", scopeSession, s.handleCreateSnapshot)
	s.route("GET /v1/sessions/{id}/snapshots", scopeSession, pathCall("id", s.d.SessionSnapshots))
	s.route("POST /v1/sessions/{id}/restore", scopeSession, bodyCall(s, http.StatusOK, s.d.Restore))
	s.route("GET /v1/sessions/{id}/diff", scopeSession, s.handleSessionDiff)
	s.route("GET /v1/snapshots", scopeAdmin, s.handleListSnapshots)
	s.route("GET /v1/snapshots/{snap}", scopeAdmin, pathCall("snap", s.d.GetSnapshot))
	s.route("DELETE /v1/snapshots/{snap}", scopeAdmin, pathCall("snap", s.d.DeleteSnapshot))
	s.route("DELETE /v1/sessions/{id}/snapshots/{snap}", scopeSession, s.handleDeleteSessionSnapshot)
	s.route("POST /v1/snapshots/{snap}/fork", scopeAdmin, s.handleFork)
	s.route("POST /v1/snapshots/{snap}/push", scopeAdmin, pathCall("snap", s.d.Push))
	s.route("GET /v1/remote", scopeAdmin, s.handleRemoteStatus)
	s.route("POST /v1/sessions/{id}/move", scopeAdmin, bodyCall(s, http.StatusOK, s.d.MoveSession))
	s.route("POST /v1/sessions/{id}/take", scopeAdmin, pathCall("id", s.d.TakeSession))
	s.route("GET /v1/refs", scopeAdmin, plainCall(s.d.ListRefs))
	s.route("GET /v1/refs/{name...}", scopeAdmin, pathCall("name", s.d.GetRef))
	s.route("PUT /v1/refs/{name...}", scopeAdmin, s.handleSetRef)
	s.route("DELETE /v1/refs/{name...}", scopeAdmin, s.handleDeleteRef)
	s.route("GET /v1/daemons", scopeAdmin, plainCall(s.d.ListDaemons))
	s.route("POST /v1/remote/gc", scopeAdmin, plainCall(s.d.RemoteGC))
	s.route("GET /v1/diff", scopeAdmin, s.handleDiff)
	s.route("POST /v1/gc", scopeAdmin, plainCall(s.d.GC))

	s.route("POST /v1/sessions/{id}/apply", scopeAdmin, bodyCall(s, http.StatusOK, s.d.Apply))
	s.route("POST /v1/sessions/{id}/mount", scopeAdmin, bodyCall(s, http.StatusCreated, s.d.Mount))
	s.route("DELETE /v1/sessions/{id}/mount", scopeAdmin, s.handleUnmount)
	s.route("GET /v1/sessions/{id}/events", scopeSession, s.handleEvents)

	s.route("GET /v1/blobs/{ref}", scopeAny, s.handleGetBlob)
	s.route("POST /v1/blobs", scopeAny, s.handlePutBlob)

	s.route("/v1/sessions/{id}/mcp", scopeSession, s.handleMCP)
	s.reviewRoutes()
	s.route("/", scopePublic, s.handleNoRoute)
	s.handler = s.authenticate(s.mux)
}

// route registers h for pattern behind the scope's authorization, counting
// every request by its pattern and status.
func (s *Server) route(pattern string, sc scope, h apiHandler) {
	s.registered = append(s.registered, registeredRoute{pattern, sc})
	s.mux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		start := time.Now()
		defer func() {
			s.d.CountRequest(pattern, sw.code())
			s.log.Debug("request", "method", r.Method, "path", r.URL.Path, "route", pattern, "code", sw.code(), "took", time.Since(start))
		}()
		if err := authorize(r, sc); err != nil {
			writeError(sw, err)
			return
		}
		if err := h(sw, r); err != nil {
			if sw.status != 0 {
				s.log.Warn("request failed after its response started", "route", pattern, "err", err)
				return
			}
			writeError(sw, err)
		}
	}))
}

// handleNoRoute answers requests no route matches: 405 when the path
// exists under another method, 404 otherwise.
func (s *Server) handleNoRoute(w http.ResponseWriter, r *http.Request) error {
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "/" && pattern != "" {
			allowed = append(allowed, m)
		}
	}
	if len(allowed) > 0 {
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		return apiErr(api.CodeMethod, "%s %s is not supported; use %s (see docs/api.md)", r.Method, r.URL.Path, strings.Join(allowed, " or "))
	}
	return apiErr(api.CodeNotFound, "no endpoint %s %s; the API is under /v1 (see docs/api.md)", r.Method, r.URL.Path)
}

// registeredRoute is a route as the table registered it: what the drift
// test compares with the OpenAPI description (api.DescribedRoutes).
type registeredRoute struct {
	pattern string
	scope   scope
}

// counted wraps a handler that is not an API route (the review page's) so
// that its requests are counted by pattern and status too.
func (s *Server) counted(pattern string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		defer func() { s.d.CountRequest(pattern, sw.code()) }()
		h.ServeHTTP(sw, r)
	})
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
