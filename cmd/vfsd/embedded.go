package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/vfsd/vfsd/client"
	"github.com/vfsd/vfsd/daemon"
	"github.com/vfsd/vfsd/httpapi"
)

// embeddedDaemon is the daemon run inside this process, on the default data
// directory and a private socket, for a verb that needs a daemon when none
// is running. What it creates stays in the data directory for the next
// `vfsd serve`.
type embeddedDaemon struct {
	dataDir string
	sockDir string // a private directory holding socket
	socket  string
	cancel  context.CancelFunc
	done    chan error
}

// reachDaemon returns a client of the daemon the flags name. When none
// answers and the flags name none in particular (no --socket, --addr or
// their environment variables), it starts one in this process, allowing
// roots, and returns it too; the caller stops it.
func reachDaemon(ctx context.Context, g *globalFlags, roots []string, log io.Writer) (*client.Client, *embeddedDaemon, error) {
	c, err := g.client()
	if err != nil {
		return nil, nil, usageError{err}
	}
	_, err = c.Health(ctx)
	var unreachable *client.UnreachableError
	if err == nil || !errors.As(err, &unreachable) || value(g.socket, envSocket) != "" || value(g.addr, envAddr) != "" {
		return c, nil, nil // a daemon answered, or the error is for the caller to report
	}
	c.Close()
	e, err := startEmbeddedDaemon(ctx, roots, log)
	if err != nil {
		return nil, nil, fmt.Errorf("no daemon is running, and starting one in this process failed: %w", err)
	}
	c, err = client.New(client.Options{Socket: e.socket})
	if err != nil {
		e.stop()
		return nil, nil, err
	}
	return c, e, nil
}

// hostAccess is what a verb needs of a daemon run inside the command when
// none is running: the host folders it may read and write, and whether it
// can work with one at all.
type hostAccess struct {
	// roots returns the host folders the command line names (session
	// create's --folder), which the daemon must allow.
	roots func(cmd *cobra.Command, args []string) ([]string, error)
	// session returns the session whose own host folders the verb reads
	// or writes (apply, reset), which the daemon must allow; "" for none.
	session func(args []string) string
	// live, when set and returning a reason, says why the verb needs a
	// daemon that outlives the command (a mount): it then fails rather
	// than run one inside.
	live func(args []string) string
}

var (
	hostAccessMu sync.Mutex
	hostAccesses = map[*cobra.Command]*hostAccess{}
)

// withHostAccess records what cmd needs of a daemon run inside it.
func withHostAccess(cmd *cobra.Command, a hostAccess) *cobra.Command {
	hostAccessMu.Lock()
	defer hostAccessMu.Unlock()
	hostAccesses[cmd] = &a
	return cmd
}

// sessionHost marks cmd as reading or writing the host folders of the
// session named by its argument i (apply, reset, rebase): a daemon run
// inside the command allows them.
func sessionHost(cmd *cobra.Command, i int) *cobra.Command {
	return withHostAccess(cmd, hostAccess{session: func(args []string) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}})
}

// hostAccessOf returns what cmd recorded, or nothing.
func hostAccessOf(cmd *cobra.Command) hostAccess {
	hostAccessMu.Lock()
	defer hostAccessMu.Unlock()
	if a := hostAccesses[cmd]; a != nil {
		return *a
	}
	return hostAccess{}
}

// connect returns a client of the daemon for cmd, and a function that
// releases it. When no daemon answers and the flags name none, it runs one
// inside the command on the default data directory (what it does stays
// there for the next vfsd serve), allowing the host folders cmd needs.
func connect(cmd *cobra.Command, g *globalFlags, args []string) (*client.Client, func(), error) {
	ctx := cmd.Context()
	a := hostAccessOf(cmd)
	var roots []string
	if a.roots != nil {
		var err error
		if roots, err = a.roots(cmd, args); err != nil {
			return nil, nil, err
		}
	}
	c, e, err := reachDaemon(ctx, g, roots, cmd.ErrOrStderr())
	if err != nil {
		return nil, nil, err
	}
	if e == nil {
		return c, c.Close, nil
	}
	if a.live != nil {
		if why := a.live(args); why != "" {
			c.Close()
			stopEmbedded(cmd, e)
			return nil, nil, fmt.Errorf("no daemon is running, and %s needs one that keeps running (%s): start it with %s, then try again; or run a command on a mounted session with vfsd run --session SESSION -- CMD", cmd.CommandPath(), why, serveHint(e.dataDir, roots))
		}
	}
	if a.session != nil {
		if id := a.session(args); id != "" {
			more, err := sessionRoots(ctx, c, id, roots)
			if err == nil && len(more) > 0 {
				// The session's host folders are known only now: run the
				// daemon again, allowing them.
				c.Close()
				stopEmbedded(cmd, e)
				roots = append(roots, more...)
				if e, err = startEmbeddedDaemon(ctx, roots, cmd.ErrOrStderr()); err != nil {
					return nil, nil, fmt.Errorf("no daemon is running, and starting one in this process failed: %w", err)
				}
				if c, err = client.New(client.Options{Socket: e.socket}); err != nil {
					stopEmbedded(cmd, e)
					return nil, nil, err
				}
			}
		}
	}
	embeddedMu.Lock()
	embeddedCmds[cmd] = e
	embeddedMu.Unlock()
	return c, func() {
		c.Close()
		stopEmbedded(cmd, e)
		embeddedMu.Lock()
		delete(embeddedCmds, cmd)
		embeddedMu.Unlock()
	}, nil
}

