package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
	"github.com/vfsd/vfsd/daemon"
	"github.com/vfsd/vfsd/ui"
)

const uiTestAdminToken = "vfsd_admin_uitest"

// uiEnv is a daemon behind an httptest server (a TCP listener as far as
// authentication goes) with a session "rev" staged from a host folder.
type uiEnv struct {
	t        *testing.T
	api      *Server
	srv      *httptest.Server
	admin    *client.Client
	root     string
	sessTok  string
	importID string
}

func newUIEnv(t *testing.T, files map[string]string) *uiEnv {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(root, name), []byte(content), 0o644))
	}
	sockDir, err := os.MkdirTemp("", "vfsdui")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	cfg := daemon.Config{DataDir: t.TempDir(), Socket: filepath.Join(sockDir, "s.sock"), Token: uiTestAdminToken,
		AllowRoots: []string{root}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	a, err := Open(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { a.Daemon().Close() })
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	admin, err := client.New(client.Options{Addr: srv.URL, Token: uiTestAdminToken})
	require.NoError(t, err)
	t.Cleanup(admin.Close)
	cr, err := admin.CreateSession(context.Background(), api.CreateSessionRequest{ID: "rev",
		Mounts: []api.Mount{{HostPath: root, MountPath: "/"}}})
	require.NoError(t, err)
	return &uiEnv{t: t, api: a, srv: srv, admin: admin, root: root, sessTok: cr.Token, importID: cr.Session.ImportSnapshot}
}

// browser is an HTTP client with a cookie jar, as a browser is: it
// resolves every *.localhost name to loopback and sends the Fetch
// metadata a browser sends (Sec-Fetch-Site).
type browser struct {
	t    *testing.T
	e    *uiEnv
	hc   *http.Client
	csrf string
	// origin is the page's origin: where its login URL took the browser.
	origin string
}

