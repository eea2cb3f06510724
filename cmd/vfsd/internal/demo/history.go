package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
	"github.com/vfsd/vfsd/daemon"
	"github.com/vfsd/vfsd/httpapi"
)

// history runs a daemon in this process on a private socket, creates a
// session of the host folder through the Go client, makes three tool
// calls, prints the log, rewinds and undoes the rewind, then changes the
// host and the session on different lines and rebases.
func (d *tour) history(host string) error {
	d.section("History through a daemon: log, rewind, undo the rewind, rebase on a changed host")
	// A Unix socket path is limited to ~108 bytes: keep it short, outside dir.
	sockDir, err := os.MkdirTemp("", "vfsd-demo-")
	if err != nil {
		return fmt.Errorf("demo: socket directory: %w", err)
	}
	defer os.RemoveAll(sockDir)
	socket := filepath.Join(sockDir, "d.sock")
	dm, err := httpapi.Open(d.ctx, daemon.Config{
		DataDir: filepath.Join(d.dir, "daemon"), Socket: socket,
		AllowRoots:   []string{filepath.Dir(host)},
		PrivatePaths: []string{sockDir},
		NoRemount:    true,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		Version:      "demo",
	})
	if err != nil {
		return fmt.Errorf("demo: start a daemon: %w", err)
	}
	serveCtx, cancel := context.WithCancel(context.WithoutCancel(d.ctx))
	done := make(chan error, 1)
	go func() { done <- dm.Serve(serveCtx) }()
	defer func() {
		cancel()
		<-done
	}()
	select {
	case <-dm.Ready():
	case err := <-done:
		done <- err // for the deferred wait
		return fmt.Errorf("demo: the daemon stopped at once: %w", err)
	case <-time.After(30 * time.Second):
		return errors.New("demo: the daemon did not start within 30s")
	}
	c, err := client.New(client.Options{Socket: socket})
	if err != nil {
		return err
	}
	defer c.Close()
	h := &historyTour{tour: d, c: c, id: "demo-history"}
	return h.run(host)
}

// historyTour is the history step's state.
type historyTour struct {
	*tour
	c  *client.Client
	id string
}

