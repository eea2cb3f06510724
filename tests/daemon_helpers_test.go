package tests

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/client"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// vfsdBinary builds cmd/vfsd once per test run (with the race detector when
// the tests have it) and returns its path.
func vfsdBinary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "vfsd-bin")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "vfsd")
		// -buildvcs=auto: the binary records its commit where git can
		// tell it (vfsd version shows it), whatever GOFLAGS says.
		args := []string{"build", "-buildvcs=auto", "-o", binPath}
		if raceEnabled {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, "github.com/vfsd/vfsd/cmd/vfsd")...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	require.NoError(t, binErr)
	return binPath
}

// daemonProc is a `vfsd serve` process.
type daemonProc struct {
	t       testing.TB
	bin     string
	dataDir string
	socket  string
	args    []string
	env     []string // more environment for the process (the fleet tests' VFSD_CRASH_AT)
	verb    string   // "serve" when empty; "csi" runs the CSI driver
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error

	mu  sync.Mutex
	log bytes.Buffer
}

// newDaemonDirs returns a data dir and a socket path short enough for
// Unix sockets.
func newDaemonDirs(t testing.TB) (dataDir, socket string) {
	dir, err := os.MkdirTemp("", "vfsd")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return t.TempDir(), filepath.Join(dir, "d.sock")
}

// startDaemon runs `vfsd serve` on dataDir and socket with extra args, and
// waits until it answers.
func startDaemon(t testing.TB, dataDir, socket string, args ...string) *daemonProc {
	t.Helper()
	p := &daemonProc{t: t, bin: vfsdBinary(t), dataDir: dataDir, socket: socket, args: args}
	p.start()
	t.Cleanup(p.kill)
	return p
}

func (p *daemonProc) start() {
	t := p.t
	t.Helper()
	verb := p.verb
	if verb == "" {
		verb = "serve"
	}
	args := append([]string{verb, "--data-dir", p.dataDir, "--socket", p.socket}, p.args...)
	p.cmd = exec.Command(p.bin, args...)
	p.cmd.Env = append(append(os.Environ(), "GORACE=halt_on_error=1"), p.env...)
	stderr, err := p.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	p.exited = make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.log.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
		}
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(p.logText(), `msg="vfsd serving"`) {
		select {
		case <-p.exited:
			t.Fatalf("vfsd serve exited: %v\n%s", p.waitErr, p.logText())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("vfsd serve did not start within 60s:\n%s", p.logText())
		}
	}
}

func (p *daemonProc) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

var tcpAddrPattern = regexp.MustCompile(`msg="vfsd serving".* tcp=(\S+)`)

// tcpAddr is the TCP address the daemon reported.
func (p *daemonProc) tcpAddr() string {
	m := tcpAddrPattern.FindAllStringSubmatch(p.logText(), -1)
	require.NotEmpty(p.t, m, "no TCP address in the log:\n%s", p.logText())
	return m[len(m)-1][1]
}

// adminToken is the token the daemon generated into its data dir.
func (p *daemonProc) adminToken() string {
	b, err := os.ReadFile(filepath.Join(p.dataDir, "token"))
	require.NoError(p.t, err)
	return strings.TrimSpace(string(b))
}

// client returns a client over the socket.
func (p *daemonProc) client() *client.Client {
	c, err := client.New(client.Options{Socket: p.socket})
	require.NoError(p.t, err)
	p.t.Cleanup(c.Close)
	return c
}

// kill9 kills the daemon with SIGKILL, as a crash would.
func (p *daemonProc) kill9() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// stop asks the daemon to shut down (SIGTERM) and requires a clean exit.
func (p *daemonProc) stop() {
	p.t.Helper()
	require.NoError(p.t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		p.kill9()
		p.t.Fatalf("vfsd serve did not stop within 30s of SIGTERM:\n%s", p.logText())
	}
	require.NoError(p.t, p.waitErr, p.logText())
	require.NotContains(p.t, p.logText(), "WARNING: DATA RACE")
}

// kill ends the process however it is, at cleanup, and fails the test on a
// data race in its log.
func (p *daemonProc) kill() {
	p.kill9()
	if strings.Contains(p.logText(), "WARNING: DATA RACE") {
		p.t.Errorf("the daemon reported a data race:\n%s", p.logText())
	}
}

// cli runs the vfsd binary as a client of p and returns stdout, stderr and
// the exit code.
func (p *daemonProc) cli(ctx context.Context, env []string, args ...string) (string, string, int) {
	p.t.Helper()
	cmd := exec.CommandContext(ctx, p.bin, args...)
	cmd.Env = append(append(os.Environ(), "VFSD_SOCKET="+p.socket), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(p.t, err)
	}
	return stdout.String(), stderr.String(), code
}