func (e *uiEnv) browser() *browser {
	jar, err := cookiejar.New(nil)
	require.NoError(e.t, err)
	var dialer net.Dialer
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err == nil && (host == "localhost" || strings.HasSuffix(host, ".localhost")) {
			addr = net.JoinHostPort("127.0.0.1", port)
		}
		return dialer.DialContext(ctx, network, addr)
	}}
	e.t.Cleanup(tr.CloseIdleConnections)
	return &browser{t: e.t, e: e, origin: e.srv.URL,
		hc: &http.Client{Jar: jar, Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// login signs the browser in with a fresh one-time login (session "" is
// the admin's) at the URL the daemon gives.
func (b *browser) login(session string) *api.UILoginResponse {
	b.t.Helper()
	l, err := b.e.admin.UILogin(context.Background(), session)
	require.NoError(b.t, err)
	b.open(l)
	return l
}

// open opens login l's URL.
func (b *browser) open(l *api.UILoginResponse) {
	b.t.Helper()
	b.at(l)
	code, body, _ := b.do("GET", l.URL, "", nil)
	require.Equal(b.t, 200, code, body)
}

// at takes the origin of login l's URL for the page's.
func (b *browser) at(l *api.UILoginResponse) {
	b.t.Helper()
	u, err := url.Parse(l.URL)
	require.NoError(b.t, err)
	require.Equal(b.t, "/ui/login", u.Path, l.URL)
	b.origin = u.Scheme + "://" + u.Host
}

var csrfMeta = regexp.MustCompile(`<meta name="vfsd-csrf" content="([^"]+)">`)

// do sends a request as the browser: a path is the page's own (fetched
// by it: Sec-Fetch-Site same-origin), a URL one the user opens
// (Sec-Fetch-Site none). hdr adds headers; an empty value removes one.
func (b *browser) do(method, path, body string, hdr map[string]string) (int, string, http.Header) {
	b.t.Helper()
	u, site := path, "none"
	if strings.HasPrefix(path, "/") {
		u, site = b.origin+path, "same-origin"
	}
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	require.NoError(b.t, err)
	req.Header.Set("Sec-Fetch-Site", site)
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := b.hc.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	if m := csrfMeta.FindSubmatch(out); m != nil {
		b.csrf = string(m[1])
	}
	return resp.StatusCode, string(out), resp.Header
}

// post sends what the page's script sends: the CSRF token and the
// page's own Origin.
func (b *browser) post(method, path, body string) (int, string) {
	code, out, _ := b.do(method, path, body, map[string]string{"Vfsd-CSRF": b.csrf, "Origin": b.origin, "Content-Type": "application/json"})
	return code, out
}

func TestUILoginCookie(t *testing.T) {
	e := newUIEnv(t, map[string]string{"a.go": "package a\n"})
	b := e.browser()

	code, body, h := b.do("GET", "/ui/", "", nil)
	require.Equal(t, http.StatusUnauthorized, code)
	require.Contains(t, body, "vfsd ui")
	require.Equal(t, ui.CSP, h.Get("Content-Security-Policy"))
	require.Equal(t, "nosniff", h.Get("X-Content-Type-Options"))
	require.Equal(t, "no-store", h.Get("Cache-Control"))

	l, err := e.admin.UILogin(context.Background(), "")
	require.NoError(t, err)
	b.at(l)
	code, body, h = b.do("GET", l.URL, "", nil)
	require.Equal(t, 200, code, body)
	sc := h.Get("Set-Cookie")
	require.Contains(t, sc, "HttpOnly")
	require.Contains(t, sc, "SameSite=Strict")
	require.Contains(t, sc, "Path=/")
	require.Contains(t, body, `href="/ui/" data-follow="1"`)
	// A code works once.
	code, _, _ = b.do("GET", l.URL, "", nil)
	require.Equal(t, http.StatusUnauthorized, code)
	code, _, _ = b.do("GET", "/ui/login?code=nope", "", nil)
	require.Equal(t, http.StatusUnauthorized, code)

	code, body, _ = b.do("GET", "/ui/", "", nil)
	require.Equal(t, 200, code, body)
	require.Contains(t, body, `href="/ui/s/rev"`)
	require.Contains(t, body, e.root+" → /")
	require.NotEmpty(t, b.csrf)
	for _, secret := range []string{uiTestAdminToken, e.sessTok, strings.TrimPrefix(l.Path, "/ui/login?code=")} {
		require.NotContains(t, body, secret, "a page must hold no token")
	}
	code, body, _ = b.do("GET", "/ui/s/rev", "", nil)
	require.Equal(t, 200, code, body)
	require.NotContains(t, body, uiTestAdminToken)
	require.NotContains(t, body, e.sessTok)

	code, _, h = b.do("GET", "/ui/static/app.js", "", nil)
	require.Equal(t, 200, code)
	require.Equal(t, "text/javascript; charset=utf-8", h.Get("Content-Type"))
	code, _, _ = b.do("GET", "/ui/static/nope.js", "", nil)
	require.Equal(t, 404, code)

	// Sign out: a POST like any other, with the CSRF token.
	code, _, _ = b.do("POST", "/ui/logout", "", map[string]string{"Origin": b.origin})
	require.Equal(t, http.StatusForbidden, code)
	code, _ = b.post("POST", "/ui/logout", "")
	require.Equal(t, http.StatusNoContent, code)
	code, _, _ = b.do("GET", "/ui/", "", nil)
	require.Equal(t, http.StatusUnauthorized, code)
}

func TestUICSRF(t *testing.T) {
	e := newUIEnv(t, map[string]string{"a.go": "package a\n"})
	b := e.browser()
	b.login("")
	b.do("GET", "/ui/s/rev", "", nil) // the page's CSRF token

	tests := []struct {
		name   string
		method string
		path   string
		hdr    map[string]string
		want   int
	}{
		{"no Origin, no token", "POST", "/v1/sessions/rev/snapshots", nil, 403},
		{"no token", "POST", "/v1/sessions/rev/snapshots", map[string]string{"Origin": b.origin}, 403},
		{"wrong token", "POST", "/v1/sessions/rev/snapshots", map[string]string{"Origin": b.origin, "Vfsd-CSRF": "x"}, 403},
		{"other origin", "POST", "/v1/sessions/rev/snapshots", map[string]string{"Origin": "http://evil.example", "Vfsd-CSRF": b.csrf}, 403},
		{"other port", "POST", "/v1/sessions/rev/snapshots", map[string]string{"Origin": "http://127.0.0.1:1", "Vfsd-CSRF": b.csrf}, 403},
		{"no Origin", "DELETE", "/v1/sessions/rev", map[string]string{"Vfsd-CSRF": b.csrf}, 403},
		{"GET from another origin", "GET", "/v1/sessions", map[string]string{"Origin": "http://evil.example"}, 403},
		{"GET", "GET", "/v1/sessions", nil, 200},
		{"the page's own POST", "POST", "/v1/sessions/rev/snapshots", map[string]string{"Origin": b.origin, "Vfsd-CSRF": b.csrf}, 201},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body, _ := b.do(tc.method, tc.path, "", tc.hdr)
			require.Equal(t, tc.want, code, body)
		})
	}
	// A cookie-authenticated caller cannot mint further logins.
	code, _ := b.post("POST", "/v1/ui/login", "{}")
	require.Equal(t, http.StatusForbidden, code)
}

