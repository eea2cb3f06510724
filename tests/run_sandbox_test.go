//go:build linux

package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/api"
)

// sandboxFixture is a daemon whose data directory and socket lie outside
// /tmp (so the sandbox's private /tmp does not hide them by chance), on
// TCP too, with a second session holding a secret, and the probe binary.
type sandboxFixture struct {
	p        *daemonProc
	base     string // holds data/, d.sock, the probe and escape targets; an allowed root
	project  string // the folder the runs stage
	probe    string
	tcp      string
	token    string
	escapeTo string // a host path outside /tmp and the workspace no run may create
}

var (
	probeOnce sync.Once
	probeBin  []byte
	probeErr  error
)

// newSandboxFixture starts the daemon and builds the probe.
func newSandboxFixture(t *testing.T) *sandboxFixture {
	t.Helper()
	if !fuseAvailable() {
		t.Skip("vfsd run needs FUSE: root and /dev/fuse")
	}
	base, err := os.MkdirTemp("/var/tmp", "vfsdsbx")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	f := &sandboxFixture{base: base, project: filepath.Join(base, "project"), probe: filepath.Join(base, "probe"),
		escapeTo: filepath.Join(base, "escaped")}
	require.NoError(t, os.MkdirAll(f.project, 0o755))
	writeFile(t, filepath.Join(f.project, "a.txt"), "a\n")

	probeOnce.Do(func() {
		out := filepath.Join(t.TempDir(), "probe")
		cmd := exec.Command("go", "build", "-o", out, "github.com/vfsd/vfsd/tests/sandboxprobe")
		if b, err := cmd.CombinedOutput(); err != nil {
			probeErr = errors.New(string(b))
			return
		}
		probeBin, probeErr = os.ReadFile(out)
	})
	require.NoError(t, probeErr)
	require.NoError(t, os.WriteFile(f.probe, probeBin, 0o755))

	f.p = startDaemon(t, filepath.Join(base, "data"), filepath.Join(base, "d.sock"),
		"--allow-root", base, "--listen", "127.0.0.1:0")
	f.tcp, f.token = f.p.tcpAddr(), f.p.adminToken()

	// Another session, with a secret the runs must not reach.
	other := filepath.Join(base, "other")
	require.NoError(t, os.MkdirAll(other, 0o755))
	writeFile(t, filepath.Join(other, "secret.txt"), "other session's secret\n")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = f.p.client().CreateSession(ctx, api.CreateSessionRequest{ID: "other", Mounts: []api.Mount{{HostPath: other, MountPath: "/"}}})
	require.NoError(t, err)
	return f
}

// runOpts tune one vfsd run.
type runOpts struct {
	env   []string
	stdin *os.File // also made vfsd's controlling terminal when it is one
	tty   bool
}

// run runs vfsd run with args and returns stdout, stderr and the status.
func (f *sandboxFixture) run(t *testing.T, o runOpts, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, f.p.bin, append([]string{"run"}, args...)...)
	cmd.Env = append(append(os.Environ(), "VFSD_SOCKET="+f.p.socket), o.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if o.stdin != nil {
		cmd.Stdin = o.stdin
	}
	if o.tty {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	}
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err, stderr.String())
	}
	return stdout.String(), stderr.String(), code
}

// sessions is the number of sessions the daemon has.
func (f *sandboxFixture) sessions(t *testing.T) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ss, err := f.p.client().Sessions(ctx)
	require.NoError(t, err)
	return len(ss)
}

// probes parses the probe's output: probe and argument → "ok" or the
// error.
func probes(out string) map[string]string {
	res := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(l, "PROBE ")
		if !ok {
			continue
		}
		if i := strings.LastIndex(rest, " ok"); i >= 0 && i == len(rest)-3 {
			res[rest[:i]] = "ok"
		} else if k, v, ok := strings.Cut(rest, " denied: "); ok {
			res[k] = v
		}
	}
	return res
}

// requireDenied requires that every probe named ran and was denied.
func requireDenied(t *testing.T, out string, names ...string) {
	t.Helper()
	got := probes(out)
	for _, n := range names {
		v, ok := got[n]
		require.True(t, ok, "probe %q did not run:\n%s", n, out)
		require.NotEqual(t, "ok", v, "probe %q succeeded: the sandbox let it through\n%s", n, out)
	}
}

