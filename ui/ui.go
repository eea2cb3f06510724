// Package ui renders vfsd's review page (served by the daemon at /ui/):
// the session list, a session's timeline (its history log), diffs (side by
// side on wide screens, unified on narrow ones) and the buttons that act
// on a session. Pages are rendered on the server with html/template (every
// file name and line of content is escaped as text); the page's only
// script is static/app.js, embedded in the binary, which reads what it
// needs from data- attributes, calls the HTTP API, and follows the
// session's event stream to swap in the timeline the server renders again.
// No inline script or style, no external resource: the
// Content-Security-Policy (CSP) forbids them all.
package ui

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed templates/*.html static/*
var files embed.FS

// CSP is the Content-Security-Policy of every page and asset: the page's
// own script and style only, API calls to its own origin, no frames, no
// plugins, no inline script or style, no base or form redirection.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

var tmpl = template.Must(template.New("").Funcs(template.FuncMap{
	"bytes": HumanBytes,
	"ago":   func(t time.Time) string { return Ago(time.Now(), t) },
	"time":  func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	"iso":   func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) },
	"short": ShortID,
	"add":   func(a, b int) int { return a + b },
}).ParseFS(files, "templates/*.html"))

// ShortID shortens a long hexadecimal ID (a snapshot's, a generated
// session's) to its first 12 digits, as the CLI accepts; other IDs (a
// name a session was given) are left whole.
func ShortID(id string) string {
	if len(id) > 16 && strings.Trim(strings.ToLower(id), "0123456789abcdef") == "" {
		return id[:12]
	}
	return id
}

// SecurityHeaders sets the headers every UI response carries: the CSP, no
// MIME sniffing, no framing, no referrer (a login URL carries a one-time
// code), and no caching of pages that show a session's content.
func SecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

// Common is what every page's frame shows.
type Common struct {
	// Title is the page's title.
	Title string
	// CSRF is the token the page's script sends with every request that
	// changes something (header Vfsd-CSRF); "" where none is needed (the
	// daemon's socket).
	CSRF string
	// Version is the daemon's version.
	Version string
	// Admin says the viewer is the admin (else one session's reviewer).
	Admin bool
	// Session is the session a session-scoped viewer reaches.
	Session string
}

// SessionsView is the session list, /ui/.
type SessionsView struct {
	Common
	Sessions []SessionRow
}

// SessionRow is one session in the list.
type SessionRow struct {
	ID        string
	Label     string
	Contract  string
	Folders   []string // "host_path → mount_path"
	Mounted   []string // "DIR (backend)": where the session is mounted
	CreatedAt time.Time
	ExpiresAt *time.Time
	Bytes     int64
	Files     int64
	Calls     uint64
	Dirty     int
	Seq       uint64
}

// SessionView is one session's page, /ui/s/{id}.
type SessionView struct {
	Common
	Row SessionRow
	// Import and Base are the snapshots the session was staged from.
	Import, Base string
	// Timeline is the session's history (GET /v1/sessions/{id}/log),
	// newest first, at most maxEntries of it: Earlier and Later are the
	// query strings of the pages around it ("" for none), Note says what
	// the window holds.
	Timeline []Entry
	Note     string
	Earlier  string
	Later    string
	// LogError is why the history could not be read.
	LogError string
	// WholeSelected says the diff shown is the whole session's (the page's
	// default), which live updates mark out of date.
	WholeSelected bool
	// Query is the page's query string, for its live part.
	Query string
	// Diff is the diff shown: the session's, a step's or a snapshot's.
	Diff DiffView
	// CanApply, CanRewind and CanRebase say which buttons to show: apply
	// and rebase need the admin and host folders.
	CanApply, CanRewind, CanRebase bool
}

// Entry is one step of a session's timeline: a tool call, a run of
// changes through a mount, or a session operation (snapshot, restore,
// rewind, other changes).
type Entry struct {
	// Index is the entry's offset in the log; Href shows its diff.
	Index int
	Href  string
	Kind  string // call, mount, session
	// Op is what the step was: the tool of a call; snapshot, restore,
	// rewind for those operations; "" for a mount run or other changes.
	Op        string
	Title     string
	Source    string
	Time      time.Time
	Status    string
	IsError   bool
	Summary   string
	Paths     []string
	PathsMore int
	SeqBefore uint64
	Seq       uint64
	Call      uint64
	// Snapshot and Label are a snapshot or restore step's snapshot.
	Snapshot string
	Label    string
	// Changed says the step changed the session (Seq > SeqBefore).
	Changed  bool
	Selected bool
	// Rewind is what a rewind button for this step sends ("" none):
	// RewindKey is call, seq or snapshot, RewindValue its value,
	// RewindText the button's words.
	RewindKey, RewindValue, RewindText string
}

// DiffView is a diff laid out side by side (unified on narrow screens).
type DiffView struct {
	// Title says what is compared ("the session against its import").
	Title string
	// Error is why there is no diff.
	Error string
	// Summary counts the changes.
	Summary string
	Files   []FileView
	// Tree is Files as a tree of folders, for jumping to a file.
	Tree []*TreeNode
	// More counts the files not shown (past maxFiles).
	More int
	// Params and Result are a call's, pretty-printed, when a call is
	// shown.
	Params, Result string
}

// TreeNode is a folder (Children) or a file (File) of a diff's tree.
type TreeNode struct {
	Name     string
	File     *FileView
	Children []*TreeNode
}

// FileView is one path of a diff.
type FileView struct {
	// Anchor is the file's id in the page: the tree's links jump to it.
	Anchor string
	Path   string
	Change string // added, modified, deleted
	Kind   string
	Notes  []string // mode, owner, target, binary ... changes
	Rows   []Row
	Added  int
	Delete int
}

// RenderSessions writes the session list.
func RenderSessions(w io.Writer, v *SessionsView) error { return render(w, "sessions", v) }

// RenderSession writes a session's page.
func RenderSession(w io.Writer, v *SessionView) error { return render(w, "session", v) }

// RenderLive writes the parts of a session's page that live updates
// replace: its facts and its timeline.
func RenderLive(w io.Writer, v *SessionView) error { return render(w, "live", v) }

// Message is a page with only a message: the login page, an error.
type Message struct {
	Common
	Heading string
	Text    string
	// Command is a command line to show (how to get a login URL).
	Command string
	// Next is a link to follow ("" none); Refresh follows it at once.
	Next    string
	Refresh bool
}

// RenderMessage writes a page with only a message.
func RenderMessage(w io.Writer, v *Message) error { return render(w, "message", v) }

func render(w io.Writer, name string, v any) error {
	var buf bytes.Buffer
	if err := tmpl.ExecuteTemplate(&buf, name, v); err != nil {
		return fmt.Errorf("ui: render %s: %w", name, err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// Static serves the embedded script and style sheet under prefix.
func Static(prefix string) http.Handler {
	sub, _ := fs.Sub(files, "static")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, prefix)
		b, err := fs.ReadFile(sub, path.Clean(name))
		if err != nil || strings.Contains(name, "/") {
			http.NotFound(w, r)
			return
		}
		SecurityHeaders(w.Header())
		w.Header().Set("Cache-Control", "no-cache")
		switch path.Ext(name) {
		case ".js":
			w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		case ".css":
			w.Header().Set("Content-Type", "text/css; charset=utf-8")
		default:
			w.Header().Set("Content-Type", "application/octet-stream")
		}
		w.Write(b)
	})
}

// HumanBytes prints a size as 1.5 MiB.
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// Ago says when t was, seen at now, as a person says it: "just now",
// "40 s ago", "3 min ago", "5 h ago", "2 days ago", or "in 20 h" for a
// time to come; a date past two weeks. app.js keeps the page's times
// fresh by the same rules (its ago).
func Ago(now, t time.Time) string {
	d := now.Sub(t)
	future := d < 0
	if future {
		d = -d
	}
	var s string
	switch {
	case d < 10*time.Second:
		if future {
			return "in a moment"
		}
		return "just now"
	case d < time.Minute:
		s = fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		s = fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		s = fmt.Sprintf("%d h", int(d.Hours()))
	case d < 14*24*time.Hour:
		s = fmt.Sprintf("%d days", int(d.Hours())/24)
	default:
		return t.UTC().Format("2006-01-02")
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}
