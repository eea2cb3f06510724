package ui

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/internal/atomicfile"
	"github.com/vfsd/vfsd/internal/weborigin"
)

// The review page's browser authentication. A browser holds no bearer
// token: POST /v1/ui/login (the admin, or a session's token; served by
// package httpapi through Server.MintLogin) mints a
// one-time code; GET /ui/login?code= exchanges it for a cookie naming a
// login the daemon keeps in memory (HttpOnly, SameSite=Strict), bound to
// the principal that minted it — a session's login dies with the
// session's token. Neither the code nor the cookie is a token: the page
// never sees one.
//
// The page has a host name of its own per principal (uiHost):
// vfsd-<16 hex>.localhost, a keyed hash of the principal under a key kept
// in the data dir. Browsers resolve *.localhost to loopback, and a
// host-only cookie set there is sent to that name only — never to
// 127.0.0.1 or localhost, on any port — so an agent's server on loopback
// that the reviewer opens receives nothing. The name is per principal
// because a session token can mint a login for its session, and so learn
// its page's name: were it the admin's too, the agent could serve that
// name on a port of its own and have the reviewer's browser send it the
// admin's cookie. The daemon holds its page's port on every loopback
// address browsers try for the name (package internal/loopback), and
// takes the cookie only at the login's own host, from the page itself: a
// request must say it is same-origin (Sec-Fetch-Site; "none", a URL the
// user opened, for the page's own GETs), so the cookie replayed by any
// other client is refused. Requests that change anything (any method but
// GET and HEAD) must also carry the login's CSRF token in the header
// Vfsd-CSRF and an Origin of the page's own.
const (
	uiCodeTTL   = 2 * time.Minute
	uiLoginTTL  = 12 * time.Hour
	uiMaxCodes  = 256
	uiMaxLogins = 1024
	// CSRFHeader carries a login's CSRF token on the page's requests
	// that change anything.
	CSRFHeader = "Vfsd-CSRF"
	// uiKeyFile, in the data dir, holds the key that names the page's
	// hosts (uiHost).
	uiKeyFile = "ui.key"
)

// logins holds the review page's one-time codes and logins.
type logins struct {
	mu     sync.Mutex
	codes  map[string]*login // by the code's SHA-256
	logins map[string]*login // by the cookie's SHA-256
}

// login is a browser's login to the review page.
type login struct {
	session   string // "" for the admin
	tokenHash string // a session login's token hash: the login lives while it does
	host      string // the page's host name for this login (Host)
	csrf      string
	expires   time.Time
}

// Viewer is who looks at the review page: the admin, or one session's
// reviewer — signed in by the page's cookie, or a caller with a token or
// on the daemon's socket.
type Viewer struct {
	// Session is the session the viewer reaches; "" for the admin.
	Session string
	// Login says the page's cookie signed the viewer in (not a token or
	// the socket).
	Login bool
	// CSRF is a login's token for requests that change anything.
	CSRF string
}

// Admin reports whether the viewer is the admin.
func (v *Viewer) Admin() bool { return v.Session == "" }

type viewerKey struct{}

// WithViewer returns ctx carrying the request's viewer (the API server
// attaches it when the page's cookie authenticated the request).
func WithViewer(ctx context.Context, v *Viewer) context.Context {
	return context.WithValue(ctx, viewerKey{}, v)
}

// ViewerFrom returns the viewer ctx carries, or nil.
func ViewerFrom(ctx context.Context) *Viewer {
	v, _ := ctx.Value(viewerKey{}).(*Viewer)
	return v
}

// loadUIKey returns the key that names the review page's hosts, from the
// data dir, made (mode 0600) on first use.
func loadUIKey(dataDir string) ([]byte, error) {
	path := filepath.Join(dataDir, uiKeyFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		key, err := hex.DecodeString(strings.TrimSpace(string(b)))
		if err != nil || len(key) != 32 {
			return nil, fmt.Errorf("review page key %s is damaged; remove it to have a new one made (the page's addresses change: browsers sign in again)", path)
		}
		return key, nil
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("review page key: %w", err)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("review page key: %w", err)
	}
	if err := atomicfile.WriteFile(path, []byte(hex.EncodeToString(key)+"\n"), 0o600, ""); err != nil {
		return nil, fmt.Errorf("review page key: write %s: %w", path, err)
	}
	return key, nil
}

