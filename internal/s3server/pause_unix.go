//go:build unix

package s3server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// Pause stops the server's process (SIGSTOP) without closing its port: the
// kernel still accepts connections, and nothing answers them. This is a
// remote that is slow beyond any deadline, not one that is down (Stop).
// Pause returns once every thread of the server has stopped (on Linux; a
// moment after the signal elsewhere), so no request sent after it is
// answered. Resume lets it go on.
func (s *Server) Pause() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return errors.New("s3 server: not running")
	}
	pid := s.cmd.Process.Pid
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("s3 server: pause: %w", err)
	}
	if runtime.GOOS != "linux" {
		time.Sleep(200 * time.Millisecond)
		return nil
	}
	deadline := time.Now().Add(10 * time.Second)
	for !allStopped(pid) {
		if time.Now().After(deadline) {
			return fmt.Errorf("s3 server: pause: process %d did not stop within 10s", pid)
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// allStopped reports whether every thread of process pid is stopped
// (state T in /proc/PID/task/TID/stat).
func allStopped(pid int) bool {
	stats, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if err != nil || len(stats) == 0 {
		return false
	}
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			return false
		}
		// "TID (comm) STATE ...": comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 || i+2 >= len(b) || b[i+2] != 'T' {
			return false
		}
	}
	return true
}

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return errors.New("s3 server: not running")
	}
	return s.cmd.Process.Signal(syscall.SIGCONT)
}
