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

// maxEntries is how many steps of a session's history its timeline
// lists at once (the latest, or a page of earlier ones).
const maxEntries = 200

// maxEntryPaths is how many of a step's paths the timeline names.
const maxEntryPaths = 5

// maxFiles bounds the files of one page's diff.
const maxFiles = 2000

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
	row := SessionRow{ID: s.ID, Label: s.Label, Contract: s.Contract, CreatedAt: s.CreatedAt, ExpiresAt: s.ExpiresAt,
		Bytes: s.Bytes, Files: s.Files, Calls: s.Calls, Dirty: s.Dirty, Seq: s.Seq}
	for _, m := range s.Mounts {
		mp := m.MountPath
		if mp == "" {
			mp = "/"
		}
		row.Folders = append(row.Folders, m.HostPath+" → "+mp)
	}
	for _, f := range s.FuseMounts {
		b := f.Backend
		if b == "" {
			b = "fuse"
		}
		row.Mounted = append(row.Mounted, f.Dir+" ("+b+")")
	}
	return row
}

// handleSession is a session's page: its facts, the buttons, its
// timeline and a diff — the whole session's (the default), a step's
// (?e=INDEX&at=SEQ_BEFORE, the log's entry), a snapshot's (?snap=ID) or
// a call's (?call=N, from its receipt).
func (s *Server) handleSession(w http.ResponseWriter, r *http.Request) error {
	viewer := s.viewer(w, r)
	if viewer == nil {
		return nil
	}
	v, err := s.sessionView(r, viewer, true)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	return RenderSession(w, v)
}

// handleLive is the part of a session's page that live updates replace
// (its facts and timeline), for the page's script to swap in when the
// session's event stream says it changed.
func (s *Server) handleLive(w http.ResponseWriter, r *http.Request) error {
	viewer := ViewerFrom(r.Context())
	if viewer == nil {
		return apiErr(api.CodeUnauthorized, "not signed in to the review page; reload it")
	}
	v, err := s.sessionView(r, viewer, false)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	return RenderLive(w, v)
}

// sessionView gathers a session's page; withDiff adds the diff shown.
func (s *Server) sessionView(r *http.Request, viewer *Viewer, withDiff bool) (*SessionView, error) {
	c, ctx, id := s.client(r), r.Context(), r.PathValue("id")
	sess, err := c.Session(ctx, id)
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	v := &SessionView{Common: s.common(r, "Session "+ShortID(sess.ID)), Row: sessionRow(*sess),
		Import: sess.ImportSnapshot, Base: sess.Base,
		CanApply:  viewer.Admin() && sess.ImportSnapshot != "" && len(sess.Mounts) > 0,
		CanRewind: true,
		CanRebase: viewer.Admin() && sess.ImportSnapshot != "" && len(sess.Mounts) > 0,
		Query:     r.URL.RawQuery,
	}
	if sess.Label != "" {
		v.Title += " · " + sess.Label
	}
	selCall, _ := strconv.ParseUint(q.Get("call"), 10, 64)
	selSnap := q.Get("snap")
	selIndex, selAt := -1, uint64(0)
	if e, err := strconv.Atoi(q.Get("e")); err == nil && e >= 0 {
		selIndex = e
		selAt, _ = strconv.ParseUint(q.Get("at"), 10, 64)
	}
	before, _ := strconv.Atoi(q.Get("before"))

	snaps, snapErr := c.SessionSnapshots(ctx, id)
	labels := map[string]string{}
	for _, sn := range snaps {
		labels[sn.ID] = sn.Label
	}
	s.timeline(r, c, v, sess, before, labels)
	for i := range v.Timeline {
		e := &v.Timeline[i]
		switch {
		case selIndex >= 0:
			e.Selected = e.Index == selIndex
		case selSnap != "":
			e.Selected = e.Op == "snapshot" && strings.HasPrefix(e.Snapshot, selSnap)
		case selCall != 0:
			e.Selected = e.Call == selCall
		}
	}
	if !withDiff {
		return v, nil
	}
	switch {
	case selIndex >= 0:
		v.Diff = s.stepDiff(r, c, id, selIndex, selAt)
	case selCall != 0:
		v.Diff = s.callDiff(r, c, id, selCall)
	case selSnap != "":
		if snapErr != nil {
			v.Diff = DiffView{Title: "Snapshot " + selSnap, Error: apiError(snapErr).Message}
		} else {
			v.Diff = s.snapshotDiff(r, c, id, selSnap, snaps)
		}
	default:
		v.WholeSelected = true
		from, what := "import", "Everything the session changed, against its import"
		if sess.ImportSnapshot == "" {
			from, what = "base", "Everything the session changed, against its start"
		}
		v.Diff = s.diff(r, c, id, from, "live", what)
	}
	v.Diff.Tree = fileTree(v.Diff.Files)
	return v, nil
}

