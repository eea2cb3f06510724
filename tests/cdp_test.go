package tests

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A small Chrome DevTools Protocol client for the browser tests. It talks
// to Chromium over --remote-debugging-pipe (fd 3: commands in, fd 4:
// answers and events out, each message JSON ended by a NUL byte), which
// needs no websocket and no port: nothing else on the machine can reach
// the browser. Only the few commands the tests use are wrapped.

// chromiumPath returns Debian's chromium, or "" when it is not installed.
func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// cdpMessage is one protocol message: a command's answer (ID) or an
// event (Method).
type cdpMessage struct {
	ID        int64           `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// browserProc is a headless Chromium driven over the pipe.
type browserProc struct {
	t   *testing.T
	cmd *exec.Cmd
	in  io.WriteCloser

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan cdpMessage
	events  []cdpMessage
	done    chan struct{}
	stderr  *os.File
}

// startBrowser starts headless Chromium with the flags this machine needs
// (no background networking: its connections are refused here) and a
// fresh profile, and stops it when the test ends.
func startBrowser(t *testing.T, path string) *browserProc {
	t.Helper()
	profile := t.TempDir()
	cmdR, cmdW, err := os.Pipe() // our commands → the browser's fd 3
	require.NoError(t, err)
	outR, outW, err := os.Pipe() // the browser's fd 4 → us
	require.NoError(t, err)
	logf, err := os.Create(filepath.Join(profile, "chromium.log"))
	require.NoError(t, err)
	cmd := exec.Command(path, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--window-size=1400,1000", "--hide-scrollbars",
		"--user-data-dir="+profile, "--remote-debugging-pipe", "about:blank")
	cmd.ExtraFiles = []*os.File{cmdR, outW}
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(t, cmd.Start())
	cmdR.Close()
	outW.Close()
	b := &browserProc{t: t, cmd: cmd, in: cmdW, pending: map[int64]chan cdpMessage{}, done: make(chan struct{}), stderr: logf}
	go b.read(outR)
	t.Cleanup(func() {
		cmdW.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		<-b.done
		logf.Close()
		if t.Failed() {
			if log, err := os.ReadFile(logf.Name()); err == nil && len(log) > 0 {
				t.Logf("chromium's output:\n%s", tail(string(log), 4000))
			}
		}
	})
	return b
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// read dispatches the browser's messages until its pipe closes.
func (b *browserProc) read(r io.ReadCloser) {
	defer close(b.done)
	defer r.Close()
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		raw, err := br.ReadBytes(0)
		if err != nil {
			b.mu.Lock()
			for id, ch := range b.pending {
				close(ch)
				delete(b.pending, id)
			}
			b.mu.Unlock()
			return
		}
		var m cdpMessage
		if json.Unmarshal(raw[:len(raw)-1], &m) != nil {
			continue
		}
		b.mu.Lock()
		if m.ID != 0 {
			if ch, ok := b.pending[m.ID]; ok {
				ch <- m
				delete(b.pending, m.ID)
			}
		} else {
			b.events = append(b.events, m)
		}
		b.mu.Unlock()
	}
}

// call sends a command (to a page when session is set) and decodes its
// result into out.
func (b *browserProc) call(ctx context.Context, session, method string, params, out any) error {
	if params == nil {
		params = struct{}{}
	}
	p, err := json.Marshal(params)
	if err != nil {
		return err
	}
	ch := make(chan cdpMessage, 1)
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	b.pending[id] = ch
	b.mu.Unlock()
	msg, err := json.Marshal(cdpMessage{ID: id, Method: method, Params: p, SessionID: session})
	if err != nil {
		return err
	}
	if _, err := b.in.Write(append(msg, 0)); err != nil {
		return fmt.Errorf("cdp %s: write: %w", method, err)
	}
	select {
	case m, ok := <-ch:
		if !ok {
			return fmt.Errorf("cdp %s: the browser went away", method)
		}
		if m.Error != nil {
			return fmt.Errorf("cdp %s: %d %s", method, m.Error.Code, m.Error.Message)
		}
		if out != nil {
			return json.Unmarshal(m.Result, out)
		}
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		delete(b.pending, id)
		b.mu.Unlock()
		return fmt.Errorf("cdp %s: %w", method, ctx.Err())
	}
}

// eventsNamed returns the events of a method received so far.
func (b *browserProc) eventsNamed(method string) []cdpMessage {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []cdpMessage
	for _, e := range b.events {
		if e.Method == method {
			out = append(out, e)
		}
	}
	return out
}

// page is one tab, attached in flat mode.
type page struct {
	b       *browserProc
	t       *testing.T
	ctx     context.Context
	session string
	shots   string
	nshot   int
}

// newPage opens a tab and enables the domains the tests watch.
func (b *browserProc) newPage(ctx context.Context, shots string) *page {
	t := b.t
	var target struct {
		TargetID string `json:"targetId"`
	}
	require.NoError(t, b.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &target))
	var att struct {
		SessionID string `json:"sessionId"`
	}
	require.NoError(t, b.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att))
	p := &page{b: b, t: t, ctx: ctx, session: att.SessionID, shots: shots}
	for _, domain := range []string{"Page.enable", "Runtime.enable", "Log.enable"} {
		require.NoError(t, b.call(ctx, p.session, domain, nil, nil))
	}
	require.NoError(t, b.call(ctx, p.session, "Emulation.setDeviceMetricsOverride",
		map[string]any{"width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": false}, nil))
	return p
}

// navigate loads url and waits for the document to be complete.
func (p *page) navigate(url string) {
	p.t.Helper()
	require.NoError(p.t, p.b.call(p.ctx, p.session, "Page.navigate", map[string]any{"url": url}, nil))
	p.waitFor(`document.readyState === "complete"`, "the page to load")
}

// eval runs a JavaScript expression in the page (promises awaited) and
// decodes its value into out.
func (p *page) eval(expr string, out any) error {
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := p.b.call(p.ctx, p.session, "Runtime.evaluate",
		map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &res); err != nil {
		return err
	}
	if res.Exception != nil {
		return fmt.Errorf("%s: %s %s", expr, res.Exception.Text, res.Exception.Exception.Description)
	}
	if out != nil && len(res.Result.Value) > 0 {
		return json.Unmarshal(res.Result.Value, out)
	}
	return nil
}

// value evaluates expr and returns its value as a string (JSON for
// non-strings).
func (p *page) str(expr string) string {
	p.t.Helper()
	var v any
	require.NoError(p.t, p.eval(expr, &v))
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// waitFor polls a JavaScript condition until it is true (a navigation in
// between is fine), failing the test after 30 s or at the context's
// deadline, with a screenshot.
func (p *page) waitFor(cond, what string) {
	p.t.Helper()
	var last error
	deadline := time.Now().Add(30 * time.Second)
	for {
		var ok bool
		err := p.eval("Boolean("+cond+")", &ok)
		if err == nil && ok {
			return
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) || p.ctx.Err() != nil {
			p.screenshot("timeout")
			p.t.Fatalf("waiting for %s (%s): gave up (last error: %v); page text: %s", what, cond, last, p.textOr())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *page) textOr() string {
	var s string
	if p.ctx.Err() != nil {
		return "(the test's deadline passed)"
	}
	if p.eval("document.body ? document.body.innerText : ''", &s) != nil {
		return "(unreadable)"
	}
	return tail(s, 2000)
}

// click presses the left mouse button over the element's centre, as a
// person would (the element is scrolled into view first).
func (p *page) click(selector string) {
	p.t.Helper()
	p.waitFor(fmt.Sprintf(`(() => { const e = document.querySelector(%q); return e && !e.disabled && e.offsetParent !== null; })()`, selector), selector+" to be shown")
	var r struct{ X, Y float64 }
	require.NoError(p.t, p.eval(fmt.Sprintf(`(() => { const e = document.querySelector(%q); e.scrollIntoView({block: "center"});
		const r = e.getBoundingClientRect(); return {X: r.left + r.width / 2, Y: r.top + r.height / 2}; })()`, selector), &r))
	for _, typ := range []string{"mouseMoved", "mousePressed", "mouseReleased"} {
		require.NoError(p.t, p.b.call(p.ctx, p.session, "Input.dispatchMouseEvent",
			map[string]any{"type": typ, "x": r.X, "y": r.Y, "button": "left", "clickCount": 1}, nil))
	}
}

// typeInto focuses an input and types text into it.
func (p *page) typeInto(selector, text string) {
	p.t.Helper()
	p.click(selector)
	require.NoError(p.t, p.b.call(p.ctx, p.session, "Input.insertText", map[string]any{"text": text}, nil))
}

// screenshot writes the page as NN-name.png into the test's artifact
// directory.
func (p *page) screenshot(name string) {
	p.t.Helper()
	var shot struct {
		Data string `json:"data"`
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := p.b.call(ctx, p.session, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true}, &shot); err != nil {
		p.t.Logf("screenshot %s: %v", name, err)
		return
	}
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	require.NoError(p.t, err)
	p.nshot++
	path := filepath.Join(p.shots, fmt.Sprintf("%02d-%s.png", p.nshot, name))
	require.NoError(p.t, os.WriteFile(path, png, 0o644))
}

// setWidth lays the page out at width CSS pixels (its height stays).
func (p *page) setWidth(width int) {
	p.t.Helper()
	require.NoError(p.t, p.b.call(p.ctx, p.session, "Emulation.setDeviceMetricsOverride",
		map[string]any{"width": width, "height": 1000, "deviceScaleFactor": 1, "mobile": false}, nil))
}

// setColorScheme emulates prefers-color-scheme ("light" or "dark").
func (p *page) setColorScheme(scheme string) {
	p.t.Helper()
	require.NoError(p.t, p.b.call(p.ctx, p.session, "Emulation.setEmulatedMedia",
		map[string]any{"features": []map[string]string{{"name": "prefers-color-scheme", "value": scheme}}}, nil))
}

// press types one key, as the keyboard would: key is a KeyboardEvent
// key ("j", "?", "Escape", "Tab").
func (p *page) press(key string) {
	p.t.Helper()
	// Keys go to the focused tab: this one.
	require.NoError(p.t, p.b.call(p.ctx, p.session, "Page.bringToFront", nil, nil))
	codes := map[string]int{"Escape": 27, "Tab": 9, "Enter": 13}
	ev := map[string]any{"key": key}
	if c, ok := codes[key]; ok {
		ev["windowsVirtualKeyCode"], ev["code"] = c, key
		if key == "Enter" {
			ev["text"] = "\r"
		}
	} else {
		ev["text"] = key
		if r := []rune(key); len(r) == 1 && r[0] >= 'a' && r[0] <= 'z' {
			ev["windowsVirtualKeyCode"], ev["code"] = int(r[0]-'a'+'A'), "Key"+strings.ToUpper(key)
		}
	}
	for _, typ := range []string{"keyDown", "keyUp"} {
		ev["type"] = typ
		require.NoError(p.t, p.b.call(p.ctx, p.session, "Input.dispatchKeyEvent", ev, nil))
	}
}

// axeViolation is one rule axe-core found broken.
type axeViolation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"`
}

