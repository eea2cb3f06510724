package daemon

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/vfsd/vfsd/api"
)

// The review page's browser authentication. A browser holds no bearer
// token: POST /v1/ui/login (the admin, or a session's token) mints a
// one-time code; GET /ui/login?code= exchanges it for a cookie naming a
// login the daemon keeps in memory (HttpOnly, SameSite=Strict), bound to
// the principal that minted it — a session's login dies with the
// session's token. Neither the code nor the cookie is a token: the page
// never sees one. Requests the cookie authenticates that change anything
// (any method but GET and HEAD) must carry the login's CSRF token in the
// header Vfsd-CSRF and an Origin of the request's own host (or one of
// --allow-origin); a cookie request with another Origin is refused.
const (
	uiCodeTTL    = 2 * time.Minute
	uiLoginTTL   = 12 * time.Hour
	uiMaxCodes   = 256
	uiMaxLogins  = 1024
	uiCSRFHeader = "Vfsd-CSRF"
	// uiProxyHeader marks a request that `vfsd ui`'s loopback proxy
	// forwards over the socket: it is authenticated as a TCP request
	// (cookie or bearer), not as the socket's admin. It can only lower a
	// socket caller's rights.
	uiProxyHeader = "Vfsd-UI-Proxy"
)

// uiAuth holds the review page's one-time codes and logins.
type uiAuth struct {
	mu     sync.Mutex
	codes  map[string]*uiLogin // by the code's SHA-256
	logins map[string]*uiLogin // by the cookie's SHA-256
}

// uiLogin is a browser's login to the review page.
type uiLogin struct {
	session   string // "" for the admin
	tokenHash string // a session login's token hash: the login lives while it does
	csrf      string
	expires   time.Time
}

// uiCookieName is the review page's cookie: named after the data dir, as
// cookies do not tell ports apart and two daemons may serve one host.
func (d *Daemon) uiCookieName() string {
	h := sha256.Sum256([]byte(d.cfg.DataDir))
	return "vfsd_ui_" + hex.EncodeToString(h[:4])
}

// mintUILogin makes a one-time code for a login to session ("" the
// admin) bound to the session token whose hash is th.
func (d *Daemon) mintUILogin(session, th string) (string, time.Time, error) {
	a := &d.uiAuth
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.codes == nil {
		a.codes = map[string]*uiLogin{}
	}
	for k, c := range a.codes {
		if now.After(c.expires) {
			delete(a.codes, k)
		}
	}
	if len(a.codes) >= uiMaxCodes {
		return "", time.Time{}, apiErr(api.CodeLimitExceeded, "%d review-page logins are waiting to be used; use one, or wait %s for them to expire", len(a.codes), uiCodeTTL)
	}
	code := newToken("")
	exp := now.Add(uiCodeTTL)
	a.codes[tokenHash(code)] = &uiLogin{session: session, tokenHash: th, expires: exp}
	return code, exp, nil
}

// redeemUICode exchanges a one-time code for a login, returning the
// cookie's value and the login.
func (d *Daemon) redeemUICode(code string) (string, *uiLogin, bool) {
	a := &d.uiAuth
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	k := tokenHash(code)
	c, ok := a.codes[k]
	if !ok {
		return "", nil, false
	}
	delete(a.codes, k)
	if now.After(c.expires) || !d.uiLoginAlive(c) {
		return "", nil, false
	}
	if a.logins == nil {
		a.logins = map[string]*uiLogin{}
	}
	for k, l := range a.logins {
		if now.After(l.expires) || !d.uiLoginAlive(l) {
			delete(a.logins, k)
		}
	}
	if len(a.logins) >= uiMaxLogins {
		return "", nil, false
	}
	cookie := newToken("")
	l := &uiLogin{session: c.session, tokenHash: c.tokenHash, csrf: newToken(""), expires: now.Add(uiLoginTTL)}
	a.logins[tokenHash(cookie)] = l
	return cookie, l, true
}

// uiLoginAlive reports whether a login's principal still exists: a
// session login's token must still be its session's.
func (d *Daemon) uiLoginAlive(l *uiLogin) bool {
	if l.session == "" {
		return true
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.tokens[l.tokenHash] == l.session
}

// sessionTokenHash returns the hash of session id's token.
func (d *Daemon) sessionTokenHash(id string) (string, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	for h, s := range d.tokens {
		if s == id {
			return h, true
		}
	}
	return "", false
}

// cookieLogin returns the login the request's cookie names, if any.
func (d *Daemon) cookieLogin(r *http.Request) *uiLogin {
	c, err := r.Cookie(d.uiCookieName())
	if err != nil || c.Value == "" {
		return nil
	}
	a := &d.uiAuth
	a.mu.Lock()
	defer a.mu.Unlock()
	k := tokenHash(c.Value)
	l, ok := a.logins[k]
	if !ok {
		return nil
	}
	if time.Now().After(l.expires) || !d.uiLoginAlive(l) {
		delete(a.logins, k)
		return nil
	}
	return l
}

// logoutUI ends the request's login.
func (d *Daemon) logoutUI(r *http.Request) {
	c, err := r.Cookie(d.uiCookieName())
	if err != nil {
		return
	}
	a := &d.uiAuth
	a.mu.Lock()
	delete(a.logins, tokenHash(c.Value))
	a.mu.Unlock()
}

// cookiePrincipal authenticates a request by the review page's cookie and
// checks it against cross-site use: nil, nil when there is no valid
// cookie.
func (d *Daemon) cookiePrincipal(r *http.Request) (*principal, error) {
	l := d.cookieLogin(r)
	if l == nil {
		return nil, nil
	}
	origins := r.Header.Values("Origin")
	if len(origins) > 1 || (len(origins) == 1 && !d.sameOrigin(origins[0], r)) {
		return nil, apiErr(api.CodeForbidden, "the review page's login does not serve requests from origin %q: only pages of %s itself (or of --allow-origin) may use it", strings.Join(origins, ", "), r.Host)
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if len(origins) == 0 {
			return nil, apiErr(api.CodeForbidden, "a %s with the review page's login must carry an Origin header (browsers send it); use a bearer token from other clients", r.Method)
		}
		got := r.Header.Get(uiCSRFHeader)
		if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(l.csrf)) != 1 {
			return nil, apiErr(api.CodeForbidden, "a %s with the review page's login must carry the page's %s header; reload the page", r.Method, uiCSRFHeader)
		}
	}
	return &principal{admin: l.session == "", session: l.session, ui: l}, nil
}

// sameOrigin reports whether origin o is the request's own (scheme and
// the Host it was sent to) or one --allow-origin names.
func (d *Daemon) sameOrigin(o string, r *http.Request) bool {
	norm, err := normalizeOrigin(o)
	if err != nil {
		return false
	}
	for _, a := range d.cfg.AllowOrigins {
		if a == norm {
			return true
		}
	}
	u, err := url.Parse(norm)
	if err != nil {
		return false
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return u.Scheme == scheme && strings.EqualFold(u.Host, r.Host)
}

// uiBaseURL is the review page's address on the TCP listener ("" without
// one): a wildcard listen address is reached on loopback.
func (d *Daemon) uiBaseURL(r *http.Request) string {
	if p := principalOf(r.Context()); p != nil {
		if v, _ := r.Context().Value(viaSocketKey{}).(bool); !v {
			return "http://" + r.Host // asked over TCP: the address the caller used
		}
	}
	if d.tcpAddr == "" {
		return ""
	}
	host, port, err := net.SplitHostPort(d.tcpAddr)
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}