// Host is the review page's host name for the logins of the session
// whose incarnation is uid ("" for the admin's): vfsd-<16 hex>.localhost,
// the hex a keyed hash of the principal, so that knowing one principal's
// name tells nothing of another's.
func (s *Server) Host(uid string) string {
	m := hmac.New(sha256.New, s.key)
	if uid == "" {
		m.Write([]byte("vfsd review page: the admin"))
	} else {
		m.Write([]byte("vfsd review page: session " + uid))
	}
	return "vfsd-" + hex.EncodeToString(m.Sum(nil)[:8]) + ".localhost"
}

// hostName is the name part of a Host header (without its port),
// lower-cased.
func hostName(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		hostport = h
	}
	return strings.ToLower(hostport)
}

// cookieName is the review page's cookie: named after the data dir, as
// cookies do not tell ports apart and two daemons may serve one host.
func (s *Server) cookieName() string {
	h := sha256.Sum256([]byte(s.cfg.DataDir))
	return "vfsd_ui_" + hex.EncodeToString(h[:4])
}

// mint makes a one-time code for a login to session ("" the admin)
// bound to the session token whose hash is th, at the page's host name
// host.
func (s *Server) mint(session, th, host string) (string, time.Time, error) {
	a := &s.logins
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.codes == nil {
		a.codes = map[string]*login{}
	}
	for k, c := range a.codes {
		if now.After(c.expires) {
			delete(a.codes, k)
		}
	}
	if len(a.codes) >= uiMaxCodes {
		return "", time.Time{}, apiErr(api.CodeLimitExceeded, "%d review-page logins are waiting to be used; use one, or wait %s for them to expire", len(a.codes), uiCodeTTL)
	}
	code := newSecret()
	exp := now.Add(uiCodeTTL)
	a.codes[tokenHash(code)] = &login{session: session, tokenHash: th, host: host, expires: exp}
	return code, exp, nil
}

// codeHost returns the page's host name of an unexpired one-time code,
// without using it up.
func (s *Server) codeHost(code string) (string, bool) {
	a := &s.logins
	a.mu.Lock()
	defer a.mu.Unlock()
	c, ok := a.codes[tokenHash(code)]
	if !ok || time.Now().After(c.expires) {
		return "", false
	}
	return c.host, true
}

// redeem exchanges a one-time code for a login, returning the cookie's
// value and the login.
func (s *Server) redeem(code string) (string, *login, bool) {
	a := &s.logins
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	k := tokenHash(code)
	c, ok := a.codes[k]
	if !ok {
		return "", nil, false
	}
	delete(a.codes, k)
	if now.After(c.expires) || !s.alive(c) {
		return "", nil, false
	}
	if a.logins == nil {
		a.logins = map[string]*login{}
	}
	for k, l := range a.logins {
		if now.After(l.expires) || !s.alive(l) {
			delete(a.logins, k)
		}
	}
	if len(a.logins) >= uiMaxLogins {
		return "", nil, false
	}
	cookie := newSecret()
	l := &login{session: c.session, tokenHash: c.tokenHash, host: c.host, csrf: newSecret(), expires: now.Add(uiLoginTTL)}
	a.logins[tokenHash(cookie)] = l
	return cookie, l, true
}

// alive reports whether a login's principal still exists: a session
// login's token must still be its session's.
func (s *Server) alive(l *login) bool {
	return l.session == "" || s.cfg.Sessions.Bound(l.session, l.tokenHash)
}