// axe runs axe-core (the source of its axe.min.js) over the page as it
// is now. The script goes into an isolated world of the page's frame
// through the DevTools protocol: the page's own scripts and its CSP never
// see it, and nothing is added to the page.
func (p *page) axe(src string) []axeViolation {
	p.t.Helper()
	var tree struct {
		FrameTree struct {
			Frame struct {
				ID string `json:"id"`
			} `json:"frame"`
		} `json:"frameTree"`
	}
	require.NoError(p.t, p.b.call(p.ctx, p.session, "Page.getFrameTree", nil, &tree))
	var world struct {
		ContextID int `json:"executionContextId"`
	}
	require.NoError(p.t, p.b.call(p.ctx, p.session, "Page.createIsolatedWorld",
		map[string]any{"frameId": tree.FrameTree.Frame.ID, "worldName": "axe"}, &world))
	eval := func(expr string, out any) {
		var res struct {
			Result struct {
				Value json.RawMessage `json:"value"`
			} `json:"result"`
			Exception *struct {
				Text      string `json:"text"`
				Exception struct {
					Description string `json:"description"`
				} `json:"exception"`
			} `json:"exceptionDetails"`
		}
		require.NoError(p.t, p.b.call(p.ctx, p.session, "Runtime.evaluate",
			map[string]any{"expression": expr, "contextId": world.ContextID, "returnByValue": true, "awaitPromise": true}, &res))
		if res.Exception != nil {
			p.t.Fatalf("axe: %s %s", res.Exception.Text, res.Exception.Exception.Description)
		}
		if out != nil {
			require.NoError(p.t, json.Unmarshal(res.Result.Value, out))
		}
	}
	eval(src, nil)
	var out []axeViolation
	eval(`axe.run(document, {resultTypes: ["violations"]}).then(r => r.violations.map(v => ({
		id: v.id, impact: v.impact || "", help: v.help,
		nodes: v.nodes.slice(0, 5).map(n => n.target.join(" ") + ": " + (n.failureSummary || "").replace(/\s+/g, " "))})))`, &out)
	return out
}
