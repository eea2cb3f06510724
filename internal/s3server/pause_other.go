//go:build !unix

package s3server

import "errors"

// Pause is not available on this OS (it needs SIGSTOP).
func (s *Server) Pause() error { return errors.New("s3 server: pausing needs a Unix system") }

// Resume is not available on this OS (it needs SIGCONT).
func (s *Server) Resume() error { return errors.New("s3 server: pausing needs a Unix system") }
