package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/vfsd/vfsd/client"
	"github.com/vfsd/vfsd/daemon"
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

// startEmbeddedDaemon opens the default data directory and serves it on a
// private socket.
func startEmbeddedDaemon(ctx context.Context, roots []string, log io.Writer) (*embeddedDaemon, error) {
	e := &embeddedDaemon{dataDir: defaultDataDir(), done: make(chan error, 1)}
	var err error
	if e.sockDir, err = os.MkdirTemp("", "vfsd-embedded-"); err != nil {
		return nil, err
	}
	e.socket = filepath.Join(e.sockDir, "d.sock")
	d, err := daemon.New(ctx, daemon.Config{
		DataDir: e.dataDir, Socket: e.socket, AllowRoots: roots,
		PrivatePaths: []string{e.sockDir}, // vfsd run hides it from its command, with the data dir
		Logger:       slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Version:      version(),
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
