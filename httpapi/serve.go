package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"

	"github.com/vfsd/vfsd/internal/loopback"
	"github.com/vfsd/vfsd/internal/unixsock"
)

// maxHeaderBytes bounds a request's headers: tokens are short, and no
// route takes anything large in a header.
const maxHeaderBytes = 64 << 10

// Serve serves the API on the daemon's Unix socket and, with
// Config.Listen, on TCP, runs the daemon's janitor that closes expired
// sessions, and returns when ctx ends — after a graceful shutdown: requests in flight finish (for up to
// Config.ShutdownTimeout), event streams end, FUSE mounts are unmounted,
// sessions closed and everything flushed (Close). It returns nil after a
// shutdown ctx asked for, or the error that stopped it.
func (s *Server) Serve(ctx context.Context) error {
	d := s.d
	defer d.Close()
	unixLn, err := unixsock.Listen(s.cfg.Socket, "--socket")
	if err != nil {
		return err
	}
	defer os.Remove(s.cfg.Socket)
	socketSrv := s.httpServer()
	socketSrv.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
		return context.WithValue(ctx, viaSocketKey{}, true)
	}
	servers := []*http.Server{socketSrv}
	listeners := []net.Listener{s.limitListener(unixLn)}
	if s.cfg.Listen != "" {
		tcpLns, err := s.listenTCP()
		if err != nil {
			unixLn.Close()
			return err
		}
		s.tcpAddr = tcpLns[0].Addr().String()
		for _, ln := range tcpLns {
			listeners = append(listeners, s.limitListener(ln))
			servers = append(servers, s.httpServer())
		}
	}
	errc := make(chan error, len(servers))
	for i, srv := range servers {
		go func() {
			if err := srv.Serve(listeners[i]); !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
	}
	s.log.Info("vfsd serving", "socket", s.cfg.Socket, "tcp", s.tcpAddr, "data_dir", s.cfg.DataDir, "sessions", d.Sessions())
	if s.tcpAddr != "" && s.review.PortError() == nil {
		s.log.Info("review page", "port", s.tcpAddr, "login", "run vfsd ui for its address and a one-time login")
	}
	close(s.ready)

	janitorCtx, stopJanitor := context.WithCancel(ctx)
	var janitor sync.WaitGroup
	janitor.Go(func() { d.RunJanitor(janitorCtx) })

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
		serveErr = fmt.Errorf("serve: %w", serveErr)
	}
	s.log.Info("vfsd stopping")
	stopJanitor()
	janitor.Wait()
	d.Stop()
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, srv := range servers {
		wg.Go(func() {
			if err := srv.Shutdown(sctx); err != nil {
				s.log.Warn("requests still running at the shutdown timeout were cut off", "err", err)
				srv.Close()
			}
		})
	}
	wg.Wait()
	if err := d.Close(); err != nil {
		return errors.Join(serveErr, fmt.Errorf("shut down: %w", err))
	}
	s.log.Info("vfsd stopped")
	return serveErr
}

// listenTCP listens on Config.Listen and, for the review page, on the
// same port of the other loopback addresses browsers try for its
// *.localhost name (package loopback). When another program holds one of
// those, the daemon serves its API all the same, but not the page there
// (ui.Server.SetPortError): that program would receive the page's requests.
func (s *Server) listenTCP() ([]net.Listener, error) {
	lns, err := loopback.Listen(s.cfg.Listen)
	var taken *loopback.TakenError
	if errors.As(err, &taken) {
		s.review.SetPortError(err)
		s.log.Warn("the review page is not offered on the TCP port", "err", err)
		var ln net.Listener
		if ln, err = net.Listen("tcp", s.cfg.Listen); err == nil {
			lns = []net.Listener{ln}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", s.cfg.Listen, err)
	}
	return lns, nil
}