func TestUISessionLogin(t *testing.T) {
	e := newUIEnv(t, map[string]string{"a.go": "package a\n"})
	ctx := context.Background()
	_, err := e.admin.CreateSession(ctx, api.CreateSessionRequest{ID: "other"})
	require.NoError(t, err)

	// A session token mints a login for its own session only.
	sc, err := client.New(client.Options{Addr: e.srv.URL, Token: e.sessTok})
	require.NoError(t, err)
	defer sc.Close()
	l, err := sc.UILogin(ctx, "")
	require.NoError(t, err)
	require.Equal(t, "rev", l.Session)
	_, err = sc.UILogin(ctx, "other")
	require.Equal(t, api.CodeForbidden, client.Code(err))

	b := e.browser()
	b.at(l)
	code, body, _ := b.do("GET", l.URL, "", nil)
	require.Equal(t, 200, code, body)
	require.Contains(t, body, `href="/ui/s/rev"`)
	code, _, h := b.do("GET", "/ui/", "", nil)
	require.Equal(t, http.StatusFound, code)
	require.Equal(t, "/ui/s/rev", h.Get("Location"))
	code, body, _ = b.do("GET", "/ui/s/rev", "", nil)
	require.Equal(t, 200, code, body)
	require.NotContains(t, body, "btn-apply-preview", "apply needs the admin")
	code, _, _ = b.do("GET", "/ui/s/other", "", nil)
	require.Equal(t, http.StatusForbidden, code)
	code, _, _ = b.do("GET", "/v1/sessions", "", nil)
	require.Equal(t, http.StatusForbidden, code)

	// The login dies with the session's token.
	require.NoError(t, e.admin.CloseSession(ctx, "rev"))
	code, _, _ = b.do("GET", "/ui/s/rev", "", nil)
	require.Equal(t, http.StatusUnauthorized, code)
}

func TestUIEscapes(t *testing.T) {
	evil := `<img src=x onerror=alert(1)>`
	content := "a</script><script>alert(2)</script>\n"
	e := newUIEnv(t, map[string]string{evil: content, "b.txt": "b\n"})
	ctx := context.Background()
	r, err := e.admin.CallTool(ctx, "rev", "edit_file", json.RawMessage(`{"path":"<img src=x onerror=alert(1)>","old_string":"a</script>","new_string":"<b onmouseover=alert(3)>"}`))
	require.NoError(t, err)
	require.Equal(t, "ok", r.Status, string(r.JSON))
	_, err = e.admin.CreateSnapshot(ctx, "rev", `<svg onload=alert(4)>`)
	require.NoError(t, err)
	snaps, err := e.admin.Snapshots(ctx, "rev")
	require.NoError(t, err)

	b := e.browser()
	b.login("")
	for _, path := range []string{"/ui/", "/ui/s/rev", "/ui/s/rev?call=1", "/ui/s/rev?snap=" + snaps[0].ID} {
		code, body, _ := b.do("GET", path, "", nil)
		require.Equal(t, 200, code, body)
		for _, raw := range []string{"<img", "<script>alert", "<b onmouseover", "<svg"} {
			require.NotContains(t, body, raw, "%s renders attacker text as markup", path)
		}
		require.NotRegexp(t, `(?i)<script>[^<]`, body, "%s has an inline script", path)
	}
	_, body, _ := b.do("GET", "/ui/s/rev", "", nil)
	require.Contains(t, body, "&lt;img src=x onerror=alert(1)&gt;")
	require.Contains(t, body, `<span class=" x">&lt;</span><span class=" x">/</span><span class=" x">script</span>`, "the diff's </script>, as text")
	_, body, _ = b.do("GET", "/ui/s/rev?snap="+snaps[0].ID, "", nil)
	require.Contains(t, body, "&lt;svg onload=alert(4)&gt;")
}

func TestUIDiffs(t *testing.T) {
	e := newUIEnv(t, map[string]string{"main.go": "package main\n\nfunc main() {\n\tprintln(\"hello\")\n}\n"})
	ctx := context.Background()
	r, err := e.admin.CallTool(ctx, "rev", "edit_file", json.RawMessage(`{"path":"main.go","old_string":"println(\"hello\")","new_string":"println(\"hello, world\")"}`))
	require.NoError(t, err)
	require.Equal(t, "ok", r.Status)
	r, err = e.admin.CallTool(ctx, "rev", "write_file", json.RawMessage(`{"path":"new.txt","inline_text":"one\n"}`))
	require.NoError(t, err)
	require.Equal(t, "ok", r.Status)
	snap, err := e.admin.CreateSnapshot(ctx, "rev", "after two calls")
	require.NoError(t, err)

	b := e.browser()
	b.login("")
	// The whole session against its import: both files, side by side.
	code, body, _ := b.do("GET", "/ui/s/rev", "", nil)
	require.Equal(t, 200, code, body)
	require.Contains(t, body, "against its import")
	require.Contains(t, body, `data-path="main.go"`)
	require.Contains(t, body, `data-path="new.txt"`)
	require.Contains(t, body, `<tr class="chg">`)
	require.Contains(t, body, `<span class="s x">&#34;hello, world&#34;</span>`, "the changed token is marked, coloured as a string")
	require.Contains(t, body, `<span class="k">func</span>`)
	require.Contains(t, body, `data-call="1"`)
	require.Contains(t, body, `data-call="2"`)
	require.Contains(t, body, "btn-apply-preview")
	require.Contains(t, body, `id="btn-rewind"`)
	require.Contains(t, body, `id="btn-rebase-preview"`)
	// The file tree jumps to each file's diff.
	m := regexp.MustCompile(`<a href="#(f-\d+)">[^\n]*<span class="name">main.go</span></a>`).FindStringSubmatch(body)
	require.NotNil(t, m, "main.go in the file tree")
	anchor := m[1]
	require.Contains(t, body, `<article class="file" id="`+anchor+`" data-path="main.go"`)

	// A call: the diff its receipt carries.
	_, body, _ = b.do("GET", "/ui/s/rev?call=1", "", nil)
	require.Contains(t, body, "Call #1: edit_file (ok)")
	require.Contains(t, body, `data-path="main.go"`)
	require.Contains(t, body, `<tr class="chg">`)
	require.Contains(t, body, "Parameters")
	// A call whose receipt has no diff says so.
	_, body, _ = b.do("GET", "/ui/s/rev?call=2", "", nil)
	require.Contains(t, body, "its result carries no diff")
	_, body, _ = b.do("GET", "/ui/s/rev?call=99", "", nil)
	require.Contains(t, body, "is not in the session&#39;s call log")

	// A snapshot against the state before it.
	_, body, _ = b.do("GET", "/ui/s/rev?snap="+snap.ID[:12], "", nil)
	require.Contains(t, body, "after two calls")
	require.Contains(t, body, `data-path="new.txt"`)
}

