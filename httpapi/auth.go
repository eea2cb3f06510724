package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/daemon"
	"github.com/vfsd/vfsd/ui"
)

// proxyHeader marks a request that `vfsd ui`'s loopback proxy forwards
// over the socket: it is authenticated as a TCP request (cookie or
// bearer), not as the socket's admin. It can only lower a socket caller's
// rights.
const proxyHeader = "Vfsd-UI-Proxy"

// scope is what a route requires of its caller.
type scope int

const (
	scopePublic  scope = iota // anyone, unauthenticated included (/healthz)
	scopeAny                  // any authenticated caller (blobs)
	scopeSession              // the admin, or the token of the route's {id}
	scopeAdmin                // the admin only
	scopePage                 // the review page's routes: each authenticates its viewer itself
)

// String is the scope as the OpenAPI description names it (x-vfsd-scope).
func (sc scope) String() string {
	return [...]string{"public", "any", "session", "admin", "page"}[sc]
}

type viaSocketKey struct{}

// fromSocket reports whether r arrived on the daemon's Unix socket.
func fromSocket(r *http.Request) bool {
	v, _ := r.Context().Value(viaSocketKey{}).(bool)
	return v
}

// authenticate works out who the request is from: anything arriving on the
// Unix socket is the admin (unless `vfsd ui`'s proxy forwarded it); else
// the bearer token says, or the review page's cookie.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		// The review page's viewer is the caller, whoever it is; a
		// cookie's login says so (Viewer.Login).
		as := func(c daemon.Caller, v *ui.Viewer) {
			ctx = daemon.WithCaller(ui.WithViewer(ctx, v), c)
		}
		switch {
		case fromSocket(r) && r.Header.Get(proxyHeader) == "":
			as(daemon.Caller{Admin: true}, &ui.Viewer{})
		default:
			if tok, ok := bearer(r); ok {
				c, ok := s.d.Authenticate(tok)
				if !ok {
					writeError(w, apiErr(api.CodeUnauthorized, "the bearer token is not valid: not the admin token, nor the token of an open session"))
					return
				}
				as(c, &ui.Viewer{Session: c.Session})
				break
			}
			v, err := s.review.Authenticate(r)
			if err != nil {
				writeError(w, err)
				return
			}
			if v != nil {
				as(daemon.Caller{Admin: v.Admin(), Session: v.Session}, v)
			}
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// bearer returns the request's bearer token.
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return "", false
	}
	return strings.TrimSpace(tok), true
}

// authorize checks the request's caller against a route's scope.
func authorize(r *http.Request, sc scope) error {
	if sc == scopePublic {
		return nil
	}
	p, ok := daemon.CallerFrom(r.Context())
	switch {
	case !ok:
		return apiErr(api.CodeUnauthorized, "send a bearer token (Authorization: Bearer TOKEN): the admin token (in the daemon's data dir, file token) or a session's token")
	case p.Admin, sc == scopeAny:
		return nil
	case sc == scopeSession && p.Session == r.PathValue("id"):
		return nil
	case sc == scopeSession:
		return apiErr(api.CodeForbidden, "this token belongs to session %s; it cannot reach session %q", p.Session, r.PathValue("id"))
	}
	return apiErr(api.CodeForbidden, "%s %s needs the admin token; this token belongs to session %s and reaches its tools, snapshots, diffs and events, and the blobs (see docs/api.md, Authorization)", r.Method, r.URL.Path, p.Session)
}

// callerOf is the request's caller (the zero Caller when it has none).
func callerOf(ctx context.Context) daemon.Caller {
	c, _ := daemon.CallerFrom(ctx)
	return c
}
