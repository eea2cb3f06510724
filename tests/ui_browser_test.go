package tests

import (
	"context"
	"encoding/json"
	"fmt"
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
// `vfsd serve --listen`, and clicks every action on it, checking each
// result through the API and the host folder: sign in with the URL `vfsd
// ui` prints; the session list; a session's timeline, file tree and diff
// (a file named like an XSS payload, with </script> in it, shown as
// text); a step's diff; the keys; a copy button; a change the agent makes
// arriving live through the event stream; snapshot; rewind of each kind
// (to before a call, to a snapshot, to a time, and the undo: to a
// position); rebase (preview, then the real one); apply (preview, then
// the real one); close. axe-core checks the page at 1400 and 800 px, light
// and dark: no serious or critical violation. The page is at its own
// vfsd-….localhost host name; another server on loopback the browser
// visits never receives its cookie. Screenshots at 1400 and 800 px go to
// the test's artifact directory (go test -artifacts -outputdir DIR keeps
// them).
func TestUIBrowser(t *testing.T) {
	chrome := chromiumPath()
	if chrome == "" {
		t.Skip("chromium is not installed (apt-get install chromium); the review page's browser test needs it")
	}
	axeSrc := axeScript(t)
	began := time.Now()
	evil := `<img src=x onerror=alert(1)>`
	root := t.TempDir()
	write := func(name, content string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, name), []byte(content), 0o644))
	}
	write("main.go", "package main\n\nfunc main() {\n\tprintln(\"hello\")\n}\n")
	write(evil, "x</script><script>alert(2)</script>\n")
	write("notes.txt", "keep\n")
	write("src/util/strings.go", "package util\n\n// Greeting is what main says.\nconst Greeting = \"hello\"\n")

	dataDir, socket := newDaemonDirs(t)
	d := startDaemon(t, dataDir, socket, "--allow-root", root, "--listen", "127.0.0.1:0")
	c := d.client()
	ctx, cancel := context.WithTimeout(context.Background(), 240*time.Second)
	defer cancel()
	created, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "review", Label: "fix the greeting",
		Mounts: []api.Mount{{HostPath: root, MountPath: "/"}}})
	require.NoError(t, err)
	tool := func(name, params string) {
		r, err := c.CallTool(ctx, "review", name, json.RawMessage(params))
		require.NoError(t, err)
		require.Equal(t, "ok", r.Status, "%s: %s", name, r.JSON)
	}
	tool("edit_file", `{"path":"main.go","old_string":"println(\"hello\")","new_string":"println(\"hello, review\")"}`)
	tool("edit_file", `{"path":"<img src=x onerror=alert(1)>","old_string":"x</script>","new_string":"y</script>"}`)
	tool("edit_file", `{"path":"src/util/strings.go","old_string":"\"hello\"","new_string":"\"hello, review\""}`)
	time.Sleep(30 * time.Millisecond)
	afterThird := time.Now() // the time rewind's target: after call #3, before #4
	time.Sleep(30 * time.Millisecond)
	tool("write_file", `{"path":"added.txt","inline_text":"new file\n"}`)
	tool("read_file", `{"path":"notes.txt"}`)
	has := func(path string) bool { // the session holds path against its import
		df, err := c.SessionDiff(ctx, "review", client.DiffQuery{From: "import", To: "live"})
		require.NoError(t, err)
		return slices.ContainsFunc(df.Entries, func(e api.DiffEntry) bool { return e.Path == path })
	}
	lastStep := func() api.LogEntry {
		log, err := c.Log(ctx, "review", client.LogOptions{Offset: 0})
		require.NoError(t, err)
		if log.Next != 0 {
			log, err = c.Log(ctx, "review", client.LogOptions{Offset: log.Total - 1})
			require.NoError(t, err)
		}
		return log.Entries[len(log.Entries)-1]
	}

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
	statusSays := func(prefix, what string) {
		t.Helper()
		p.waitFor(fmt.Sprintf(`document.readyState === "complete" && !document.querySelector("#status").hidden && document.querySelector("#status-text").innerText.startsWith(%q)`, prefix), what)
	}
	accessible := func(when string) {
		t.Helper()
		for _, v := range p.axe(axeSrc) {
			if v.Impact == "serious" || v.Impact == "critical" {
				t.Errorf("axe-core, %s: %s (%s): %s\n\t%s", when, v.ID, v.Impact, v.Help, strings.Join(v.Nodes, "\n\t"))
			} else {
				t.Logf("axe-core, %s, %s: %s (%s): %s", when, v.Impact, v.ID, v.Help, strings.Join(v.Nodes, "; "))
			}
		}
	}

	// Sign in: the login page moves on to the session list.
	p.navigate(loginURL)
	p.waitFor(`location.pathname === "/ui/" && document.querySelector("tr.session-row")`, "the session list")
	require.Equal(t, "false", p.str(`document.cookie.includes("vfsd_ui")`), "the cookie is HttpOnly")
	require.Equal(t, pageHost, p.str(`location.host`))
	row := p.str(`document.querySelector("tr.session-row").innerText`)
	require.Contains(t, row, "review")
	require.Contains(t, row, "fix the greeting", "the session's label")
	require.Contains(t, row, root)
	require.Regexp(t, `just now|\d+ s ago`, row, "relative times")
	accessible("the session list")

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
	require.NotEmpty(t, agent.requests(), "the agent's server was visited")
	for _, c := range agent.requests() {
		require.NotContains(t, c, "vfsd_ui", "the agent's server received the review page's cookie")
	}
	require.NoError(t, b.call(ctx, other.session, "Page.close", nil, nil))

	// Open the session: one timeline (five calls, newest first), the file
	// tree, the diff against the import.
	p.click(`a.session-link`)
	p.waitFor(`document.querySelector("main#content") && document.querySelectorAll("li.entry[data-call]").length === 5`, "the session's timeline")
	require.Equal(t, "[5,4,3,2,1]", p.str(`Array.from(document.querySelectorAll("li.entry[data-call]"), li => Number(li.dataset.call))`))
	require.Equal(t, "0", p.str(`String(document.querySelectorAll('li.entry[data-call="5"] button.rewind').length)`), "no rewind to before a call that changed nothing")
	require.Equal(t, "Rewind to before #4", p.str(`document.querySelector('li.entry[data-call="4"] button.rewind').innerText`))
	require.Contains(t, p.str(`document.querySelector("h1").innerText`), "fix the greeting")
	p.waitFor(`document.querySelector('article.file[data-path="main.go"] tr.chg')`, "main.go's diff")
	require.Equal(t, "4", p.str(`String(document.querySelectorAll("article.file").length)`))
	require.Equal(t, "4", p.str(`String(document.querySelectorAll("#files a[href^='#f-']").length)`), "the file tree links every file")
	require.Contains(t, p.str(`document.querySelector("#files").innerText`), "src/util/")
	require.Contains(t, p.str(`document.querySelector('article.file[data-path="main.go"] tr.chg td.r').innerText`), `println("hello, review")`)
	require.Equal(t, `"hello, review"`, p.str(`document.querySelector('article.file[data-path="main.go"] tr.chg td.r .x').innerText`))
	// The attacker's name and content are text: no image, no script ran.
	evilFile := `document.querySelector('article.file[data-path="<img src=x onerror=alert(1)>"]')`
	p.waitFor(evilFile, "the XSS-named file's diff")
	require.Contains(t, p.str(evilFile+`.querySelector("h3").innerText`), evil)
	require.Contains(t, p.str(evilFile+`.querySelector("tr.chg td.l").innerText`), "x</script><script>alert(2)</script>")
	require.Equal(t, "0", p.str(`String(document.querySelectorAll("img, main script").length)`))
	// The tree jumps to a file.
	p.click(`#files a[href="#` + p.str(`document.querySelector('article.file[data-path="src/util/strings.go"]').id`) + `"]`)
	p.waitFor(`document.querySelector('article.file[data-path="src/util/strings.go"]').id === location.hash.slice(1)`, "the jump to strings.go")
	p.waitFor(`(() => { const r = document.querySelector('article.file[data-path="src/util/strings.go"]').getBoundingClientRect(); return r.top >= -1 && r.top < innerHeight - 40; })()`, "strings.go in view")

	// 1400 px: the diff side by side, the timeline beside it; light and
	// dark, both accessible.
	sideBySide := `(() => { const l = document.querySelector('article.file[data-path="main.go"] tr.chg td.l').getBoundingClientRect(),
		r = document.querySelector('article.file[data-path="main.go"] tr.chg td.r').getBoundingClientRect(); return Math.abs(l.top - r.top) < 2 && r.left > l.right; })()`
	unified := `(() => { const l = document.querySelector('article.file[data-path="main.go"] tr.chg td.l').getBoundingClientRect(),
		r = document.querySelector('article.file[data-path="main.go"] tr.chg td.r').getBoundingClientRect(); return r.top >= l.bottom - 1 && Math.abs(l.left - r.left) < 2; })()`
	require.Equal(t, "true", p.str(sideBySide), "side by side at 1400 px")
	require.Equal(t, "true", p.str(`document.querySelector("nav.timeline").getBoundingClientRect().right <= document.querySelector("main#content").getBoundingClientRect().left + 1`), "the timeline beside the content")
	p.str(`scrollTo(0, 0)`)
	accessible("a session at 1400 px, light")
	p.screenshot("session-1400")
	darkBG := `(() => { const [r, g, b] = getComputedStyle(document.body).backgroundColor.match(/\d+/g).map(Number); return r + g + b < 150; })()`
	require.Equal(t, "false", p.str(darkBG))
	p.setColorScheme("dark")
	p.waitFor(darkBG, "the dark scheme")
	accessible("a session at 1400 px, dark")
	p.screenshot("session-1400-dark")
	// 800 px: unified, the timeline above the content.
	p.setWidth(800)
	p.waitFor(unified, "the unified diff at 800 px")
	require.Equal(t, "true", p.str(`document.querySelector("nav.timeline").getBoundingClientRect().bottom <= document.querySelector("main#content").getBoundingClientRect().top + 1`), "the timeline above the content")
	accessible("a session at 800 px, dark")
	p.screenshot("session-800-dark")
	p.setColorScheme("light")
	p.waitFor("!"+darkBG, "the light scheme")
	accessible("a session at 800 px, light")
	p.screenshot("session-800")
	p.setWidth(1400)
	p.waitFor(sideBySide, "side by side again at 1400 px")

	// Keys: j/k walk the timeline, n/p the files, ? lists the keys.
	p.str(`document.activeElement.blur(), scrollTo(0, 0), window.keysSeen = [], addEventListener("keydown", e => keysSeen.push(e.key))`)
	p.press("j")
	require.Equal(t, "true", p.str(`document.activeElement.matches("#timeline-body a.whole")`), "keys seen: %s; focus on %s", p.str(`keysSeen`), p.str(`document.activeElement.outerHTML.slice(0, 200)`))
	p.press("j")
	require.Equal(t, "5", p.str(`document.activeElement.closest("li.entry").dataset.call`))
	p.press("j")
	p.press("k")
	require.Equal(t, "5", p.str(`document.activeElement.closest("li.entry").dataset.call`))
	p.press("n")
	require.Equal(t, "true", p.str(`document.activeElement.matches("article.file")`))
	first := p.str(`document.activeElement.dataset.path`)
	p.press("n")
	require.NotEqual(t, first, p.str(`document.activeElement.dataset.path`))
	p.press("p")
	require.Equal(t, first, p.str(`document.activeElement.dataset.path`))
	p.press("?")
	p.waitFor(`document.querySelector("#keys").open`, "the list of keys")
	p.press("Escape")
	p.waitFor(`!document.querySelector("#keys").open`, "the list of keys closed")

	// A copy button copies the whole ID.
	require.NoError(t, b.call(ctx, "", "Browser.grantPermissions", map[string]any{"origin": "http://" + pageHost,
		"permissions": []string{"clipboardReadWrite", "clipboardSanitizedWrite"}}, nil))
	p.click(`h1 button.copy`)
	statusSays("Copied review.", "the copy's report")
	require.Equal(t, "review", p.str(`navigator.clipboard.readText()`))

	// Live: a change the agent makes shows up without a reload.
	p.waitFor(`document.querySelector("#live").dataset.state === "on"`, "the event stream to be open")
	p.str(`window.stayed = "yes"`)
	tool("write_file", `{"path":"live.txt","inline_text":"written while the page was open\n"}`)
	p.waitFor(`document.querySelectorAll("li.entry[data-call]").length === 6 && document.querySelector('li.entry[data-call="6"]').innerText.includes("live.txt")`, "the new call in the timeline, live")
	require.Equal(t, "yes", p.str(`window.stayed`), "the page was not reloaded")
	p.waitFor(`!document.querySelector("#stale").hidden`, "the note that the diff is out of date")
	require.Contains(t, p.str(`document.querySelector("#facts").innerText`), "6", "the facts are live too")

	// A step's diff: call #4 wrote added.txt (its receipt has no diff;
	// the history has).
	p.click(`li.entry[data-call="4"] a.entry-link`)
	p.waitFor(`document.querySelector("#diff-h").innerText.startsWith("Call #4 write_file")`, "call #4's step")
	p.waitFor(`document.querySelector('article.file[data-path="added.txt"] tr.add')`, "call #4's diff")
	require.Equal(t, "page", p.str(`document.querySelector('li.entry[data-call="4"] a.entry-link').getAttribute("aria-current")`))

	// Snapshot, from the page.
	p.typeInto("#snap-label", "from the browser")
	p.click("#btn-snapshot")
	statusSays("Snapshot ", "the snapshot's report")
	snaps, err := c.Snapshots(ctx, "review")
	require.NoError(t, err)
	require.NotEmpty(t, snaps)
	require.Equal(t, "from the browser", snaps[0].Label)
	p.waitFor(`Array.from(document.querySelectorAll("li.entry.op-snapshot")).some(li => li.innerText.includes("from the browser"))`, "the new snapshot in the timeline, with its label")
	require.True(t, has("added.txt") && has("live.txt"))

	// Rewind to before a call: #4 wrote added.txt, #6 live.txt.
	p.click(`li.entry[data-call="4"] button.rewind`)
	statusSays("Rewound to before call #4", "the rewind's report")
	require.Equal(t, "rewind", lastStep().Tool, "the last step of the history is the page's rewind")
	require.False(t, has("added.txt"), "rewound to before the call that wrote it")
	require.False(t, has("live.txt"))
	require.True(t, has("main.go"))

	// Rewind to the snapshot: both are back.
	p.click(`li.entry.op-snapshot button.rewind`)
	statusSays("Rewound to snapshot "+snaps[0].ID[:12], "the rewind to the snapshot")
	require.True(t, has("added.txt") && has("live.txt"), "the snapshot's state")

	// Rewind to a time: after call #3, before #4.
	p.typeInto("#rewind-to", afterThird.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	p.click("#btn-rewind")
	statusSays("Rewound to the state at", "the rewind to a time")
	require.False(t, has("added.txt"), "the state before call #4")
	require.True(t, has("src/util/strings.go"), "the state after call #3")

	// Undo it: a rewind to a position, the one it came from.
	p.click("#btn-undo")
	statusSays("Undone", "the undo's report")
	require.True(t, has("added.txt") && has("live.txt"), "the undo brought the snapshot's state back")
	require.Equal(t, "rewind", lastStep().Tool)

	// Rebase: the host changed meanwhile; the preview names what comes in.
	write("host-only.txt", "from the host\n")
	p.click("#btn-rebase-preview")
	p.waitFor(`!document.querySelector("#rebase-preview").hidden`, "the rebase preview")
	require.Contains(t, p.str(`document.querySelector("#rebase-list").innerText`), "from the host: host-only.txt")
	sess, err := c.Session(ctx, "review")
	require.NoError(t, err)
	require.Equal(t, created.Session.ImportSnapshot, sess.ImportSnapshot, "a preview changes nothing")
	p.click("#btn-rebase-confirm")
	statusSays("Rebased on the host", "the rebase's report")
	sess, err = c.Session(ctx, "review")
	require.NoError(t, err)
	require.NotEqual(t, created.Session.ImportSnapshot, sess.ImportSnapshot, "the rebase imported the host again")
	tool("read_file", `{"path":"host-only.txt"}`)

	// Apply: the dry run's preview first, and nothing written yet.
	dry, err := c.Apply(ctx, "review", true)
	require.NoError(t, err)
	p.click("#btn-apply-preview")
	p.waitFor(`!document.querySelector("#apply-preview").hidden`, "the apply preview")
	require.Equal(t, len(dry.Applied), int(mustAtoi(t, p.str(`String(document.querySelectorAll("#apply-list li").length)`))))
	require.Contains(t, p.str(`document.querySelector("#apply-list").innerText`), "main.go")
	accessible("the apply preview")
	p.screenshot("apply-preview")
	host, err := os.ReadFile(filepath.Join(root, "main.go"))
	require.NoError(t, err)
	require.Contains(t, string(host), `println("hello")`, "a preview writes nothing")
	p.click("#btn-apply-confirm")
	statusSays("Applied", "the apply's report")
	host, err = os.ReadFile(filepath.Join(root, "main.go"))
	require.NoError(t, err)
	require.Contains(t, string(host), `println("hello, review")`)
	for name, want := range map[string]string{"added.txt": "new file\n", "live.txt": "written while the page was open\n",
		evil: "y</script><script>alert(2)</script>\n", "host-only.txt": "from the host\n"} {
		got, err := os.ReadFile(filepath.Join(root, name))
		require.NoError(t, err, name)
		require.Equal(t, want, string(got), name)
	}
	p.waitFor(`document.querySelector("#diff .summary") && document.querySelector("#diff .summary").innerText === "no changes"`, "the page after the apply: nothing left to apply")
	p.screenshot("applied")

	// Close the session (a second press confirms).
	p.click("#btn-close")
	p.click("#btn-close-confirm")
	p.waitFor(`location.pathname === "/ui/" && document.querySelector("p.empty")`, "the empty session list")
	statusSays("Session review closed.", "the close's report")
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

// axeScript returns axe-core's axe.min.js, from VFSD_AXE_JS or where
// .ci/run installs it (npm, outside the repository). Without it the
// test skips — and fails under CI, which must provide it.
func axeScript(t *testing.T) string {
	t.Helper()
	paths := []string{os.Getenv("VFSD_AXE_JS")}
	if home, err := os.UserHomeDir(); err == nil {
		paths = append(paths, filepath.Join(home, ".cache", "vfsd-ci", "axe", "node_modules", "axe-core", "axe.min.js"))
	}
	for _, p := range paths {
		if p == "" {
			continue
		}
		if b, err := os.ReadFile(p); err == nil {
			return string(b)
		}
	}
	msg := "axe-core is not installed: npm install --prefix ~/.cache/vfsd-ci/axe axe-core (or set VFSD_AXE_JS to its axe.min.js); the review page's accessibility check needs it"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
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