// TestUIFeatureDetect: the rewind, rebase and log routes another part of
// vfsd adds are used when the daemon has them.
func TestUIFeatureDetect(t *testing.T) {
	e := newUIEnv(t, map[string]string{"a.txt": "a\n"})
	ctx := context.Background()
	r, err := e.admin.CallTool(ctx, "rev", "write_file", json.RawMessage(`{"path":"<i>b</i>.txt","inline_text":"b\n"}`))
	require.NoError(t, err)
	require.Equal(t, "ok", r.Status)
	b := e.browser()
	b.login("")
	code, body, _ := b.do("GET", "/ui/s/rev", "", nil)
	require.Equal(t, 200, code, body)
	// The daemon has the history routes: the page offers rewind and
	// rebase, and its timeline is the log.
	require.Contains(t, body, `id="btn-rewind"`)
	require.Contains(t, body, `id="btn-rebase-preview"`)
	require.Contains(t, body, `class="entry kind-call op-write_file changed"`)
	require.Contains(t, body, "&lt;i&gt;b&lt;/i&gt;.txt", "a log entry's paths are escaped")
	require.Contains(t, body, `data-key="call" data-value="1"`)
}

// TestUIProxy: what vfsd ui's loopback proxy forwards over the socket is
// authenticated like a TCP request, never as the socket's admin.
func TestUIProxy(t *testing.T) {
	e := newUIEnv(t, map[string]string{"a.txt": "a\n"})
	srv := httptest.NewUnstartedServer(e.api.Handler())
	srv.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
		return context.WithValue(ctx, viaSocketKey{}, true)
	}
	srv.Start()
	defer srv.Close()
	get := func(path string, proxied bool) int {
		req, err := http.NewRequest("GET", srv.URL+path, nil)
		require.NoError(t, err)
		if proxied {
			req.Header.Set(proxyHeader, "1")
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, 200, get("/ui/", false), "the socket is the admin")
	require.Equal(t, 200, get("/v1/sessions", false))
	require.Equal(t, 401, get("/ui/", true))
	require.Equal(t, 401, get("/v1/sessions", true))

	// A login minted on the socket, used through the proxy.
	sc, err := client.New(client.Options{Addr: srv.URL})
	require.NoError(t, err)
	defer sc.Close()
	l, err := sc.UILogin(context.Background(), "")
	require.NoError(t, err)
	require.Empty(t, l.URL, "no TCP listener: vfsd ui serves the page")
	require.Regexp(t, `^vfsd-[0-9a-f]{16}\.localhost$`, l.Host)
	b := e.browser()
	b.e = &uiEnv{t: t, api: e.api, srv: srv, admin: e.admin}
	// Opened at the proxy's loopback address, the login moves to the
	// page's host name on the same port, unused.
	code, _, h := b.do("GET", srv.URL+l.Path, "", map[string]string{proxyHeader: "1"})
	require.Equal(t, http.StatusFound, code)
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	require.NoError(t, err)
	b.origin = "http://" + net.JoinHostPort(l.Host, port)
	require.Equal(t, b.origin+l.Path, h.Get("Location"))
	code, _, _ = b.do("GET", h.Get("Location"), "", map[string]string{proxyHeader: "1"})
	require.Equal(t, 200, code)
	code, body, _ := b.do("GET", "/ui/", "", map[string]string{proxyHeader: "1"})
	require.Equal(t, 200, code, body)
	require.Contains(t, body, "rev")
}

