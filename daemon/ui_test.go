package daemon

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
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
	"github.com/vfsd/vfsd/ui"
)

const uiTestAdminToken = "vfsd_admin_uitest"

// uiEnv is a daemon behind an httptest server (a TCP listener as far as
// authentication goes) with a session "rev" staged from a host folder.
type uiEnv struct {
	t        *testing.T
	d        *Daemon
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
	cfg := Config{DataDir: t.TempDir(), Socket: filepath.Join(sockDir, "s.sock"), Token: uiTestAdminToken,
		AllowRoots: []string{root}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	d, err := New(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(srv.Close)
	admin, err := client.New(client.Options{Addr: srv.URL, Token: uiTestAdminToken})
	require.NoError(t, err)
	t.Cleanup(admin.Close)
	cr, err := admin.CreateSession(context.Background(), api.CreateSessionRequest{ID: "rev",
		Mounts: []api.Mount{{HostPath: root, MountPath: "/"}}})
	require.NoError(t, err)
	return &uiEnv{t: t, d: d, srv: srv, admin: admin, root: root, sessTok: cr.Token, importID: cr.Session.ImportSnapshot}
}

// browser is an HTTP client with a cookie jar, as a browser is.
type browser struct {
	t      *testing.T
	e      *uiEnv
	hc     *http.Client
	csrf   string
	origin string
}

func (e *uiEnv) browser() *browser {
	jar, err := cookiejar.New(nil)
	require.NoError(e.t, err)
	return &browser{t: e.t, e: e, origin: e.srv.URL,
		hc: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// login signs the browser in with a fresh one-time login (session "" is
// the admin's) and reads the CSRF token off a page.
func (b *browser) login(session string) *api.UILoginResponse {
	b.t.Helper()
	l, err := b.e.admin.UILogin(context.Background(), session)
	require.NoError(b.t, err)
	require.True(b.t, strings.HasPrefix(l.URL, b.e.srv.URL+"/ui/login?code="), l.URL)
	code, body, _ := b.do("GET", l.URL, "", nil)
	require.Equal(b.t, 200, code, body)
	return l
}

var csrfMeta = regexp.MustCompile(`<meta name="vfsd-csrf" content="([^"]+)">`)

func (b *browser) do(method, path, body string, hdr map[string]string) (int, string, http.Header) {
	b.t.Helper()
	u := path
	if strings.HasPrefix(path, "/") {
		u = b.e.srv.URL + path
	}
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	require.NoError(b.t, err)
	for k, v := range hdr {
		req.Header.Set(k, v)
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
		{"no token", "POST", "/v1/sessions/rev/snapshots", map[string]string{"Origin": e.srv.URL}, 403},
		{"wrong token", "POST", "/v1/sessions/rev/snapshots", map[string]string{"Origin": e.srv.URL, "Vfsd-CSRF": "x"}, 403},
		{"other origin", "POST", "/v1/sessions/rev/snapshots", map[string]string{"Origin": "http://evil.example", "Vfsd-CSRF": b.csrf}, 403},
		{"other port", "POST", "/v1/sessions/rev/snapshots", map[string]string{"Origin": "http://127.0.0.1:1", "Vfsd-CSRF": b.csrf}, 403},
		{"no Origin", "DELETE", "/v1/sessions/rev", map[string]string{"Vfsd-CSRF": b.csrf}, 403},
		{"GET from another origin", "GET", "/v1/sessions", map[string]string{"Origin": "http://evil.example"}, 403},
		{"GET", "GET", "/v1/sessions", nil, 200},
		{"the page's own POST", "POST", "/v1/sessions/rev/snapshots", map[string]string{"Origin": e.srv.URL, "Vfsd-CSRF": b.csrf}, 201},
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
	require.Contains(t, body, "&lt;/script&gt;")
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
	require.Contains(t, body, `id="btn-rewind"`, "the daemon has the rewind route: the page offers it")
	require.Contains(t, body, `id="btn-rebase"`)

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
	// The daemon has the history routes: the page finds them and offers
	// rewind, rebase and the log.
	require.Contains(t, body, `id="btn-rewind"`)
	require.Contains(t, body, `id="btn-rebase"`)
	require.Contains(t, body, `class="log-entry"`)
	require.Contains(t, body, "&lt;i&gt;b&lt;/i&gt;.txt", "a log entry's paths are escaped")
	require.Contains(t, body, `data-to="1"`)
}

// TestUIProxy: what vfsd ui's loopback proxy forwards over the socket is
// authenticated like a TCP request, never as the socket's admin.
func TestUIProxy(t *testing.T) {
	e := newUIEnv(t, map[string]string{"a.txt": "a\n"})
	srv := httptest.NewUnstartedServer(e.d.Handler())
	srv.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
		return context.WithValue(ctx, viaSocketKey{}, true)
	}
	srv.Start()
	defer srv.Close()
	get := func(path string, proxied bool) int {
		req, err := http.NewRequest("GET", srv.URL+path, nil)
		require.NoError(t, err)
		if proxied {
			req.Header.Set(uiProxyHeader, "1")
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
	b := e.browser()
	b.e = &uiEnv{t: t, d: e.d, srv: srv, admin: e.admin}
	code, _, _ := b.do("GET", l.Path, "", map[string]string{uiProxyHeader: "1"})
	require.Equal(t, 200, code)
	code, body, _ := b.do("GET", "/ui/", "", map[string]string{uiProxyHeader: "1"})
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
	code, body, _ := b.do("GET", l.URL, "", nil)
	require.Equal(t, 200, code, body)
	b.do("GET", "/ui/s/rev", "", nil) // the page's CSRF token
	require.NotEmpty(t, b.csrf)

	req := fmt.Sprintf(`{"contract":"weakincentives","contract_options":{"mounts":[{"host_path":%q,"mount_path":"leak"}]}}`, e.root)
	code, body = b.post("POST", "/v1/sessions/rev/fork", req)
	if code == http.StatusCreated {
		var f api.CreateSessionResponse
		require.NoError(t, json.Unmarshal([]byte(body), &f))
		r, err := e.admin.CallTool(context.Background(), f.Session.ID, "read_file", json.RawMessage(`{"path":{"segments":["leak","secret.env"]}}`))
		require.NoError(t, err)
		t.Fatalf("a session's review login forked with host mounts of its choosing: %s", r.JSON)
	}
	require.Equal(t, http.StatusForbidden, code, body)
	require.Contains(t, body, `"forbidden"`)
}