// openPTY returns a pseudo-terminal's master and slave.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	require.NoError(t, unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetUint32(int(m.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	s, err := os.OpenFile("/dev/pts/"+itoa(int(n)), os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return m, s
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestRunSandboxHolds attacks the sandbox of vfsd run from inside, in both
// sandboxes: a root command must not remount or write the host, keep a
// capability, push keystrokes into the terminal, reach the daemon (its
// socket, its TCP port with a token, its data directory, another
// session's files), reach /proc/sys or the host's disks — and the daemon's
// environment variables are gone. It also checks --rw, --no-network,
// TMPDIR, --json and that the data directory is never staged.
func TestRunSandboxHolds(t *testing.T) {
	f := newSandboxFixture(t)
	for _, sandbox := range []string{"bwrap", "namespace"} {
		t.Run(sandbox, func(t *testing.T) {
			if sandbox == "bwrap" {
				if _, err := exec.LookPath("bwrap"); err != nil {
					t.Skip("bubblewrap is not installed (.ci/run installs it)")
				}
			}
			testSandboxAttacks(t, f, sandbox)
			testSandboxFlags(t, f, sandbox)
		})
	}
}

func testSandboxAttacks(t *testing.T, f *sandboxFixture, sandbox string) {
	data := f.p.dataDir
	_, slave := openPTY(t)
	hostTmp := filepath.Join(t.TempDir(), "foo")
	require.NoError(t, os.MkdirAll(hostTmp, 0o755))
	env := []string{"VFSD_ADDR=" + f.tcp, "VFSD_TOKEN=" + f.token, "VFSD_DATA_DIR=" + data, "TMPDIR=" + hostTmp}
	stdout, stderr, code := f.run(t, runOpts{env: env, stdin: slave, tty: true},
		"--sandbox", sandbox, "--dir", f.project, "--", f.probe,
		"umount", "/tmp",
		"remount-rw", "/",
		"write", f.escapeTo,
		"caps", "",
		"env", "",
		"tiocsti", "",
		"connect-unix", f.p.socket,
		"http-sessions", f.tcp,
		"read", data,
		"read", filepath.Join(data, "token"),
		"read", filepath.Join(data, "store"),
		"read", filepath.Join(data, "sessions"),
		"open-write", "/proc/sys/kernel/core_pattern",
		"open-write", "/proc/sysrq-trigger",
		"read", "/dev/vda",
		"ptrace-privileged", "",
		"mktemp", "",
		"connect-tcp", f.tcp,
	)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)

	requireDenied(t, stdout, "umount /tmp", "remount-rw /", "write "+f.escapeTo,
		"tiocsti ", "connect-unix "+f.p.socket, "http-sessions "+f.tcp,
		"read "+data, "read "+filepath.Join(data, "token"), "read "+filepath.Join(data, "store"),
		"read "+filepath.Join(data, "sessions"), "open-write /proc/sys/kernel/core_pattern",
		"open-write /proc/sysrq-trigger", "read /dev/vda", "ptrace-privileged ")
	require.NoFileExists(t, f.escapeTo, "the command wrote the host")

	// No capabilities at all.
	caps := 0
	for _, l := range strings.Split(stdout, "\n") {
		if rest, ok := strings.CutPrefix(l, "CAPS "); ok {
			caps++
			require.Regexp(t, `^Cap\w+: 0+$`, rest, stdout)
		}
	}
	require.Equal(t, 5, caps, stdout)

	// The daemon's variables are gone but the session's; TMPDIR works.
	require.Contains(t, stdout, "ENV VFSD_SESSION=")
	for _, v := range []string{"VFSD_TOKEN", "VFSD_ADDR", "VFSD_SOCKET", "VFSD_DATA_DIR"} {
		require.NotContains(t, stdout, "ENV "+v+"=", stdout)
	}
	require.Equal(t, "ok", probes(stdout)["mktemp "], stdout)
	// The network is there without --no-network.
	require.Equal(t, "ok", probes(stdout)["connect-tcp "+f.tcp], stdout)
	want := map[string]string{"bwrap": "vfsd: sandbox: bubblewrap", "namespace": "vfsd: sandbox: namespace"}[sandbox]
	require.Contains(t, stderr, want)
}

