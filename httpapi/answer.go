package httpapi

import (
	"context"
	"net/http"
)

// Most routes are one call of the daemon: these turn a typed method into
// a handler, so that the route table names the method and nothing is
// written twice. Routes with more to read (query parameters, streams)
// have handlers of their own, one file per resource.

// bodyCall serves a route on session {id} whose body is a JSON Req: the
// session is checked before the body is read (a session that does not
// exist says so whatever the body), then call's answer is sent with
// status.
func bodyCall[Req, Resp any](s *Server, status int, call func(context.Context, string, Req) (Resp, error)) apiHandler {
	return func(w http.ResponseWriter, r *http.Request) error {
		id := r.PathValue("id")
		if err := s.d.CheckSession(r.Context(), id); err != nil {
			return err
		}
		var req Req
		if err := decodeBody(w, r, &req); err != nil {
			return err
		}
		out, err := call(r.Context(), id, req)
		if err != nil {
			return err
		}
		writeJSON(w, status, out)
		return nil
	}
}

// pathCall serves a route naming one thing by the path value name ("id"
// or "snap"): call's answer is sent with 200.
func pathCall[Resp any](name string, call func(context.Context, string) (Resp, error)) apiHandler {
	return func(w http.ResponseWriter, r *http.Request) error {
		out, err := call(r.Context(), r.PathValue(name))
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, out)
		return nil
	}
}

// plainCall serves a route without parameters: call's answer is sent
// with 200.
func plainCall[Resp any](call func(context.Context) (Resp, error)) apiHandler {
	return func(w http.ResponseWriter, r *http.Request) error {
		out, err := call(r.Context())
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, out)
		return nil
	}
}
