package daemon

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/ui"
)

// The review page (package ui renders it): the daemon serves it under
// /ui/ and gathers what it shows through its own API routes, called
// in-process as the viewer (so a session's reviewer sees exactly what its
// token reaches). Routes another part of vfsd may add — the history log,
// rewind, rebase — are looked up in the daemon's own routing table: the
// page uses them when they exist.

// uiMaxCalls is how many of a session's latest calls its page lists.
const uiMaxCalls = 200

// uiMaxRows bounds the side-by-side rows of one page's diff.
const uiMaxRows = 20000

// uiRoutes registers the review page's routes.
func (d *Daemon) uiRoutes() {
	d.route("POST /v1/ui/login", scopeAny, d.handleUILogin)
	d.uiRoute("GET /ui/static/", func(w http.ResponseWriter, r *http.Request) error {
		ui.Static("/ui/static/").ServeHTTP(w, r)
		return nil
	})
	d.uiRoute("GET /ui", func(w http.ResponseWriter, r *http.Request) error {
		http.Redirect(w, r, "/ui/", http.StatusFound)
		return nil
	})
	d.uiRoute("GET /ui/login", d.handleUILoginPage)
	d.uiRoute("POST /ui/logout", d.handleUILogout)
	d.uiRoute("GET /ui/{$}", d.handleUISessions)
	d.uiRoute("GET /ui/s/{id}", d.handleUISession)
}

// uiRoute registers a page route: its errors are pages, not JSON.
func (d *Daemon) uiRoute(pattern string, h apiHandler) {
	d.mux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		defer func() { d.metrics.request(pattern, sw.code()) }()
		ui.SecurityHeaders(sw.Header())
		if err := h(sw, r); err != nil && sw.status == 0 {
			ae := toAPIError(err)
			d.uiMessage(sw, r, ae.Status, "Cannot show this page", ae.Message, "")
		}
	}))
}