func (h *historyTour) run(host string) error {
	ctx := h.ctx
	created, err := h.c.CreateSession(ctx, api.CreateSessionRequest{ID: h.id, Mounts: []api.Mount{{
		HostPath: host, MountPath: "/", Exclude: []string{"node_modules/**", "build/**", ".env"},
	}}})
	if err != nil {
		return fmt.Errorf("demo: create a session: %w", err)
	}
	h.say("daemon on a private socket; session %s created from %s (%d files)", created.Session.ID, host, created.Import.Files)

	calls := []struct{ name, params string }{
		{"edit_file", `{"path":"README.md","old_string":"Says hello.","new_string":"Says hello to anyone."}`},
		{"edit_file", `{"path":"greet.go","old_string":"\"Hello, \"","new_string":"\"Hi, \""}`},
		{"write_file", `{"path":"docs/todo.md","inline_text":"- more greetings\n"}`},
	}
	for _, cl := range calls {
		r, err := h.c.CallTool(ctx, h.id, cl.name, json.RawMessage(cl.params))
		if err != nil {
			return fmt.Errorf("demo: %s: %w", cl.name, err)
		}
		if !r.OK() {
			return fmt.Errorf("demo: %s failed: %s", cl.name, r.JSON)
		}
	}
	l, err := h.c.LogAll(ctx, h.id, false)
	if err != nil {
		return fmt.Errorf("demo: log: %w", err)
	}
	h.say("vfsd log %s:", h.id)
	for _, e := range l.Entries {
		if e.Kind != api.LogCall {
			continue
		}
		h.say("    │ call %d  %-10s %-3s %s", e.Call, e.Tool, e.Status, strings.Join(e.Paths, ", "))
	}

	greet := func() (string, error) { return h.line("greet.go", "return ") }
	before, err := greet()
	if err != nil {
		return err
	}
	rw, err := h.c.Rewind(ctx, h.id, api.RewindRequest{Call: 2})
	if err != nil {
		return fmt.Errorf("demo: rewind: %w", err)
	}
	after, err := greet()
	if err != nil {
		return err
	}
	todo, err := h.exists("docs/todo.md")
	if err != nil {
		return err
	}
	h.say("rewind to before call 2 (@%d → @%d): greet.go had `%s`, has `%s`; docs/todo.md exists: %s", rw.From, rw.To, before, after, todo)
	from := rw.From
	undo, err := h.c.Rewind(ctx, h.id, api.RewindRequest{Seq: &from})
	if err != nil {
		return fmt.Errorf("demo: undo the rewind: %w", err)
	}
	again, err := greet()
	if err != nil {
		return err
	}
	if todo, err = h.exists("docs/todo.md"); err != nil {
		return err
	}
	h.say("rewind the rewind (to @%d): greet.go has `%s` again; docs/todo.md exists: %s", undo.To, again, todo)

	// The host's copy changes the comment (line 3); the session changed the
	// return (line 5): a rebase merges both.
	hostFile := filepath.Join(host, "greet.go")
	old, err := os.ReadFile(hostFile)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	changed := strings.Replace(string(old), "returns the greeting", "returns a friendly greeting", 1)
	if err := os.WriteFile(hostFile, []byte(changed), 0o644); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	h.say("meanwhile the host's greet.go changed its comment (line 3); the session changed line 5")
	rep, err := h.c.Rebase(ctx, h.id, api.RebaseRequest{})
	if err != nil {
		return fmt.Errorf("demo: rebase: %w", err)
	}
	h.say("vfsd session rebase %s:", h.id)
	for _, p := range rep.Merged {
		h.say("    │ merged  %s", p)
	}
	for _, cf := range rep.Conflicts {
		h.say("    │ conflict  %s: %s", cf.Path, cf.Reason)
	}
	h.say("    │ %d session changes kept, %d host changes taken, %d merged, %d conflicts", rep.KeptCount, rep.TakenCount, rep.MergedCount, len(rep.Conflicts))
	merged, err := h.read("greet.go")
	if err != nil {
		return err
	}
	h.say("greet.go in the session now:")
	for _, line := range strings.Split(strings.TrimRight(merged, "\n"), "\n") {
		h.say("    │ %s", line)
	}
	return nil
}

// read returns a text file of the session, through read_file.
func (h *historyTour) read(path string) (string, error) {
	r, err := h.c.CallTool(h.ctx, h.id, "read_file", json.RawMessage(fmt.Sprintf(`{"path":%q}`, path)))
	if err != nil {
		return "", fmt.Errorf("demo: read %s: %w", path, err)
	}
	var rec struct {
		InlineText *string `json:"inline_text"`
	}
	if err := json.Unmarshal(r.JSON, &rec); err != nil || !r.OK() || rec.InlineText == nil {
		return "", fmt.Errorf("demo: read %s: %s", path, r.JSON)
	}
	return *rec.InlineText, nil
}

// line returns the first line of a session file holding substr, trimmed.
func (h *historyTour) line(path, substr string) (string, error) {
	text, err := h.read(path)
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, substr) {
			return strings.TrimSpace(l), nil
		}
	}
	return "", fmt.Errorf("demo: %s holds no %q", path, substr)
}

// exists reports whether a session path exists ("yes" or "no").
func (h *historyTour) exists(path string) (string, error) {
	r, err := h.c.CallTool(h.ctx, h.id, "exists", json.RawMessage(fmt.Sprintf(`{"path":%q}`, path)))
	if err != nil {
		return "", fmt.Errorf("demo: exists %s: %w", path, err)
	}
	var rec struct {
		Exists bool `json:"exists"`
	}
	if err := json.Unmarshal(r.JSON, &rec); err != nil || !r.OK() {
		return "", fmt.Errorf("demo: exists %s: %s", path, r.JSON)
	}
	if rec.Exists {
		return "yes", nil
	}
	return "no", nil
}