// TestUISessionLoginCannotForkWithOptions is finding 4 of security round
// 3 through the review page: a session's login (its cookie, the page's
// CSRF token) forked its session into the weakincentives contract with
// host mounts of its choosing, importing host files its session never
// had. A login acts as its session's token: the fork keeps the origin's
// contract and options.
func TestUISessionLoginCannotForkWithOptions(t *testing.T) {
	e := newUIEnv(t, map[string]string{"a.go": "package a\n"})
	// Written after the session was staged: the session never had it.
	require.NoError(t, os.WriteFile(filepath.Join(e.root, "secret.env"), []byte("TOKEN=hunter2\n"), 0o600))
	sc, err := client.New(client.Options{Addr: e.srv.URL, Token: e.sessTok})
	require.NoError(t, err)
	defer sc.Close()
	l, err := sc.UILogin(context.Background(), "")
	require.NoError(t, err)
	b := e.browser()
	b.open(l)
	b.do("GET", "/ui/s/rev", "", nil) // the page's CSRF token
	require.NotEmpty(t, b.csrf)

	req := fmt.Sprintf(`{"contract":"weakincentives","contract_options":{"mounts":[{"host_path":%q,"mount_path":"leak"}]}}`, e.root)
	code, body := b.post("POST", "/v1/sessions/rev/fork", req)
	if code == http.StatusCreated {
		var f api.CreateSessionResponse
		require.NoError(t, json.Unmarshal([]byte(body), &f))
		r, err := e.admin.CallTool(context.Background(), f.Session.ID, "read_file", json.RawMessage(`{"path":{"segments":["leak","secret.env"]}}`))
		require.NoError(t, err)
		t.Fatalf("a session's review login forked with host mounts of its choosing: %s", r.JSON)
	}
	require.Equal(t, http.StatusForbidden, code, body)
	require.Contains(t, body, `"forbidden"`)

	// Nor through a fork of a snapshot: the admin's only.
	snap, err := e.admin.CreateSnapshot(context.Background(), "rev", "")
	require.NoError(t, err)
	code, body = b.post("POST", "/v1/snapshots/"+snap.ID+"/fork", req)
	require.Equal(t, http.StatusForbidden, code, body)
}

// agentServer is an agent's dev server on loopback, at a port of its own:
// it records every cookie a browser sends it.
type agentServer struct {
	*httptest.Server
	mu      sync.Mutex
	cookies []string
}

func newAgentServer(t *testing.T) *agentServer {
	a := &agentServer{}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.cookies = append(a.cookies, r.Header.Values("Cookie")...)
		a.mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<!doctype html><title>dev server</title><p>the agent's app</p>")
	}))
	t.Cleanup(a.Close)
	return a
}

// received returns the cookies the server was sent.
func (a *agentServer) received() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.cookies)
}

// TestUICookieStaysOnItsPage is finding 5 of security round 3: the review
// page's admin cookie was host-only for 127.0.0.1, and cookies ignore
// ports, so an agent's dev server on 127.0.0.1 that the reviewer opened
// once received it; replayed with curl it was the admin (GET needs nothing
// more; a POST the page's Origin and its CSRF token, both at hand). The
// page now lives at a host name of its own (vfsd-….localhost), which no
// other server is sent the cookie for, and the daemon takes the cookie
// only at that host, from the page itself (Sec-Fetch-Site).
func TestUICookieStaysOnItsPage(t *testing.T) {
	e := newUIEnv(t, map[string]string{"a.go": "package a\n"})
	agent := newAgentServer(t)
	_, agentPort, err := net.SplitHostPort(agent.Listener.Addr().String())
	require.NoError(t, err)
	b := e.browser()
	b.login("")
	code, body, _ := b.do("GET", "/ui/s/rev", "", nil)
	require.Equal(t, 200, code, body)
	require.NotEmpty(t, b.csrf)

	// The reviewer opens the agent's app, by address and by name.
	for _, host := range []string{"127.0.0.1", "localhost"} {
		code, _, _ := b.do("GET", "http://"+host+":"+agentPort+"/", "", nil)
		require.Equal(t, 200, code)
	}
	got := agent.received()
	require.Empty(t, got, "the agent's server received the review page's cookie")

	// What the agent could replay — the page's real cookie, its Origin and
	// CSRF token — without the browser's own headers is refused, at the
	// daemon's address and at the page's.
	page, err := url.Parse(b.origin)
	require.NoError(t, err)
	cookies := b.hc.Jar.Cookies(page)
	require.Len(t, cookies, 1)
	cookie := cookies[0].String()
	replays := []struct {
		name, method, base, path string
		hdr                      map[string]string
	}{
		{"GET the API at the daemon's address", "GET", e.srv.URL, "/v1/sessions", nil},
		{"GET the API at the page's host", "GET", b.origin, "/v1/sessions", nil},
		{"GET the page (its CSRF token)", "GET", b.origin, "/ui/s/rev", nil},
		{"POST as the page", "POST", b.origin, "/v1/sessions/rev/snapshots", map[string]string{"Origin": b.origin, "Vfsd-CSRF": b.csrf}},
		{"POST at the daemon's address", "POST", e.srv.URL, "/v1/sessions/rev/snapshots", map[string]string{"Origin": e.srv.URL, "Vfsd-CSRF": b.csrf, "Sec-Fetch-Site": "same-origin"}},
		{"GET the API from another site", "GET", b.origin, "/v1/sessions", map[string]string{"Sec-Fetch-Site": "cross-site"}},
		{"GET the API as a typed URL", "GET", b.origin, "/v1/sessions", map[string]string{"Sec-Fetch-Site": "none"}},
	}
	for _, tc := range replays {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, tc.base+tc.path, strings.NewReader("{}"))
			require.NoError(t, err)
			req.Header.Set("Cookie", cookie)
			for k, v := range tc.hdr {
				req.Header.Set(k, v)
			}
			resp, err := b.hc.Transport.RoundTrip(req) // no jar: only what the agent sends
			require.NoError(t, err)
			out, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.Contains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, resp.StatusCode,
				"the replayed cookie acted: %s %s → %d %.200s", tc.method, tc.path, resp.StatusCode, out)
			require.NotContains(t, string(out), b.csrf, "the answer shows the page's CSRF token")
		})
	}

	// The browser itself still works: the page, the API it calls.
	code, body, _ = b.do("GET", "/v1/sessions", "", nil)
	require.Equal(t, 200, code, body)
	code, body = b.post("POST", "/v1/sessions/rev/snapshots", "{}")
	require.Equal(t, http.StatusCreated, code, body)
}