// timeline reads a window of the session's history into v: the latest
// maxEntries steps, or (before > 0) the maxEntries before the before-th.
// The log lists oldest first from an offset and has no "latest" query: a
// session's steps are at least its calls, so the window starts at the
// calls' count less maxEntries, and a second read settles it when more
// steps (mount runs, snapshots) came after.
func (s *Server) timeline(r *http.Request, c *client.Client, v *SessionView, sess *api.Session, before int, labels map[string]string) {
	ctx, id := r.Context(), sess.ID
	var (
		page *api.Log
		off  int
		err  error
	)
	if before > 0 {
		off = max(0, before-maxEntries)
		page, err = c.Log(ctx, id, client.LogOptions{Offset: off, Limit: before - off})
	} else {
		off = max(0, int(sess.Calls)-maxEntries)
		page, err = c.Log(ctx, id, client.LogOptions{Offset: off})
		if err == nil && (page.Next != 0 || (off > 0 && len(page.Entries) < maxEntries && page.Total > len(page.Entries))) {
			off = max(0, page.Total-maxEntries)
			page, err = c.Log(ctx, id, client.LogOptions{Offset: off, Limit: maxEntries})
		}
	}
	if err != nil {
		v.LogError = "the history: " + apiError(err).Message
		return
	}
	entries := page.Entries
	if len(entries) > maxEntries {
		off += len(entries) - maxEntries
		entries = entries[len(entries)-maxEntries:]
	}
	end := off + len(entries)
	base := "/ui/s/" + url.PathEscape(id)
	if off > 0 {
		v.Earlier = base + "?before=" + strconv.Itoa(off)
	}
	if end < page.Total {
		v.Later = base
		if end+maxEntries < page.Total {
			v.Later += "?before=" + strconv.Itoa(end+maxEntries)
		}
		v.Note = fmt.Sprintf("steps %d to %d of %d", off+1, end, page.Total)
	} else if off > 0 {
		v.Note = fmt.Sprintf("the latest %d of %d steps", len(entries), page.Total)
	}
	for i := len(entries) - 1; i >= 0; i-- {
		e := entry(entries[i], off+i, page, labels)
		e.Href = base + e.Href
		if len(e.Paths) > maxEntryPaths {
			e.PathsMore += len(e.Paths) - maxEntryPaths
			e.Paths = e.Paths[:maxEntryPaths]
		}
		v.Timeline = append(v.Timeline, e)
	}
}

// entry is one log entry as the timeline shows it, with the rewind it
// offers: only where the rewind changes something — to before a step that
// changed the session (within the history kept), to a snapshot the
// session has moved on from.
func entry(le api.LogEntry, index int, page *api.Log, labels map[string]string) Entry {
	e := Entry{Index: index, Kind: le.Kind, Op: le.Tool, Source: le.Source, Time: le.Time, Status: le.Status,
		IsError: le.IsError, Summary: le.Summary, Paths: le.Paths, PathsMore: le.PathsMore,
		SeqBefore: le.SeqBefore, Seq: le.Seq, Call: le.Call, Snapshot: le.Snapshot, Label: labels[le.Snapshot],
		Changed: le.Seq > le.SeqBefore && le.Tool != "snapshot"}
	// A call's summary may go on with its diff: the timeline shows its
	// first line (the step's page shows the rest).
	e.Summary, _, _ = strings.Cut(e.Summary, "\n")
	e.Href = fmt.Sprintf("?e=%d&at=%d", index, le.SeqBefore)
	inHistory := le.SeqBefore >= page.HistoryStart
	switch {
	case le.Kind == api.LogCall:
		e.Title = fmt.Sprintf("#%d %s", le.Call, le.Tool)
	case le.Kind == api.LogMount:
		e.Title = "changes through " + le.Source
		e.Summary = fmt.Sprintf("%d change(s)", le.Events)
	case le.Tool == "snapshot":
		e.Title = "snapshot"
		e.Summary = ""
		e.Href = "?snap=" + url.QueryEscape(le.Snapshot)
	case le.Tool == "restore":
		e.Title = "restored a snapshot"
		e.Summary, e.Paths, e.PathsMore = "", nil, 0 // "." : all of it
	case le.Tool == "rewind":
		e.Title = "rewind"
		e.Paths, e.PathsMore = nil, 0
	default:
		e.Title = "changes outside tool calls"
		e.Summary = fmt.Sprintf("%d change(s): a rebase, a reset's set-up, …", le.Events)
	}
	switch {
	case le.Tool == "snapshot" && le.Snapshot != "" && le.Seq != page.Seq:
		e.RewindKey, e.RewindValue, e.RewindText = "snapshot", le.Snapshot, "Rewind to snapshot "+ShortID(le.Snapshot)
	case !e.Changed || !inHistory:
	case le.Tool == "rewind":
		e.RewindKey, e.RewindValue, e.RewindText = "seq", strconv.FormatUint(le.SeqBefore, 10), fmt.Sprintf("Undo this rewind (back to @%d)", le.SeqBefore)
	case le.Kind == api.LogCall:
		e.RewindKey, e.RewindValue, e.RewindText = "call", strconv.FormatUint(le.Call, 10), fmt.Sprintf("Rewind to before #%d", le.Call)
	default:
		e.RewindKey, e.RewindValue, e.RewindText = "seq", strconv.FormatUint(le.SeqBefore, 10), fmt.Sprintf("Rewind to before this (@%d)", le.SeqBefore)
	}
	return e
}

