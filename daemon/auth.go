package daemon

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/vfsd/vfsd/internal/atomicfile"

	"github.com/vfsd/vfsd/api"
)

// Token prefixes: they tell admin and session tokens apart in logs and
// configuration, and are part of the token.
const (
	adminTokenPrefix   = "vfsd_admin_"
	sessionTokenPrefix = "vfsd_sess_"
)

// newToken returns prefix followed by 32 random bytes, base64url.
func newToken(prefix string) string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("daemon: no randomness for a token: %v", err))
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// tokenHash is how the daemon keeps a session token.
func tokenHash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// loadAdminToken returns the admin token: the one configured, or the one in
// the token file, or — when TCP is on and there is none — a new one written
// to the token file with mode 0600. "" means there is no admin token (and
// no TCP).
func loadAdminToken(cfg Config) (string, error) {
	if cfg.Token != "" {
		return strings.TrimSpace(cfg.Token), nil
	}
	b, err := os.ReadFile(cfg.TokenFile)
	switch {
	case err == nil:
		tok := strings.TrimSpace(string(b))
		if tok == "" {
			return "", fmt.Errorf("admin token file %s is empty; remove it to have a new token generated", cfg.TokenFile)
		}
		return tok, nil
	case !errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("admin token: %w", err)
	case cfg.Listen == "":
		return "", nil
	}
	tok := newToken(adminTokenPrefix)
	if err := os.MkdirAll(filepath.Dir(cfg.TokenFile), 0o700); err != nil {
		return "", fmt.Errorf("admin token: %w", err)
	}
	if err := atomicfile.WriteFile(cfg.TokenFile, []byte(tok+"\n"), 0o600, ""); err != nil {
		return "", fmt.Errorf("admin token: write %s: %w", cfg.TokenFile, err)
	}
	return tok, nil
}

// principal is who a request acts for: the admin, or one session.
type principal struct {
	admin   bool
	session string // the session a session token reaches
	// ui is the review page's login when the request's cookie
	// authenticated it (uiauth.go).
	ui *uiLogin
}

// scope is what a route requires of its caller.
type scope int

const (
	scopePublic  scope = iota // anyone, unauthenticated included (/healthz)
	scopeAny                  // any authenticated caller (blobs)
	scopeSession              // the admin, or the token of the route's {id}
	scopeAdmin                // the admin only
)

type principalKey struct{}

// principalOf returns the request's principal, or nil if it has none.
func principalOf(ctx context.Context) *principal {
	p, _ := ctx.Value(principalKey{}).(*principal)
	return p
}

type viaSocketKey struct{}

// authenticate works out who the request is from: anything arriving on the
// Unix socket is the admin; on TCP, the bearer token says.
func (d *Daemon) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p *principal
		if v, _ := r.Context().Value(viaSocketKey{}).(bool); v && r.Header.Get(uiProxyHeader) == "" {
			p = &principal{admin: true}
		} else if tok, ok := bearer(r); ok {
			p = d.tokenPrincipal(tok)
			if p == nil {
				writeError(w, apiErr(api.CodeUnauthorized, "the bearer token is not valid: not the admin token, nor the token of an open session"))
				return
			}
		} else if cp, err := d.cookiePrincipal(r); err != nil {
			writeError(w, err)
			return
		} else {
			p = cp
		}
		if p != nil {
			r = r.WithContext(context.WithValue(r.Context(), principalKey{}, p))
		}
		next.ServeHTTP(w, r)
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

// tokenPrincipal returns whom tok belongs to, or nil.
func (d *Daemon) tokenPrincipal(tok string) *principal {
	if d.adminToken != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(d.adminToken)) == 1 {
		return &principal{admin: true}
	}
	if !strings.HasPrefix(tok, sessionTokenPrefix) {
		return nil
	}
	d.mu.RLock()
	id, ok := d.tokens[tokenHash(tok)]
	d.mu.RUnlock()
	if !ok {
		return nil
	}
	return &principal{session: id}
}

// authorize checks the request's principal against a route's scope.
func authorize(r *http.Request, sc scope) error {
	if sc == scopePublic {
		return nil
	}
	p := principalOf(r.Context())
	switch {
	case p == nil:
		return apiErr(api.CodeUnauthorized, "send a bearer token (Authorization: Bearer TOKEN): the admin token (in the daemon's data dir, file token) or a session's token")
	case p.admin, sc == scopeAny:
		return nil
	case sc == scopeSession && p.session == r.PathValue("id"):
		return nil
	case sc == scopeSession:
		return apiErr(api.CodeForbidden, "this token belongs to session %s; it cannot reach session %q", p.session, r.PathValue("id"))
	}
	return apiErr(api.CodeForbidden, "%s %s needs the admin token; this token belongs to session %s and reaches its tools, snapshots, diffs and events, and the blobs (see docs/api.md, Authorization)", r.Method, r.URL.Path, p.session)
}
