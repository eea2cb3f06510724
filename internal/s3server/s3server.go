// Package s3server runs an S3-compatible server (versitygw, posix backend)
// on loopback for tests and benchmarks: a random port, a directory of its
// own, fixed test credentials. It can be stopped and restarted on the same
// port and data, to test what a remote outage does.
package s3server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// Test credentials the server accepts.
const (
	AccessKey = "vfsdtest"
	SecretKey = "vfsdtestsecret"
)

// Find returns the versitygw binary: $VFSD_VERSITYGW, else versitygw on
// the PATH or in $GOPATH/bin. Its error says how to install one.
func Find() (string, error) {
	if p := os.Getenv("VFSD_VERSITYGW"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		if home, err := os.UserHomeDir(); err == nil {
			gopath = filepath.Join(home, "go")
		}
	}
	if p := filepath.Join(gopath, "bin", "versitygw"); gopath != "" {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no S3 server: install one with 'go install github.com/versity/versitygw/cmd/versitygw@v1.8.0' or set VFSD_VERSITYGW, or give --remote s3://...")
}

// Server is a running versitygw.
type Server struct {
	Bin, Dir, Addr string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// Start runs bin over a new directory under dir on a free loopback port,
// and waits until it answers.
func Start(ctx context.Context, bin, dir string) (*Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("s3 server: pick a port: %w", err)
	}
	addr := l.Addr().String()
	l.Close()
	s := &Server{Bin: bin, Dir: filepath.Join(dir, "s3data"), Addr: addr}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("s3 server: %w", err)
	}
	return s, s.Restart(ctx)
}

// Restart starts the server again (after Stop) on the same port and data.
func (s *Server) Restart(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("s3 server: already running")
	}
	cmd := exec.Command(s.Bin, "--port", s.Addr, "--quiet", "posix", s.Dir)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY_ID="+AccessKey, "ROOT_SECRET_ACCESS_KEY="+SecretKey)
	log, err := os.OpenFile(s.Dir+".log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("s3 server: %w", err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("s3 server: start %s: %w", s.Bin, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); log.Close(); close(done) }()
	s.cmd, s.done = cmd, done
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.Addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-done:
			s.cmd = nil
			b, _ := os.ReadFile(s.Dir + ".log")
			return fmt.Errorf("s3 server exited at start: %s", b)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return errors.New("s3 server did not listen within 30s")
		}
	}
}

// Stop kills the server (SIGKILL: an outage, not a shutdown) and waits
// for it to exit.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// URL returns the s3:// URL of bucket/prefix on the server (the bucket
// created on first use).
func (s *Server) URL(bucket, prefix string) string {
	u := "s3://" + bucket
	if prefix != "" {
		u += "/" + prefix
	}
	return u + "?endpoint=" + s.Addr + "&insecure=1&create=1"
}

// Env is the environment a client of the server needs: its credentials.
func (s *Server) Env() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + AccessKey, "AWS_SECRET_ACCESS_KEY=" + SecretKey, "AWS_REGION=us-east-1"}
}

// Port returns the server's port.
func (s *Server) Port() int {
	_, p, _ := net.SplitHostPort(s.Addr)
	n, _ := strconv.Atoi(p)
	return n
}
