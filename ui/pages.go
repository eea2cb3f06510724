package ui

import (
	"bytes"
	"encoding/json"
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
	"github.com/vfsd/vfsd/client"
)

// The page's handlers gather what they show through the API (Server's
// client for the request's viewer), so a session's reviewer sees exactly
// what its token reaches.

// maxCalls is how many of a session's latest calls its page lists.
const maxCalls = 200

// maxRows bounds the side-by-side rows of one page's diff.
const maxRows = 20000

// maxBlobBytes bounds what the page reads of a call's parameters or
// result kept as a blob.
const maxBlobBytes = 1 << 20

// handleLoginPage exchanges a one-time code for the page's cookie, at
// the page's own host name: a code opened at a loopback address of the
// daemon is sent on there (not used up) — unless the daemon's port is not
// its own on every loopback address (SetPortError) — any other host is
// refused, as the cookie would be set for it.
func (s *Server) handleLoginPage(w http.ResponseWriter, r *http.Request) error {
	code := r.URL.Query().Get("code")
	if host, ok := s.codeHost(code); ok && hostName(r.Host) != host {
		// On the daemon's TCP port when another program holds it on a
		// loopback address, the page's name could lead to that program.
		portHeld := s.portErr == nil || s.cfg.FromSocket(r)
		if !loopbackHost(hostName(r.Host)) || !portHeld {
			s.message(w, r, http.StatusMisdirectedRequest, "Open this login at the page's own address",
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
	cookie, l, ok := s.redeem(code)
	if !ok {
		s.message(w, r, http.StatusUnauthorized, "This login link is used up or expired",
			"Each link works once, for two minutes. Ask for a new one:", "vfsd ui")
		return nil
	}
	// Host-only (no Domain): sent to the page's host name alone.
	http.SetCookie(w, &http.Cookie{Name: s.cookieName(), Value: cookie, Path: "/",
		MaxAge: int(uiLoginTTL / time.Second), HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	next := "/ui/"
	if l.session != "" {
		next = "/ui/s/" + url.PathEscape(l.session)
	}
	// A page that moves on by itself rather than a redirect: the cookie is
	// SameSite=Strict, and a redirect at the end of a navigation that
	// started on another site would not send it.
	v := &Message{Common: s.common(r, "Signed in"), Heading: "Signed in",
		Text: "Going to the review page.", Next: next, Refresh: true}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	return RenderMessage(w, v)
}

// handleLogout ends the login its cookie names.
func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request) error {
	if v := ViewerFrom(r.Context()); v == nil || !v.Login {
		return apiErr(api.CodeUnauthorized, "not signed in to the review page")
	}
	s.logout(r)
	http.SetCookie(w, &http.Cookie{Name: s.cookieName(), Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode})
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// common is the frame of a page for the request's viewer.
func (s *Server) common(r *http.Request, title string) Common {
	c := Common{Title: title, Version: s.cfg.Version}
	if v := ViewerFrom(r.Context()); v != nil {
		c.Admin, c.Session, c.CSRF = v.Admin(), v.Session, v.CSRF
	}
	return c
}

// message writes a page with a message and a status.
func (s *Server) message(w http.ResponseWriter, r *http.Request, status int, heading, text, command string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := RenderMessage(w, &Message{Common: s.common(r, heading), Heading: heading, Text: text, Command: command}); err != nil {
		s.cfg.Logger.Warn("review page", "err", err)
	}
}

// viewer returns the request's viewer, or writes the sign-in page.
func (s *Server) viewer(w http.ResponseWriter, r *http.Request) *Viewer {
	v := ViewerFrom(r.Context())
	if v == nil {
		s.message(w, r, http.StatusUnauthorized, "Sign in to vfsd's review page",
			"Run this where the daemon runs, and open the address it prints (it works once, for two minutes):", "vfsd ui")
	}
	return v
}

// handleSessions is the session list.
func (s *Server) handleSessions(w http.ResponseWriter, r *http.Request) error {
	viewer := s.viewer(w, r)
	if viewer == nil {
		return nil
	}
	if !viewer.Admin() {
		http.Redirect(w, r, "/ui/s/"+url.PathEscape(viewer.Session), http.StatusFound)
		return nil
	}
	sessions, err := s.client(r).Sessions(r.Context())
	if err != nil {
		return err
	}
	v := &SessionsView{Common: s.common(r, "Sessions")}
	sort.Slice(sessions, func(i, j int) bool { return sessions[i].CreatedAt.After(sessions[j].CreatedAt) })
	for _, sess := range sessions {
		v.Sessions = append(v.Sessions, sessionRow(sess))
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	return RenderSessions(w, v)
}

func sessionRow(s api.Session) SessionRow {
	row := SessionRow{ID: s.ID, Contract: s.Contract, CreatedAt: s.CreatedAt, ExpiresAt: s.ExpiresAt,
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

// handleSession is a session's page: its facts, timeline, a diff and
// the buttons.
func (s *Server) handleSession(w http.ResponseWriter, r *http.Request) error {
	viewer := s.viewer(w, r)
	if viewer == nil {
		return nil
	}
	c, ctx, id := s.client(r), r.Context(), r.PathValue("id")
	sess, err := c.Session(ctx, id)
	if err != nil {
		return err
	}
	v := &SessionView{Common: s.common(r, "Session "+sess.ID), Row: sessionRow(*sess),
		Import: sess.ImportSnapshot, Base: sess.Base,
		CanApply:  viewer.Admin() && sess.ImportSnapshot != "" && len(sess.Mounts) > 0,
		CanRewind: true,
		CanRebase: sess.ImportSnapshot != "",
	}
	q := r.URL.Query()
	selCall, _ := strconv.ParseUint(q.Get("call"), 10, 64)
	selSnap := q.Get("snap")

	// The timeline: the latest calls, newest first.
	since := uint64(0)
	if sess.Calls > maxCalls {
		since = sess.Calls - maxCalls
		v.CallsNote = fmt.Sprintf("the latest %d of %d calls", maxCalls, sess.Calls)
	}
	calls, err := c.Calls(ctx, id, since, maxCalls)
	if err != nil {
		v.CallsNote = "the call log: " + apiError(err).Message
		calls = &api.CallList{}
	}
	for i := len(calls.Calls) - 1; i >= 0; i-- {
		cl := calls.Calls[i]
		v.Calls = append(v.Calls, CallRow{N: cl.N, Time: cl.Time, Tool: cl.Tool, Status: cl.Status,
			IsError: cl.IsError, Summary: cl.Summary, Changed: cl.Seq != cl.SeqBefore, Selected: cl.N == selCall})
	}
	v.HasLog = true
	v.Log, v.LogError = s.log(r, c, id)
	snaps, err := c.SessionSnapshots(ctx, id)
	if err == nil {
		for _, sn := range snaps {
			v.Snapshots = append(v.Snapshots, SnapRow{ID: sn.ID, Label: sn.Label, CreatedAt: sn.CreatedAt,
				Files: sn.Files, Bytes: sn.Bytes, Selected: selSnap != "" && strings.HasPrefix(sn.ID, selSnap)})
		}
	}

	switch {
	case selCall != 0:
		v.Diff = s.callDiff(r, c, id, selCall)
	case selSnap != "":
		v.Diff = s.snapshotDiff(r, c, id, selSnap, snaps)
	default:
		from, what := "import", "The whole session against its import"
		if sess.ImportSnapshot == "" {
			from, what = "base", "The whole session against its start"
		}
		v.Diff = s.diff(r, c, id, from, "live", what)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	return RenderSession(w, v)
}

// diff renders a session diff.
func (s *Server) diff(r *http.Request, c *client.Client, id, from, to, title string) DiffView {
	v := DiffView{Title: title}
	df, err := c.SessionDiff(r.Context(), id, client.DiffQuery{From: from, To: to, Text: true})
	if err != nil {
		v.Error = apiError(err).Message
		return v
	}
	v.Summary = fmt.Sprintf("%d added, %d modified, %d deleted", df.Added, df.Modified, df.Deleted)
	if len(df.Entries) == 0 {
		v.Summary = "no changes"
	}
	rows := 0
	for _, e := range df.Entries {
		f := FileView{Path: e.Path, Change: e.Change, Kind: e.Kind, Notes: notes(e)}
		if e.Text != "" && rows < maxRows {
			if fds := ParseUnified(e.Text); len(fds) > 0 {
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

// notes says in words what a diff entry changed besides its lines.
func notes(e api.DiffEntry) []string {
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
		n = append(n, fmt.Sprintf("binary or large content: %s → %s", HumanBytes(e.OldSize), HumanBytes(e.NewSize)))
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

// snapshotDiff is a snapshot against the one before it (its parent, or
// the session's start).
func (s *Server) snapshotDiff(r *http.Request, c *client.Client, id, ref string, snaps []api.Snapshot) DiffView {
	var snap *api.Snapshot
	for i := range snaps {
		if strings.HasPrefix(snaps[i].ID, ref) {
			snap = &snaps[i]
			break
		}
	}
	if snap == nil {
		return DiffView{Title: "Snapshot " + ref, Error: "no snapshot " + ref + " of this session"}
	}
	title := "Snapshot " + shortID(snap.ID)
	if snap.Label != "" {
		title += " (" + snap.Label + ")"
	}
	if snap.Parent != "" {
		v := s.diff(r, c, id, snap.Parent, snap.ID, title+" against the state before it")
		if v.Error == "" {
			return v
		}
	}
	return s.diff(r, c, id, "base", snap.ID, title+" against the session's start")
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// callDiff is a tool call: the diffs its result carries (edit_file's,
// apply_patch's per file), its parameters and its result.
func (s *Server) callDiff(r *http.Request, c *client.Client, id string, n uint64) DiffView {
	v := DiffView{Title: fmt.Sprintf("Call #%d", n)}
	list, err := c.Calls(r.Context(), id, n-1, 1)
	if err != nil {
		v.Error = apiError(err).Message
		return v
	}
	if len(list.Calls) == 0 || list.Calls[0].N != n {
		v.Error = fmt.Sprintf("call #%d is not in the session's call log (the log keeps its latest 4-8 MiB)", n)
		return v
	}
	cl := list.Calls[0]
	v.Title = fmt.Sprintf("Call #%d: %s (%s)", cl.N, cl.Tool, cl.Status)
	params, result := []byte(cl.Params), []byte(cl.Result)
	if cl.ParamsRef != "" {
		params, _ = readBlob(r, c, cl.ParamsRef)
	}
	if cl.ResultRef != "" {
		result, _ = readBlob(r, c, cl.ResultRef)
	}
	v.Params, v.Result = pretty(params), pretty(result)
	for _, t := range diffsIn(result) {
		for _, fd := range ParseUnified(t) {
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
			v.Files = append(v.Files, FileView{Path: path, Change: change, Kind: "file", Rows: fd.Rows, Added: fd.Added, Delete: fd.Deleted})
		}
	}
	switch {
	case len(v.Files) > 0:
	case cl.Seq != cl.SeqBefore:
		v.Summary = fmt.Sprintf("This call changed the session (journal %d → %d); its result carries no diff. Snapshots around it show what changed.", cl.SeqBefore, cl.Seq)
	default:
		v.Summary = "This call changed nothing."
	}
	return v
}

// diffsIn returns the strings under a "diff" key anywhere in a tool's
// result (a receipt in its contract's shape), in document order — the
// keys of each object in sorted order. It reads the JSON token by token:
// a result is the tool's, not one of the API's types.
func diffsIn(result []byte) []string {
	var doc json.RawMessage
	if json.Unmarshal(result, &doc) != nil {
		return nil
	}
	return collectDiffs(doc, nil)
}

// collectDiffs appends the "diff" strings of one JSON value to out.
func collectDiffs(raw json.RawMessage, out []string) []string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return out
	}
	switch raw[0] {
	case '{':
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return out
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			var s string
			if k == "diff" && json.Unmarshal(obj[k], &s) == nil {
				if s != "" {
					out = append(out, s)
				}
				continue
			}
			out = collectDiffs(obj[k], out)
		}
	case '[':
		var arr []json.RawMessage
		if json.Unmarshal(raw, &arr) != nil {
			return out
		}
		for _, e := range arr {
			out = collectDiffs(e, out)
		}
	}
	return out
}

// pretty indents JSON, cut at 64 KiB.
func pretty(b []byte) string {
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

// readBlob reads up to maxBlobBytes of a blob the viewer may read.
func readBlob(r *http.Request, c *client.Client, ref string) ([]byte, error) {
	rc, _, err := c.GetBlob(r.Context(), ref)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, maxBlobBytes))
}

// log reads the first page of the session's history into rows, newest
// first, at most maxCalls.
func (s *Server) log(r *http.Request, c *client.Client, id string) ([]LogRow, string) {
	page, err := c.Log(r.Context(), id, client.LogOptions{})
	if err != nil {
		return nil, apiError(err).Message
	}
	var rows []LogRow
	for i := len(page.Entries) - 1; i >= 0 && len(rows) < maxCalls; i-- {
		e := page.Entries[i]
		row := LogRow{Time: e.Time.Format(time.RFC3339Nano), What: firstOf(e.Tool, e.Source, e.Kind),
			Status: e.Status, Summary: e.Summary, Paths: e.Paths}
		if e.Call != 0 {
			row.Ref = strconv.FormatUint(e.Call, 10)
		}
		rows = append(rows, row)
	}
	return rows, ""
}

// firstOf returns the first of ss that is not "".
func firstOf(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