// stepDiff is one step of the history: the session before it against
// the session after it (the log's diff of the entry), with a call's
// parameters and result. at is the step's position before it, which the
// link was made with: the log's offsets move when its oldest calls are
// dropped, and a step that is no longer there is not shown in its place.
func (s *Server) stepDiff(r *http.Request, c *client.Client, id string, index int, at uint64) DiffView {
	v := DiffView{Title: "Step " + strconv.Itoa(index+1)}
	page, err := c.Log(r.Context(), id, client.LogOptions{Offset: index, Limit: 1, Patch: true})
	if err != nil {
		v.Error = apiError(err).Message
		return v
	}
	if len(page.Entries) == 0 || page.Entries[0].SeqBefore != at {
		v.Error = "the history moved on since this link was made (its oldest calls were dropped): pick the step again in the timeline"
		return v
	}
	le := page.Entries[0]
	e := entry(le, index, page, nil)
	v.Title = e.Title
	if le.Kind == api.LogCall {
		v.Title = fmt.Sprintf("Call %s (%s)", e.Title, le.Status)
		call := s.callDiff(r, c, id, le.Call)
		v.Params, v.Result = call.Params, call.Result
	}
	switch {
	case le.SeqBefore < page.HistoryStart:
		v.Summary = fmt.Sprintf("This step is older than the history the session keeps (from @%d): its changes cannot be shown.", page.HistoryStart)
		return v
	case le.Seq <= le.SeqBefore:
		v.Summary = "This step changed nothing."
		return v
	}
	v.Summary = fmt.Sprintf("@%d → @%d: %d path(s) changed", le.SeqBefore, le.Seq, len(le.Paths)+le.PathsMore)
	if le.DiffTruncated {
		v.Summary += "; the diff is cut at 256 KiB (vfsd log -p shows the same)"
	}
	rows := 0
	for _, fd := range ParseUnified(le.Diff) {
		f := fileOf(fd)
		if rows >= maxRows {
			f.Rows = nil
			f.Notes = append(f.Notes, "diff not shown: the page already shows its limit of lines; see vfsd log -p")
		}
		rows += len(f.Rows)
		v.add(f)
	}
	if len(v.Files) == 0 {
		for _, p := range le.Paths {
			v.add(FileView{Path: p, Change: "changed", Notes: []string{"no text diff (binary, a folder, metadata, or content the history does not hold)"}})
		}
	}
	return v
}

// fileOf is one file of a parsed unified diff.
func fileOf(fd FileDiff) FileView {
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
	return FileView{Path: path, Change: change, Kind: "file", Rows: fd.Rows, Added: fd.Added, Delete: fd.Deleted}
}

// add appends a file to the diff, up to maxFiles (past it, More counts
// them), giving it its anchor.
func (v *DiffView) add(f FileView) {
	if len(v.Files) >= maxFiles {
		v.More++
		return
	}
	f.Anchor = "f-" + strconv.Itoa(len(v.Files)+1)
	v.Files = append(v.Files, f)
}

// fileTree arranges a diff's files by folder, a folder holding one folder
// only shown as one ("src/pkg/").
func fileTree(files []FileView) []*TreeNode {
	root := &TreeNode{}
	for i := range files {
		n := root
		parts := strings.Split(strings.Trim(files[i].Path, "/"), "/")
		for _, dir := range parts[:len(parts)-1] {
			var next *TreeNode
			for _, ch := range n.Children {
				if ch.File == nil && ch.Name == dir+"/" {
					next = ch
					break
				}
			}
			if next == nil {
				next = &TreeNode{Name: dir + "/"}
				n.Children = append(n.Children, next)
			}
			n = next
		}
		n.Children = append(n.Children, &TreeNode{Name: parts[len(parts)-1], File: &files[i]})
	}
	var squash func(n *TreeNode)
	squash = func(n *TreeNode) {
		for _, ch := range n.Children {
			for ch.File == nil && len(ch.Children) == 1 && ch.Children[0].File == nil {
				ch.Name += ch.Children[0].Name
				ch.Children = ch.Children[0].Children
			}
			squash(ch)
		}
		sort.SliceStable(n.Children, func(i, j int) bool {
			a, b := n.Children[i], n.Children[j]
			if (a.File == nil) != (b.File == nil) {
				return a.File == nil // folders first
			}
			return a.Name < b.Name
		})
	}
	squash(root)
	return root.Children
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
		v.add(f)
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
	title := "Snapshot " + ShortID(snap.ID)
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
			v.add(fileOf(fd))
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