func testSandboxFlags(t *testing.T, f *sandboxFixture, sandbox string) {
	// --no-network cuts the network.
	stdout, stderr, code := f.run(t, runOpts{}, "--sandbox", sandbox, "--no-network", "--dir", f.project, "--",
		f.probe, "connect-tcp", f.tcp)
	require.Equal(t, 0, code, stderr)
	requireDenied(t, stdout, "connect-tcp "+f.tcp)

	// --rw makes a host path writable; a missing one is vfsd's failure
	// (125), before anything is staged.
	rw := filepath.Join(f.base, "rw-"+sandbox)
	require.NoError(t, os.MkdirAll(rw, 0o755))
	stdout, stderr, code = f.run(t, runOpts{}, "--sandbox", sandbox, "--rw", rw, "--dir", f.project, "--",
		f.probe, "write", filepath.Join(rw, "out.txt"))
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "ok", probes(stdout)["write "+filepath.Join(rw, "out.txt")], stdout)
	requireFile(t, filepath.Join(rw, "out.txt"), "escaped\n")
	before := f.sessions(t)
	_, stderr, code = f.run(t, runOpts{}, "--sandbox", sandbox, "--rw", filepath.Join(f.base, "missing"), "--dir", f.project, "--", "true")
	require.Equal(t, 125, code, stderr)
	require.Contains(t, stderr, "missing")
	require.Equal(t, before, f.sessions(t), "a failed run left a session behind")

	// A sandbox that fails after staging (it cannot bind /proc/PID into
	// its own /proc) is 125 too, and drops the session.
	_, stderr, code = f.run(t, runOpts{}, "--sandbox", sandbox, "--rw", "/proc/self", "--dir", f.project, "--", "true")
	require.Equal(t, 125, code, stderr)
	require.Contains(t, stderr, "did not run")
	require.Equal(t, before, f.sessions(t), "a failed run left a session behind")

	// A command that does not exist is 127, and leaves no session.
	_, stderr, code = f.run(t, runOpts{}, "--sandbox", sandbox, "--dir", f.project, "--", "no-such-command-vfsd")
	require.Equal(t, 127, code, stderr)
	require.Equal(t, before, f.sessions(t), "a failed run left a session behind")

	// --json: stdout is the report alone, whatever the command prints.
	stdout, stderr, code = f.run(t, runOpts{}, "--sandbox", sandbox, "--json", "--dir", f.project, "--",
		"sh", "-c", "echo printed; echo changed >> a.txt")
	require.Equal(t, 0, code, stderr)
	var res struct {
		Session  string   `json:"session"`
		ExitCode int      `json:"exit_code"`
		Diff     api.Diff `json:"diff"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &res), stdout)
	require.Len(t, res.Diff.Entries, 1)
	require.Contains(t, stderr, "printed")
	// --json-file: the report in a file, the streams as they are.
	report := filepath.Join(t.TempDir(), "report.json")
	stdout, stderr, code = f.run(t, runOpts{}, "--sandbox", sandbox, "--json-file", report, "--dir", f.project, "--",
		"sh", "-c", "echo printed; exit 3")
	require.Equal(t, 3, code, stderr)
	require.Contains(t, stdout, "printed")
	b, err := os.ReadFile(report)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &res), string(b))
	require.Equal(t, 3, res.ExitCode)

	// Run on a folder holding the daemon's data directory and socket: they
	// are not staged.
	stdout, stderr, code = f.run(t, runOpts{}, "--sandbox", sandbox, "--dir", f.base, "--",
		f.probe, "read", filepath.Join(f.base, "data"), "read", f.p.socket, "read", filepath.Join(f.base, "other/secret.txt"))
	require.Equal(t, 0, code, stderr)
	requireDenied(t, stdout, "read "+filepath.Join(f.base, "data"), "read "+f.p.socket)
	require.Equal(t, "ok", probes(stdout)["read "+filepath.Join(f.base, "other/secret.txt")], stdout)
}

// TestSessionRefusesDataDir: a session may not stage the daemon's data
// directory or anything inside it.
func TestSessionRefusesDataDir(t *testing.T) {
	dataDir, socket := newDaemonDirs(t)
	p := startDaemon(t, dataDir, socket, "--allow-root", filepath.Dir(dataDir))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, hp := range []string{dataDir, filepath.Join(dataDir, "store")} {
		_, err := p.client().CreateSession(ctx, api.CreateSessionRequest{Mounts: []api.Mount{{HostPath: hp, MountPath: "/"}}})
		require.Error(t, err, hp)
		require.Contains(t, err.Error(), "data", hp)
	}
	// The folder holding it stages without it, and says so.
	r, err := p.client().CreateSession(ctx, api.CreateSessionRequest{Mounts: []api.Mount{{HostPath: filepath.Dir(dataDir), MountPath: "/"}}})
	require.NoError(t, err)
	require.NotNil(t, r.Import)
	found := false
	for _, s := range r.Import.Skipped {
		if s.HostPath == dataDir {
			found = true
		}
	}
	require.True(t, found, "the data dir is not reported skipped: %+v", r.Import.Skipped)
}
