package tests

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
)

// TestUIBrowser drives the review page in a real browser (Debian's
// chromium, headless, over the DevTools protocol) against a running
// `vfsd serve --listen`: sign in with the URL `vfsd ui` prints, see the
// session list, open a session, see its timeline and diff (a file named
// like an XSS payload, with </script> in it, shown as text), open a
// call's diff, take a snapshot, preview an apply and apply, and close the
// session — each effect checked through the API and the host folder. The
// page is at its own vfsd-….localhost host name; another server on
// loopback the browser visits never receives its cookie.
// Screenshots go to the test's artifact directory (go test -artifacts
// -outputdir DIR keeps them).
func TestUIBrowser(t *testing.T) {
	chrome := chromiumPath()
	if chrome == "" {
		t.Skip("chromium is not installed (apt-get install chromium); the review page's browser test needs it")
	}
	began := time.Now()
	evil := `<img src=x onerror=alert(1)>`
	root := t.TempDir()
	write := func(name, content string) {
		require.NoError(t, os.WriteFile(filepath.Join(root, name), []byte(content), 0o644))
	}
	write("main.go", "package main\n\nfunc main() {\n\tprintln(\"hello\")\n}\n")
	write(evil, "x</script><script>alert(2)</script>\n")
	write("notes.txt", "keep\n")

	dataDir, socket := newDaemonDirs(t)
	d := startDaemon(t, dataDir, socket, "--allow-root", root, "--listen", "127.0.0.1:0")
	c := d.client()
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	_, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "review", Mounts: []api.Mount{{HostPath: root, MountPath: "/"}}})
	require.NoError(t, err)
	tool := func(name, params string) {
		r, err := c.CallTool(ctx, "review", name, json.RawMessage(params))
		require.NoError(t, err)
		require.Equal(t, "ok", r.Status, "%s: %s", name, r.JSON)
	}
	tool("edit_file", `{"path":"main.go","old_string":"println(\"hello\")","new_string":"println(\"hello, review\")"}`)
	tool("edit_file", `{"path":"<img src=x onerror=alert(1)>","old_string":"x</script>","new_string":"y</script>"}`)
	tool("write_file", `{"path":"added.txt","inline_text":"new file\n"}`)

	// vfsd ui prints the one-time login URL.
	stdout, stderr, code := d.cli(ctx, nil, "ui")
	require.Equal(t, 0, code, stderr)
	loginURL := strings.TrimSpace(stdout)
	_, port, err := net.SplitHostPort(d.tcpAddr())
	require.NoError(t, err)
	require.Regexp(t, `^http://vfsd-[0-9a-f]{16}\.localhost:`+port+`/ui/login\?code=`, loginURL, "the page's own host name, on the daemon's port")
	pageHost := strings.TrimPrefix(loginURL[:strings.Index(loginURL, "/ui/")], "http://")

	shots := t.ArtifactDir()
	setUp := time.Since(began)
	browserStart := time.Now()
	b := startBrowser(t, chrome)
	p := b.newPage(ctx, shots)

	// Sign in: the login page moves on to the session list.
	p.navigate(loginURL)
	p.waitFor(`location.pathname === "/ui/" && document.querySelector("tr.session-row")`, "the session list")
	require.Equal(t, "false", p.str(`document.cookie.includes("vfsd_ui")`), "the cookie is HttpOnly")
	require.Equal(t, pageHost, p.str(`location.host`))
	require.Contains(t, p.str(`document.querySelector("tr.session-row").innerText`), "review")
	require.Contains(t, p.str(`document.querySelector("tr.session-row").innerText`), root)
	p.screenshot("sessions")

	// The reviewer opens the agent's dev server, another server on
	// loopback, in a second tab — by address and by name — and its page
	// calls its own server, as an app does: it never receives the review
	// page's cookie (cookies ignore ports; the page's is for its own host
	// name only).
	agent := newCookieRecorder(t)
	_, agentPort, err := net.SplitHostPort(agent.Listener.Addr().String())
	require.NoError(t, err)
	other := b.newPage(ctx, shots)
	for _, host := range []string{"127.0.0.1", "localhost"} {
		other.navigate("http://" + net.JoinHostPort(host, agentPort) + "/")
		other.waitFor(`document.title === "dev server"`, "the agent's page at "+host)
		require.Equal(t, "ok", other.str(`fetch("/api", {credentials: "include"}).then(r => r.text())`))
	}
	other.screenshot("agent-page")
	require.NotEmpty(t, agent.requests(), "the agent's server was visited")
	for _, c := range agent.requests() {
		require.NotContains(t, c, "vfsd_ui", "the agent's server received the review page's cookie")
	}

	// Open the session: its timeline and its diff against the import.
	p.click(`a.session-link`)
	p.waitFor(`document.querySelector("main#session") && document.querySelectorAll("li.call").length === 3`, "the session's timeline")
	p.waitFor(`document.querySelector('article.file[data-path="main.go"] tr.chg')`, "main.go's side-by-side diff")
	require.Equal(t, "3", p.str(`String(document.querySelectorAll("article.file").length)`))
	require.Contains(t, p.str(`document.querySelector('article.file[data-path="main.go"] tr.chg td.r').innerText`), `println("hello, review")`)
	require.Equal(t, `"hello, review"`, p.str(`document.querySelector('article.file[data-path="main.go"] tr.chg td.r .x').innerText`))
	// The attacker's name and content are text: no image, no script ran.
	evilFile := `document.querySelector('article.file[data-path="<img src=x onerror=alert(1)>"]')`
	p.waitFor(evilFile, "the XSS-named file's diff")
	require.Contains(t, p.str(evilFile+`.querySelector("h3").innerText`), evil)
	require.Contains(t, p.str(evilFile+`.querySelector("tr.chg td.l").innerText`), "x</script><script>alert(2)</script>")
	require.Equal(t, "0", p.str(`String(document.querySelectorAll("img, main script").length)`))
	p.screenshot("session")

	// A call's own diff.
	p.click(`li.call[data-call="1"] a.call-link`)
	p.waitFor(`document.querySelector("#diff h2").innerText.startsWith("Call #1: edit_file")`, "call #1's page")
	p.waitFor(`document.querySelector('article.file[data-path="main.go"] tr.chg')`, "call #1's diff")
	p.screenshot("call")

	// Snapshot, from the page.
	p.typeInto("#snap-label", "from the browser")
	p.click("#btn-snapshot")
	p.waitFor(`Array.from(document.querySelectorAll("li.snap")).some(li => li.innerText.includes("from the browser"))`, "the new snapshot in the timeline")
	snaps, err := c.Snapshots(ctx, "review")
	require.NoError(t, err)
	require.NotEmpty(t, snaps)
	require.Equal(t, "from the browser", snaps[0].Label)

	// Rewind to before call 3 (the write of added.txt), from the page: the
	// session no longer has the file, and the history says it rewound.
	p.click(`li.call[data-call="3"] button.rewind`)
	p.waitFor(`document.querySelector("#status") && document.querySelector("#status").innerText.startsWith("Rewound")`, "the rewind's report")
	log, err := c.Log(ctx, "review", client.LogOptions{})
	require.NoError(t, err)
	last := log.Entries[len(log.Entries)-1]
	require.Equal(t, "rewind", last.Tool, "the last step of the history is the page's rewind")
	df, err := c.SessionDiff(ctx, "review", client.DiffQuery{From: "import", To: "live"})
	require.NoError(t, err)
	for _, e := range df.Entries {
		require.NotEqual(t, "added.txt", e.Path, "rewound to before the call that wrote it")
	}
	p.waitFor(`document.readyState === "complete" && document.querySelector("#status").hidden`, "the page reloaded after the rewind")

	// Apply: the dry run's preview first, and nothing written yet.
	dry, err := c.Apply(ctx, "review", true)
	require.NoError(t, err)
	p.click("#btn-apply-preview")
	p.waitFor(`!document.querySelector("#apply-preview").hidden`, "the apply preview")
	require.Equal(t, len(dry.Applied), int(mustAtoi(t, p.str(`String(document.querySelectorAll("#apply-list li").length)`))))
	require.Contains(t, p.str(`document.querySelector("#apply-list").innerText`), "main.go")
	p.screenshot("apply-preview")
	host, err := os.ReadFile(filepath.Join(root, "main.go"))
	require.NoError(t, err)
	require.Contains(t, string(host), `println("hello")`, "a preview writes nothing")
	p.click("#btn-apply-confirm")
	p.waitFor(`document.querySelector("#status") && document.querySelector("#status").innerText.startsWith("Applied")`, "the apply's report")
	host, err = os.ReadFile(filepath.Join(root, "main.go"))
	require.NoError(t, err)
	require.Contains(t, string(host), `println("hello, review")`)
	_, err = os.Stat(filepath.Join(root, "added.txt"))
	require.ErrorIs(t, err, os.ErrNotExist, "the rewind took added.txt out of what is applied")
	evilHost, err := os.ReadFile(filepath.Join(root, evil))
	require.NoError(t, err)
	require.Equal(t, "y</script><script>alert(2)</script>\n", string(evilHost))
	p.waitFor(`location.search === "" && document.readyState === "complete" && document.querySelector("#diff .summary") && document.querySelector("#diff .summary").innerText === "no changes"`, "the page after the apply: nothing left to apply")
	p.screenshot("applied")

	// Close the session (a second press confirms).
	p.click("#btn-close")
	p.click("#btn-close-confirm")
	p.waitFor(`location.pathname === "/ui/" && document.querySelector("p.empty")`, "the empty session list")
	_, err = c.Session(ctx, "review")
	require.Equal(t, api.CodeNotFound, client.Code(err))
	p.screenshot("closed")

	require.Empty(t, b.eventsNamed("Page.javascriptDialogOpening"), "an alert opened: attacker text ran as script")
	for _, ex := range b.eventsNamed("Runtime.exceptionThrown") {
		t.Errorf("the page threw: %s", ex.Params)
	}
	for _, e := range b.eventsNamed("Log.entryAdded") {
		if strings.Contains(string(e.Params), "Content Security Policy") {
			t.Errorf("the page broke its own CSP: %s", e.Params)
		}
	}
	t.Logf("review page browser test: %s in all: %s to build and start vfsd and stage the session, %s in the browser (screenshots in %s)",
		time.Since(began).Round(time.Millisecond), setUp.Round(time.Millisecond), time.Since(browserStart).Round(time.Millisecond), shots)
}

// cookieRecorder is an agent's dev server on loopback: it records the
// Cookie header of every request it gets.
type cookieRecorder struct {
	*httptest.Server
	mu      sync.Mutex
	cookies []string
}

func newCookieRecorder(t *testing.T) *cookieRecorder {
	c := &cookieRecorder{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.cookies = append(c.cookies, r.Header.Get("Cookie"))
		c.mu.Unlock()
		if r.URL.Path == "/api" {
			io.WriteString(w, "ok")
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<!doctype html><title>dev server</title><p>the agent's app</p>")
	}))
	t.Cleanup(c.Close)
	return c
}

// requests returns the Cookie header of each request so far.
func (c *cookieRecorder) requests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.cookies)
}

func mustAtoi(t *testing.T, s string) int64 {
	var n int64
	require.NoError(t, json.Unmarshal([]byte(s), &n))
	return n
}