// cookieLogin returns the login the request's cookie names, if any.
func (s *Server) cookieLogin(r *http.Request) *login {
	c, err := r.Cookie(s.cookieName())
	if err != nil || c.Value == "" {
		return nil
	}
	a := &s.logins
	a.mu.Lock()
	defer a.mu.Unlock()
	k := tokenHash(c.Value)
	l, ok := a.logins[k]
	if !ok {
		return nil
	}
	if time.Now().After(l.expires) || !s.alive(l) {
		delete(a.logins, k)
		return nil
	}
	return l
}

// logout ends the request's login.
func (s *Server) logout(r *http.Request) {
	c, err := r.Cookie(s.cookieName())
	if err != nil {
		return
	}
	a := &s.logins
	a.mu.Lock()
	delete(a.logins, tokenHash(c.Value))
	a.mu.Unlock()
}

// Authenticate authenticates a request by the review page's cookie: nil,
// nil when there is no valid cookie. The cookie serves the page only
// (see the top of this file): a request at another host than its login's,
// one that does not come from the page itself by its Sec-Fetch-Site, or
// with a foreign Origin, is refused, and one that changes anything needs
// the page's Origin and CSRF token.
func (s *Server) Authenticate(r *http.Request) (*Viewer, error) {
	l := s.cookieLogin(r)
	if l == nil {
		return nil, nil
	}
	if hostName(r.Host) != l.host {
		return nil, apiErr(api.CodeForbidden, "the review page's login works only at the page's own address (the URL vfsd ui prints), not at %q; other clients use a bearer token", r.Host)
	}
	site := r.Header.Get("Sec-Fetch-Site")
	pageGET := (r.Method == http.MethodGet || r.Method == http.MethodHead) && strings.HasPrefix(r.URL.Path, "/ui/")
	switch {
	case site == "same-origin", site == "none" && pageGET:
	case site == "":
		return nil, apiErr(api.CodeForbidden, "the review page's login serves the page in a browser only, and this request does not say where it comes from (Sec-Fetch-Site): other clients use a bearer token; the page needs a browser that sends it (Chromium 76+, Firefox 90+, Safari 16.4+)")
	default:
		return nil, apiErr(api.CodeForbidden, "the review page's login serves the page's own requests only (Sec-Fetch-Site: same-origin), not a %s one; open the page itself (vfsd ui prints its address)", site)
	}
	origins := r.Header.Values("Origin")
	if len(origins) > 1 || (len(origins) == 1 && !pageOrigin(origins[0], r)) {
		return nil, apiErr(api.CodeForbidden, "the review page's login does not serve requests from origin %q: only the page itself (http://%s) may use it", strings.Join(origins, ", "), r.Host)
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if len(origins) == 0 {
			return nil, apiErr(api.CodeForbidden, "a %s with the review page's login must carry an Origin header (browsers send it); use a bearer token from other clients", r.Method)
		}
		got := r.Header.Get(CSRFHeader)
		if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(l.csrf)) != 1 {
			return nil, apiErr(api.CodeForbidden, "a %s with the review page's login must carry the page's %s header; reload the page", r.Method, CSRFHeader)
		}
	}
	return &Viewer{Session: l.session, Login: true, CSRF: l.csrf}, nil
}

// pageOrigin reports whether origin o is the request's own: its scheme
// and the Host it was sent to.
func pageOrigin(o string, r *http.Request) bool {
	norm, err := weborigin.Normalize(o)
	if err != nil {
		return false
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return norm == scheme+"://"+strings.ToLower(r.Host)
}

// tokenHash is how the page keeps its codes and cookies: SHA-256, in
// hex.
func tokenHash(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// newSecret returns 32 random bytes, base64url: a one-time code, a
// cookie, a CSRF token.
func newSecret() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("ui: no randomness for a secret: %v", err))
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// apiErr builds an API error with a formatted message.
func apiErr(code, format string, args ...any) *api.Error {
	return &api.Error{Code: code, Message: fmt.Sprintf(format, args...), Status: api.HTTPStatus(code)}
}