// TestUIPageHostsArePerPrincipal: each principal's logins have a page
// host name of their own, derived from a key kept in the data dir, so a
// session token — which may mint a login for its session, and so learns
// its page's name — learns nothing of the admin's page name; a cookie is
// taken only at its own login's name.
func TestUIPageHostsArePerPrincipal(t *testing.T) {
	e := newUIEnv(t, map[string]string{"a.go": "package a\n"})
	ctx := context.Background()
	admin, err := e.admin.UILogin(ctx, "")
	require.NoError(t, err)
	sc, err := client.New(client.Options{Addr: e.srv.URL, Token: e.sessTok})
	require.NoError(t, err)
	defer sc.Close()
	sess, err := sc.UILogin(ctx, "")
	require.NoError(t, err)
	byAdmin, err := e.admin.UILogin(ctx, "rev")
	require.NoError(t, err)
	for _, l := range []*api.UILoginResponse{admin, sess, byAdmin} {
		require.Regexp(t, `^vfsd-[0-9a-f]{16}\.localhost$`, l.Host)
		require.True(t, strings.HasPrefix(l.URL, "http://"+l.Host+":"), l.URL)
	}
	require.NotEqual(t, admin.Host, sess.Host, "a session token must not learn the admin's page name")
	require.Equal(t, sess.Host, byAdmin.Host, "one page name per session, whoever signs in to it")

	// The session's reviewer sees nothing of the admin's name.
	b := e.browser()
	b.open(sess)
	for _, path := range []string{"/ui/", "/ui/s/rev", "/v1/sessions/rev"} {
		_, body, _ := b.do("GET", path, "", nil)
		require.NotContains(t, body, admin.Host, path)
	}
	// The admin's cookie at the session's page name (or any other) is
	// refused, with the browser's headers too.
	a := e.browser()
	a.open(admin)
	code, _, _ := a.do("GET", "/v1/sessions", "", nil)
	require.Equal(t, 200, code)
	page, err := url.Parse(a.origin)
	require.NoError(t, err)
	cookie := a.hc.Jar.Cookies(page)[0]
	for _, host := range []string{sess.Host, "localhost", "127.0.0.1"} {
		req, err := http.NewRequest("GET", "http://"+net.JoinHostPort(host, page.Port())+"/v1/sessions", nil)
		require.NoError(t, err)
		req.AddCookie(cookie)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		resp, err := a.hc.Transport.RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusForbidden, resp.StatusCode, host)
	}

	// A login opened at a name that is no loopback address is refused and
	// not used up; at a loopback address it moves on to its page name.
	l, err := e.admin.UILogin(ctx, "")
	require.NoError(t, err)
	req, err := http.NewRequest("GET", e.srv.URL+l.Path, nil)
	require.NoError(t, err)
	req.Host = "evil.example:80"
	resp, err := a.hc.Transport.RoundTrip(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMisdirectedRequest, resp.StatusCode)
	code, _, h := b.do("GET", e.srv.URL+l.Path, "", nil)
	require.Equal(t, http.StatusFound, code)
	require.True(t, strings.HasPrefix(h.Get("Location"), "http://"+l.Host+":"), h.Get("Location"))
	b.open(l)

	// The names come from a key kept in the data dir (0600): they stay
	// the same across restarts.
	again, err := ui.New(ui.Config{DataDir: e.api.cfg.DataDir})
	require.NoError(t, err)
	require.Equal(t, admin.Host, again.Host(""))
	fi, err := os.Stat(filepath.Join(e.api.cfg.DataDir, "ui.key"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}

// TestUITimeline: the session page's one timeline is the history log,
// newest first — calls, snapshots with their labels, rewinds — offering
// a rewind only where it changes something; a step's link shows the diff
// the log has for it (a write_file's too, whose receipt carries none);
// the live part is the facts and the timeline alone.
func TestUITimeline(t *testing.T) {
	e := newUIEnv(t, map[string]string{"a.txt": "a\n"})
	ctx := context.Background()
	uiCall(t, e.admin, "rev", "write_file", `{"path":"new.txt","inline_text":"one\n"}`, "ok")
	uiCall(t, e.admin, "rev", "read_file", `{"path":"a.txt"}`, "ok")
	snap, err := e.admin.CreateSnapshot(ctx, "rev", "checkpoint <b>")
	require.NoError(t, err)
	uiCall(t, e.admin, "rev", "write_file", `{"path":"later.txt","inline_text":"two\n"}`, "ok")
	_, err = e.admin.Rewind(ctx, "rev", api.RewindRequest{Call: 3})
	require.NoError(t, err)

	b := e.browser()
	b.login("")
	code, body, _ := b.do("GET", "/ui/s/rev", "", nil)
	require.Equal(t, 200, code, body)
	require.NotContains(t, body, "Tool calls", "history is shown once")
	entries := regexp.MustCompile(`<li class="entry ([^"]*)" data-index="(\d+)"`).FindAllStringSubmatch(body, -1)
	var classes []string
	for _, m := range entries {
		classes = append(classes, m[1])
	}
	require.Equal(t, []string{
		"kind-session op-rewind changed",
		"kind-call op-write_file changed",
		"kind-session op-snapshot",
		"kind-call op-read_file",
		"kind-call op-write_file changed",
	}, classes, "newest first")
	buttons := regexp.MustCompile(`data-key="(\w+)" data-value="(\w+)">([^<]*)</button>`).FindAllStringSubmatch(body, -1)
	var offered []string
	for _, m := range buttons {
		offered = append(offered, m[1]+"="+m[2]+": "+m[3])
	}
	require.Equal(t, []string{
		"seq=3: Undo this rewind (back to @3)",
		"call=3: Rewind to before #3",
		"snapshot=" + snap.ID + ": Rewind to snapshot " + snap.ID[:12],
		"call=1: Rewind to before #1",
	}, offered, "no rewind for the read-only call")
	require.Contains(t, body, `<span class="label">checkpoint &lt;b&gt;</span>`)
	require.Contains(t, body, `<button type="button" class="copy" data-copy="`+snap.ID+`"`)
	require.Regexp(t, `<time datetime="[^"]+" title="[^"]+ UTC">(just now|\d+ s ago)</time>`, body)

	// The first call's step: its diff from the log.
	m := regexp.MustCompile(`<li class="entry kind-call op-write_file changed" data-index="(\d+)" data-call="1">\s*<div class="head"><a class="entry-link" href="([^"]+)"`).FindStringSubmatch(body)
	require.NotNil(t, m)
	href := strings.ReplaceAll(m[2], "&amp;", "&")
	require.Equal(t, "/ui/s/rev?e="+m[1]+"&at=0", href)
	_, body, _ = b.do("GET", href, "", nil)
	require.Contains(t, body, "Call #1 write_file (ok)")
	require.Contains(t, body, `data-path="new.txt"`)
	require.Contains(t, body, `<tr class="add">`)
	require.Contains(t, body, "Parameters")
	require.Contains(t, body, `aria-current="page"`, "the step shown is marked in the timeline")
	// A link whose step moved is not shown in its place.
	_, body, _ = b.do("GET", "/ui/s/rev?e="+m[1]+"&at=3", "", nil)
	require.Contains(t, body, "the history moved on")

	// The live part: facts and timeline, no diff, for the cookie only.
	code, body, _ = b.do("GET", "/ui/s/rev/live", "", nil)
	require.Equal(t, 200, code, body)
	require.Contains(t, body, `<dl class="facts" id="facts" data-seq="`)
	require.Contains(t, body, `<div id="timeline-body">`)
	require.NotContains(t, body, `id="diff"`)
	code, _, _ = e.browser().do("GET", e.srv.URL+"/ui/s/rev/live", "", nil)
	require.Equal(t, http.StatusUnauthorized, code)
}

// TestUIEventsByCookie: the page's event stream (EventSource sends the
// cookie, Sec-Fetch-Site same-origin and no CSRF header) is served to
// the page itself and refused to a request from another site.
func TestUIEventsByCookie(t *testing.T) {
	e := newUIEnv(t, map[string]string{"a.txt": "a\n"})
	b := e.browser()
	b.login("")
	for _, tc := range []struct {
		site string
		want int
	}{{"same-origin", 200}, {"same-site", 403}, {"cross-site", 403}} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		req, err := http.NewRequestWithContext(ctx, "GET", b.origin+"/v1/sessions/rev/events", nil)
		require.NoError(t, err)
		req.Header.Set("Sec-Fetch-Site", tc.site)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := b.hc.Do(req)
		require.NoError(t, err)
		require.Equal(t, tc.want, resp.StatusCode, tc.site)
		if tc.want == 200 {
			require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
			go func() { // a change arrives as an event
				uiCall(t, e.admin, "rev", "write_file", `{"path":"b.txt","inline_text":"b\n"}`, "ok")
			}()
			buf := make([]byte, 0, 4096)
			for !strings.Contains(string(buf), "event: change") {
				n, err := resp.Body.Read(buf[len(buf):cap(buf)])
				require.NoError(t, err, "read so far: %s", buf)
				buf = buf[:len(buf)+n]
			}
		}
		resp.Body.Close()
		cancel()
	}
}