// handleUILogin mints a one-time login for the review page: the admin's
// (or, with "session", one session's), or a session token's own.
func (d *Daemon) handleUILogin(w http.ResponseWriter, r *http.Request) error {
	var req api.UILoginRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	p := principalOf(r.Context())
	if p.ui != nil {
		return apiErr(api.CodeForbidden, "a review-page login cannot mint other logins; use the socket or a token")
	}
	session := req.Session
	if !p.admin {
		if session != "" && session != p.session {
			return apiErr(api.CodeForbidden, "this token belongs to session %s; it can make a review login for that session only", p.session)
		}
		session = p.session
	}
	var th, uid string
	if session != "" {
		e, err := d.lookup(session)
		if err != nil {
			return err
		}
		h, ok := d.sessionTokenHash(session)
		if !ok {
			return apiErr(api.CodeNotFound, "session %s has no token to bind a review login to", session)
		}
		th, uid = h, e.uid
	}
	host := d.uiHost(uid)
	base, err := d.uiBaseURL(r, host)
	if err != nil {
		return err
	}
	code, exp, err := d.mintUILogin(session, th, host)
	if err != nil {
		return err
	}
	out := api.UILoginResponse{Path: "/ui/login?code=" + url.QueryEscape(code), Host: host, ExpiresAt: exp.UTC(), Session: session}
	if base != "" {
		out.URL = base + out.Path
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// uiLoopbackHost reports whether name (a Host header's name) is a
// loopback address or localhost: an address of this machine that reaches
// the daemon on the same port as its page's host name does.
func uiLoopbackHost(name string) bool {
	if name == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(name, "[]"))
	return ip != nil && ip.IsLoopback()
}

// handleUILoginPage exchanges a one-time code for the page's cookie, at
// the page's own host name: a code opened at a loopback address of the
// daemon is sent on there (not used up) — unless the daemon's port is not
// its own on every loopback address (uiAuth.portErr) — any other host is
// refused, as the cookie would be set for it.
func (d *Daemon) handleUILoginPage(w http.ResponseWriter, r *http.Request) error {
	code := r.URL.Query().Get("code")
	if host, ok := d.uiCodeHost(code); ok && hostName(r.Host) != host {
		socket, _ := r.Context().Value(viaSocketKey{}).(bool)
		// On the daemon's TCP port when another program holds it on a
		// loopback address, the page's name could lead to that program.
		portHeld := d.uiAuth.portErr == nil || socket
		if !uiLoopbackHost(hostName(r.Host)) || !portHeld {
			d.uiMessage(w, r, http.StatusMisdirectedRequest, "Open this login at the page's own address",
				"The review page works only at its own address, a name under .localhost on the daemon's port; open the URL this prints as it is (from another machine, through an SSH tunnel to the daemon's port):", "vfsd ui")
			return nil
		}
		next := "http://" + host
		if _, port, err := net.SplitHostPort(r.Host); err == nil {
			next = "http://" + net.JoinHostPort(host, port)
		}
		http.Redirect(w, r, next+"/ui/login?code="+url.QueryEscape(code), http.StatusFound)
		return nil
	}
	cookie, l, ok := d.redeemUICode(code)
	if !ok {
		d.uiMessage(w, r, http.StatusUnauthorized, "This login link is used up or expired",
			"Each link works once, for two minutes. Ask for a new one:", "vfsd ui")
		return nil
	}
	// Host-only (no Domain): sent to the page's host name alone.
	http.SetCookie(w, &http.Cookie{Name: d.uiCookieName(), Value: cookie, Path: "/",
		MaxAge: int(uiLoginTTL / time.Second), HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	next := "/ui/"
	if l.session != "" {
		next = "/ui/s/" + url.PathEscape(l.session)
	}
	// A page that moves on by itself rather than a redirect: the cookie is
	// SameSite=Strict, and a redirect at the end of a navigation that
	// started on another site would not send it.
	v := &ui.Message{Common: d.uiCommon(r, "Signed in"), Heading: "Signed in",
		Text: "Going to the review page.", Next: next, Refresh: true}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	return ui.RenderMessage(w, v)
}

// handleUILogout ends the login its cookie names.
func (d *Daemon) handleUILogout(w http.ResponseWriter, r *http.Request) error {
	if p := principalOf(r.Context()); p == nil || p.ui == nil {
		return apiErr(api.CodeUnauthorized, "not signed in to the review page")
	}
	d.logoutUI(r)
	http.SetCookie(w, &http.Cookie{Name: d.uiCookieName(), Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode})
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// uiCommon is the frame of a page for the request's viewer.
func (d *Daemon) uiCommon(r *http.Request, title string) ui.Common {
	c := ui.Common{Title: title, Version: d.cfg.Version}
	if p := principalOf(r.Context()); p != nil {
		c.Admin, c.Session = p.admin, p.session
		if p.ui != nil {
			c.CSRF = p.ui.csrf
		}
	}
	return c
}

// uiMessage writes a page with a message and a status.
func (d *Daemon) uiMessage(w http.ResponseWriter, r *http.Request, status int, heading, text, command string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := ui.RenderMessage(w, &ui.Message{Common: d.uiCommon(r, heading), Heading: heading, Text: text, Command: command}); err != nil {
		d.log.Warn("review page", "err", err)
	}
}

// uiViewer returns the request's principal, or writes the sign-in page.
func (d *Daemon) uiViewer(w http.ResponseWriter, r *http.Request) *principal {
	p := principalOf(r.Context())
	if p == nil {
		d.uiMessage(w, r, http.StatusUnauthorized, "Sign in to vfsd's review page",
			"Run this where the daemon runs, and open the address it prints (it works once, for two minutes):", "vfsd ui")
	}
	return p
}

// handleUISessions is the session list.
func (d *Daemon) handleUISessions(w http.ResponseWriter, r *http.Request) error {
	p := d.uiViewer(w, r)
	if p == nil {
		return nil
	}
	if !p.admin {
		http.Redirect(w, r, "/ui/s/"+url.PathEscape(p.session), http.StatusFound)
		return nil
	}
	var list api.SessionList
	if err := d.uiCall(r, http.MethodGet, "/v1/sessions", nil, &list); err != nil {
		return err
	}
	v := &ui.SessionsView{Common: d.uiCommon(r, "Sessions")}
	sort.Slice(list.Sessions, func(i, j int) bool { return list.Sessions[i].CreatedAt.After(list.Sessions[j].CreatedAt) })
	for _, s := range list.Sessions {
		v.Sessions = append(v.Sessions, uiSessionRow(s))
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	return ui.RenderSessions(w, v)
}

func uiSessionRow(s api.Session) ui.SessionRow {
	row := ui.SessionRow{ID: s.ID, Contract: s.Contract, CreatedAt: s.CreatedAt, ExpiresAt: s.ExpiresAt,
		Bytes: s.Bytes, Files: s.Files, Calls: s.Calls, Dirty: s.Dirty}
	for _, m := range s.Mounts {
		mp := m.MountPath
		if mp == "" {
			mp = "/"
		}
		row.Folders = append(row.Folders, m.HostPath+" → "+mp)
	}
	return row
}

// handleUISession is a session's page: its facts, timeline, a diff and
// the buttons.
func (d *Daemon) handleUISession(w http.ResponseWriter, r *http.Request) error {
	p := d.uiViewer(w, r)
	if p == nil {
		return nil
	}
	id := r.PathValue("id")
	base := "/v1/sessions/" + url.PathEscape(id)
	var s api.Session
	if err := d.uiCall(r, http.MethodGet, base, nil, &s); err != nil {
		return err
	}
	v := &ui.SessionView{Common: d.uiCommon(r, "Session "+s.ID), Row: uiSessionRow(s),
		Import: s.ImportSnapshot, Base: s.Base,
		CanApply:  p.admin && s.ImportSnapshot != "" && len(s.Mounts) > 0,
		CanRewind: d.hasRoute(http.MethodPost, base+"/rewind"),
		CanRebase: d.hasRoute(http.MethodPost, base+"/rebase") && s.ImportSnapshot != "",
	}
	q := r.URL.Query()
	selCall, _ := strconv.ParseUint(q.Get("call"), 10, 64)
	selSnap := q.Get("snap")

	// The timeline: the latest calls, newest first.
	since := uint64(0)
	if s.Calls > uiMaxCalls {
		since = s.Calls - uiMaxCalls
		v.CallsNote = fmt.Sprintf("the latest %d of %d calls", uiMaxCalls, s.Calls)
	}
	var calls api.CallList
	if err := d.uiCall(r, http.MethodGet, fmt.Sprintf("%s/calls?since=%d&limit=%d", base, since, uiMaxCalls), nil, &calls); err != nil {
		v.CallsNote = "the call log: " + toAPIError(err).Message
	}
	for i := len(calls.Calls) - 1; i >= 0; i-- {
		c := calls.Calls[i]
		v.Calls = append(v.Calls, ui.CallRow{N: c.N, Time: c.Time, Tool: c.Tool, Status: c.Status,
			IsError: c.IsError, Summary: c.Summary, Changed: c.Seq != c.SeqBefore, Selected: c.N == selCall})
	}
	if d.hasRoute(http.MethodGet, base+"/log") {
		v.HasLog = true
		v.Log, v.LogError = d.uiLog(r, base)
	}
	var snaps api.SnapshotList
	if err := d.uiCall(r, http.MethodGet, base+"/snapshots", nil, &snaps); err == nil {
		for _, sn := range snaps.Snapshots {
			v.Snapshots = append(v.Snapshots, ui.SnapRow{ID: sn.ID, Label: sn.Label, CreatedAt: sn.CreatedAt,
				Files: sn.Files, Bytes: sn.Bytes, Selected: selSnap != "" && strings.HasPrefix(sn.ID, selSnap)})
		}
	}

	switch {
	case selCall != 0:
		v.Diff = d.uiCallDiff(r, base, selCall)
	case selSnap != "":
		v.Diff = d.uiSnapshotDiff(r, base, selSnap, snaps.Snapshots)
	default:
		from, what := "import", "The whole session against its import"
		if s.ImportSnapshot == "" {
			from, what = "base", "The whole session against its start"
		}
		v.Diff = d.uiDiff(r, base, from, "live", what)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	return ui.RenderSession(w, v)
}

// uiDiff renders a session diff route's answer.
func (d *Daemon) uiDiff(r *http.Request, base, from, to, title string) ui.DiffView {
	v := ui.DiffView{Title: title}
	var df api.Diff
	q := url.Values{"from": {from}, "to": {to}, "text": {"true"}}
	if err := d.uiCall(r, http.MethodGet, base+"/diff?"+q.Encode(), nil, &df); err != nil {
		v.Error = toAPIError(err).Message
		return v
	}
	v.Summary = fmt.Sprintf("%d added, %d modified, %d deleted", df.Added, df.Modified, df.Deleted)
	if len(df.Entries) == 0 {
		v.Summary = "no changes"
	}
	rows := 0
	for _, e := range df.Entries {
		f := ui.FileView{Path: e.Path, Change: e.Change, Kind: e.Kind, Notes: uiNotes(e)}
		if e.Text != "" && rows < uiMaxRows {
			if fds := ui.ParseUnified(e.Text); len(fds) > 0 {
				f.Rows, f.Added, f.Delete = fds[0].Rows, fds[0].Added, fds[0].Deleted
				rows += len(f.Rows)
			}
		} else if e.Text != "" {
			f.Notes = append(f.Notes, "diff not shown: the page already shows its limit of lines; see vfsd snapshot diff")
		}
		v.Files = append(v.Files, f)
	}
	return v
}

// uiNotes says in words what a diff entry changed besides its lines.
func uiNotes(e api.DiffEntry) []string {
	var n []string
	if e.OldKind != "" {
		n = append(n, fmt.Sprintf("was a %s, now a %s", e.OldKind, e.Kind))
	}
	if e.OldMode != 0 && e.NewMode != 0 && e.OldMode != e.NewMode {
		n = append(n, fmt.Sprintf("mode %04o → %04o", e.OldMode, e.NewMode))
	} else if e.Change == "added" && e.NewMode != 0 {
		n = append(n, fmt.Sprintf("mode %04o", e.NewMode))
	}
	if e.OldUid != nil && e.NewUid != nil && (*e.OldUid != *e.NewUid || (e.OldGid != nil && e.NewGid != nil && *e.OldGid != *e.NewGid)) {
		n = append(n, fmt.Sprintf("owner %d:%d → %d:%d", *e.OldUid, deref(e.OldGid), *e.NewUid, deref(e.NewGid)))
	}
	if e.LinkTo != "" {
		n = append(n, "hard link to "+e.LinkTo)
	}
	for _, x := range e.Xattrs {
		n = append(n, "extended attribute "+x.Name+" "+x.Change)
	}
	if e.Binary {
		n = append(n, fmt.Sprintf("binary or large content: %s → %s", ui.HumanBytes(e.OldSize), ui.HumanBytes(e.NewSize)))
	}
	if e.OldRdev != e.NewRdev {
		n = append(n, fmt.Sprintf("device %d → %d", e.OldRdev, e.NewRdev))
	}
	return n
}

func deref(p *uint32) uint32 {
	if p == nil {
		return 0
	}
	return *p
}

// uiSnapshotDiff is a snapshot against the one before it (its parent, or
// the session's start).
func (d *Daemon) uiSnapshotDiff(r *http.Request, base, ref string, snaps []api.Snapshot) ui.DiffView {
	var snap *api.Snapshot
	for i := range snaps {
		if strings.HasPrefix(snaps[i].ID, ref) {
			snap = &snaps[i]
			break
		}
	}
	if snap == nil {
		return ui.DiffView{Title: "Snapshot " + ref, Error: "no snapshot " + ref + " of this session"}
	}
	title := "Snapshot " + shortID(snap.ID)
	if snap.Label != "" {
		title += " (" + snap.Label + ")"
	}
	if snap.Parent != "" {
		v := d.uiDiff(r, base, snap.Parent, snap.ID, title+" against the state before it")
		if v.Error == "" {
			return v
		}
	}
	return d.uiDiff(r, base, "base", snap.ID, title+" against the session's start")
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// uiCallDiff is a tool call: the diffs its result carries (edit_file's,
// apply_patch's per file), its parameters and its result.
func (d *Daemon) uiCallDiff(r *http.Request, base string, n uint64) ui.DiffView {
	v := ui.DiffView{Title: fmt.Sprintf("Call #%d", n)}
	var list api.CallList
	if err := d.uiCall(r, http.MethodGet, fmt.Sprintf("%s/calls?since=%d&limit=1", base, n-1), nil, &list); err != nil {
		v.Error = toAPIError(err).Message
		return v
	}
	if len(list.Calls) == 0 || list.Calls[0].N != n {
		v.Error = fmt.Sprintf("call #%d is not in the session's call log (the log keeps its latest 4-8 MiB)", n)
		return v
	}
	c := list.Calls[0]
	v.Title = fmt.Sprintf("Call #%d: %s (%s)", c.N, c.Tool, c.Status)
	params, result := []byte(c.Params), []byte(c.Result)
	if c.ParamsRef != "" {
		params, _ = d.uiBlob(r, c.ParamsRef)
	}
	if c.ResultRef != "" {
		result, _ = d.uiBlob(r, c.ResultRef)
	}
	v.Params, v.Result = uiPretty(params), uiPretty(result)
	var doc any
	if json.Unmarshal(result, &doc) == nil {
		for _, t := range collectDiffs(doc, nil) {
			for _, fd := range ui.ParseUnified(t) {
				path := fd.NewPath
				if path == "" {
					path = fd.OldPath
				}
				change := "modified"
				switch {
				case fd.OldPath == "" && fd.NewPath != "":
					change = "added"
				case fd.NewPath == "" && fd.OldPath != "":
					change = "deleted"
				}
				v.Files = append(v.Files, ui.FileView{Path: path, Change: change, Kind: "file", Rows: fd.Rows, Added: fd.Added, Delete: fd.Deleted})
			}
		}
	}
	switch {
	case len(v.Files) > 0:
	case c.Seq != c.SeqBefore:
		v.Summary = fmt.Sprintf("This call changed the session (journal %d → %d); its result carries no diff. Snapshots around it show what changed.", c.SeqBefore, c.Seq)
	default:
		v.Summary = "This call changed nothing."
	}
	return v
}

// collectDiffs returns the strings under a "diff" key anywhere in a
// result, in document order.
func collectDiffs(v any, out []string) []string {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if s, ok := x[k].(string); ok && k == "diff" && s != "" {
				out = append(out, s)
				continue
			}
			out = collectDiffs(x[k], out)
		}
	case []any:
		for _, e := range x {
			out = collectDiffs(e, out)
		}
	}
	return out
}

// uiPretty indents JSON, cut at 64 KiB.
func uiPretty(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if json.Indent(&buf, b, "", "  ") != nil {
		buf.Reset()
		buf.Write(b)
	}
	const max = 64 << 10
	if buf.Len() > max {
		return buf.String()[:max] + "\n… (cut at 64 KiB)"
	}
	return buf.String()
}

// uiBlob reads up to 1 MiB of a blob the viewer may read.
func (d *Daemon) uiBlob(r *http.Request, ref string) ([]byte, error) {
	var b []byte
	err := d.uiCallRaw(r, http.MethodGet, "/v1/blobs/"+url.PathEscape(ref), nil, http.Header{"Range": {"bytes=0-1048575"}}, &b)
	return b, err
}

// uiLog reads the history route's log (GET .../log) into rows, taking the
// fields it has by their likely names.
func (d *Daemon) uiLog(r *http.Request, base string) ([]ui.LogRow, string) {
	var raw json.RawMessage
	if err := d.uiCall(r, http.MethodGet, base+"/log", nil, &raw); err != nil {
		return nil, toAPIError(err).Message
	}
	var entries []map[string]any
	if json.Unmarshal(raw, &entries) != nil {
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return nil, "the log's answer is not a list"
		}
		for _, k := range []string{"entries", "log", "events", "items"} {
			if obj[k] != nil && json.Unmarshal(obj[k], &entries) == nil {
				break
			}
		}
	}
	str := func(m map[string]any, keys ...string) string {
		for _, k := range keys {
			switch x := m[k].(type) {
			case string:
				if x != "" {
					return x
				}
			case float64:
				return strconv.FormatFloat(x, 'f', -1, 64)
			}
		}
		return ""
	}
	var rows []ui.LogRow
	for i := len(entries) - 1; i >= 0 && len(rows) < uiMaxCalls; i-- {
		e := entries[i]
		row := ui.LogRow{Time: str(e, "time"), What: str(e, "tool", "source", "kind", "op", "type"),
			Status: str(e, "status"), Summary: str(e, "summary", "message"), Ref: str(e, "ref", "call", "n", "id")}
		if ps, ok := e["paths"].([]any); ok {
			for _, p := range ps {
				if s, ok := p.(string); ok {
					row.Paths = append(row.Paths, s)
				}
			}
		}
		rows = append(rows, row)
	}
	return rows, ""
}

// hasRoute reports whether the daemon routes method path to an endpoint
// (the page's feature detection of routes other parts add).
func (d *Daemon) hasRoute(method, path string) bool {
	req, err := http.NewRequest(method, path, nil)
	if err != nil {
		return false
	}
	_, pattern := d.mux.Handler(req)
	return pattern != "" && pattern != "/"
}

// uiCall calls one of the daemon's API routes in-process as the request's
// viewer and decodes its JSON answer into out; an error answer is the
// *api.Error it carries.
func (d *Daemon) uiCall(r *http.Request, method, path string, body, out any) error {
	var raw []byte
	if err := d.uiCallRaw(r, method, path, body, nil, &raw); err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("review page: decode %s %s: %w", method, path, err)
	}
	return nil
}

func (d *Daemon) uiCallRaw(r *http.Request, method, path string, body any, hdr http.Header, out *[]byte) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(r.Context(), method, path, rd)
	if err != nil {
		return fmt.Errorf("review page: %w", err)
	}
	req.Host, req.RemoteAddr = r.Host, r.RemoteAddr
	for k, v := range hdr {
		req.Header[k] = v
	}
	rec := &bufferWriter{header: http.Header{}}
	d.mux.ServeHTTP(rec, req)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	if rec.status >= 300 {
		var eb api.ErrorBody
		if json.Unmarshal(rec.buf.Bytes(), &eb) == nil && eb.Error != nil {
			eb.Error.Status = rec.status
			return eb.Error
		}
		return errors.New(strings.TrimSpace(rec.buf.String()))
	}
	*out = rec.buf.Bytes()
	return nil
}

// bufferWriter keeps a response in memory.
type bufferWriter struct {
	header http.Header
	status int
	buf    bytes.Buffer
}

func (b *bufferWriter) Header() http.Header { return b.header }
func (b *bufferWriter) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.buf.Write(p)
}
func (b *bufferWriter) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
}
