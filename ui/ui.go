// Package ui renders vfsd's review page (served by the daemon at /ui/):
// the session list, a session's timeline, side-by-side diffs and the
// buttons that act on a session. Pages are rendered on the server with
// html/template (every file name and line of content is escaped as text);
// the page's only script is static/app.js, embedded in the binary, which
// reads what it needs from data- attributes and calls the HTTP API. No
// inline script or style, no external resource: the Content-Security-Policy
// (CSP) forbids them all.
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
	"age":   func(t time.Time) string { return Age(time.Since(t)) },
	"time":  func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
	"short": func(id string) string {
		if len(id) > 12 {
			return id[:12]
		}
		return id
	},
}).ParseFS(files, "templates/*.html"))

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
	Contract  string
	Folders   []string // "host_path → mount_path"
	CreatedAt time.Time
	ExpiresAt *time.Time
	Bytes     int64
	Files     int64
	Calls     uint64
	Dirty     int
}

// SessionView is one session's page, /ui/s/{id}.
type SessionView struct {
	Common
	Row SessionRow
	// Import and Base are the snapshots the session was staged from.
	Import, Base string
	// Calls are its latest tool calls, newest first; CallsNote says what
	// was left out.
	Calls     []CallRow
	CallsNote string
	// Log is the history route's entries (when the daemon has it).
	Log       []LogRow
	HasLog    bool
	LogError  string
	Snapshots []SnapRow
	// Diff is the diff shown: the session's, a call's or a snapshot's.
	Diff DiffView
	// CanApply, CanRewind and CanRebase say which buttons to show: apply
	// needs the admin and host folders; rewind and rebase need the
	// daemon's routes for them.
	CanApply, CanRewind, CanRebase bool
}

// CallRow is one tool call of the timeline.
type CallRow struct {
	N        uint64
	Time     time.Time
	Tool     string
	Status   string
	IsError  bool
	Summary  string
	Changed  bool // its journal position moved
	Selected bool
}

// LogRow is one entry of the history route's log.
type LogRow struct {
	Time    string
	What    string
	Status  string
	Summary string
	Paths   []string
	Ref     string // what rewind --to takes for it
}

// SnapRow is one snapshot of the session.
type SnapRow struct {
	ID        string
	Label     string
	CreatedAt time.Time
	Files     int64
	Bytes     int64
	Selected  bool
}

// DiffView is a diff laid out side by side.
type DiffView struct {
	// Title says what is compared ("the session against its import").
	Title string
	// Error is why there is no diff.
	Error string
	// Summary counts the changes.
	Summary string
	Files   []FileView
	// Params and Result are a call's, pretty-printed, when a call is
	// shown.
	Params, Result string
}

// FileView is one path of a diff.
type FileView struct {
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

// Age prints a duration as a person reads an age: 45s, 12m, 3h20m, 2d4h.
func Age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
}
