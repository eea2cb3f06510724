//go:build unix

package s3server

import (
	"errors"
	"syscall"
)

// Pause stops the server's process (SIGSTOP) without closing its port: the
// kernel still accepts connections, and nothing answers them. This is a
// remote that is slow beyond any deadline, not one that is down (Stop).
// Resume lets it go on.
func (s *Server) Pause() error { return s.signal(syscall.SIGSTOP) }

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() error { return s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return errors.New("s3 server: not running")
	}
	return s.cmd.Process.Signal(sig)
}