var (
	embeddedMu   sync.Mutex
	embeddedCmds = map[*cobra.Command]*embeddedDaemon{}
)

// embeddedOf returns the daemon connect runs inside cmd, or nil when cmd
// talks to a running daemon.
func embeddedOf(cmd *cobra.Command) *embeddedDaemon {
	embeddedMu.Lock()
	defer embeddedMu.Unlock()
	return embeddedCmds[cmd]
}

// sessionRoots returns the host folders of session id that roots do not
// cover yet. A session that does not exist has none: the verb itself then
// says so.
func sessionRoots(ctx context.Context, c *client.Client, id string, roots []string) ([]string, error) {
	s, err := c.Session(ctx, id)
	if err != nil {
		return nil, err
	}
	var more []string
	for _, m := range s.Mounts {
		if !coveredBy(m.HostPath, roots) && !coveredBy(m.HostPath, more) {
			more = append(more, m.HostPath)
		}
	}
	return more, nil
}

// coveredBy reports whether path is one of roots or beneath one.
func coveredBy(path string, roots []string) bool {
	for _, r := range roots {
		if rel, err := filepath.Rel(r, path); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// stopEmbedded stops a daemon run inside the command, saying so if that
// fails.
func stopEmbedded(cmd *cobra.Command, e *embeddedDaemon) {
	if err := e.stop(); err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "vfsd: stop the daemon run for this command: %v\n", err)
	}
}

// serveHint is the command that serves dataDir allowing roots, quoted for
// a POSIX shell.
func serveHint(dataDir string, roots []string) string {
	parts := []string{"vfsd serve"}
	if dataDir != defaultDataDir() {
		parts = append(parts, "--data-dir "+shellQuote(dataDir))
	}
	for _, r := range roots {
		parts = append(parts, "--allow-root "+shellQuote(r))
	}
	return strings.Join(parts, " ")
}

// shellQuote quotes s for a POSIX shell when it needs it: a word of safe
// characters stays as it is, anything else goes in single quotes.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.,/:@%+=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// startEmbeddedDaemon opens the default data directory and serves it on a
// private socket.
func startEmbeddedDaemon(ctx context.Context, roots []string, log io.Writer) (*embeddedDaemon, error) {
	e := &embeddedDaemon{dataDir: defaultDataDir(), done: make(chan error, 1)}
	var err error
	if e.sockDir, err = os.MkdirTemp("", "vfsd-embedded-"); err != nil {
		return nil, err
	}
	e.socket = filepath.Join(e.sockDir, "d.sock")
	d, err := httpapi.Open(ctx, daemon.Config{
		DataDir: e.dataDir, Socket: e.socket, AllowRoots: roots,
		PrivatePaths: []string{e.sockDir}, // vfsd run hides it from its command, with the data dir
		// The command's daemon leaves the mounts a vfsd serve recorded down:
		// they would last no longer than the command.
		NoRemount: true,
		Logger:    slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Version:   version(),
	})
	if err != nil {
		os.RemoveAll(e.sockDir)
		return nil, err
	}
	serveCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	e.cancel = cancel
	go func() { e.done <- d.Serve(serveCtx) }()
	select {
	case <-d.Ready():
		return e, nil
	case err := <-e.done:
		cancel()
		os.RemoveAll(e.sockDir)
		return nil, err
	case <-time.After(30 * time.Second):
		cancel()
		os.RemoveAll(e.sockDir)
		return nil, errors.New("the daemon did not start within 30s")
	}
}

// stop shuts the daemon down gracefully: its sessions are flushed and kept.
func (e *embeddedDaemon) stop() error {
	e.cancel()
	err := <-e.done
	os.RemoveAll(e.sockDir)
	return err
}