// TestUITimelineBounded: a session with more steps than the timeline
// lists shows the latest, newest first, with a link to the earlier ones.
func TestUITimelineBounded(t *testing.T) {
	e := newUIEnv(t, map[string]string{"a.txt": "a\n"})
	const n = 450
	for i := 1; i <= n; i++ {
		uiCall(t, e.admin, "rev", "write_file", fmt.Sprintf(`{"path":"f%d.txt","inline_text":"%d\n"}`, i%7, i), "ok")
	}
	b := e.browser()
	b.login("")
	calls := regexp.MustCompile(`data-call="(\d+)"`)
	first := func(body string) (string, string, int) {
		m := calls.FindAllStringSubmatch(body, -1)
		require.NotEmpty(t, m)
		return m[0][1], m[len(m)-1][1], len(m)
	}
	_, body, _ := b.do("GET", "/ui/s/rev", "", nil)
	newest, oldest, count := first(body)
	require.Equal(t, []any{"450", "251", 200}, []any{newest, oldest, count})
	require.Contains(t, body, "the latest 200 of 450 steps")
	require.Contains(t, body, `<a href="/ui/s/rev?before=250">earlier steps</a>`)
	_, body, _ = b.do("GET", "/ui/s/rev?before=250", "", nil)
	newest, oldest, count = first(body)
	require.Equal(t, []any{"250", "51", 200}, []any{newest, oldest, count})
	require.Contains(t, body, "steps 51 to 250 of 450")
	require.Contains(t, body, `<a href="/ui/s/rev">later steps</a>`)
	require.Contains(t, body, `<a href="/ui/s/rev?before=50">earlier steps</a>`)
	_, body, _ = b.do("GET", "/ui/s/rev?before=50", "", nil)
	newest, oldest, count = first(body)
	require.Equal(t, []any{"50", "1", 50}, []any{newest, oldest, count})
	require.Contains(t, body, `<a href="/ui/s/rev?before=250">later steps</a>`)
}

// uiCall runs a tool and requires its status.
func uiCall(t testing.TB, c *client.Client, session, tool, params, status string) {
	t.Helper()
	r, err := c.CallTool(context.Background(), session, tool, json.RawMessage(params))
	require.NoError(t, err)
	require.Equal(t, status, r.Status, "%s %s: %s", tool, params, r.JSON)
}

// TestUIPageCost measures, when $VFSD_UI_BENCH is set, what the session
// page costs on a session with thousands of calls: the page (its latest
// 200 steps and the whole session's diff), its live part (what each live
// update fetches), against reading the whole history through the log
// route — what a timeline without a bound would have to read before
// drawing anything. Rounds are interleaved, so a busy machine weighs on
// all alike; the medians and their ratios are logged:
//
//	VFSD_UI_BENCH=1 go test ./httpapi/ -run TestUIPageCost -v -count 1
func TestUIPageCost(t *testing.T) {
	if os.Getenv("VFSD_UI_BENCH") == "" {
		t.Skip("set VFSD_UI_BENCH=1 to measure")
	}
	calls := 3000
	if n, err := strconv.Atoi(os.Getenv("VFSD_UI_BENCH_CALLS")); err == nil && n > 0 {
		calls = n
	}
	e := newUIEnv(t, map[string]string{"a.txt": "a\n"})
	for i := 1; i <= calls; i++ {
		uiCall(t, e.admin, "rev", "write_file", fmt.Sprintf(`{"path":"d%d/f%d.txt","inline_text":"%d\n"}`, i%10, i%50, i), "ok")
	}
	b := e.browser()
	b.login("")
	ctx := context.Background()
	const rounds = 21
	var page, live, whole []time.Duration
	var pageBytes int
	for range rounds {
		start := time.Now()
		code, body, _ := b.do("GET", "/ui/s/rev", "", nil)
		page = append(page, time.Since(start))
		require.Equal(t, 200, code)
		pageBytes = len(body)
		start = time.Now()
		code, _, _ = b.do("GET", "/ui/s/rev/live", "", nil)
		live = append(live, time.Since(start))
		require.Equal(t, 200, code)
		start = time.Now()
		n := 0
		for off := 0; ; {
			l, err := e.admin.Log(ctx, "rev", client.LogOptions{Offset: off})
			require.NoError(t, err)
			n += len(l.Entries)
			if l.Next == 0 {
				break
			}
			off = l.Next
		}
		whole = append(whole, time.Since(start))
		require.GreaterOrEqual(t, n, calls)
	}
	med := func(ds []time.Duration) time.Duration { slices.Sort(ds); return ds[len(ds)/2] }
	mp, ml, mw := med(page), med(live), med(whole)
	t.Logf("session page with %d calls, %d interleaved rounds, medians: page %v (%d KiB), live part %v, the whole log read %v; page/whole-log %.2f, live/whole-log %.2f",
		calls, rounds, mp.Round(time.Microsecond), pageBytes>>10, ml.Round(time.Microsecond), mw.Round(time.Microsecond),
		float64(mp)/float64(mw), float64(ml)/float64(mw))
}
