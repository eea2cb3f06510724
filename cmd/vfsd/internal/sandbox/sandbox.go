//go:build linux

package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/vfsd/vfsd/internal/mountinfo"
)

// Sandbox kinds, as vfsd run's --sandbox names them.
const (
	Auto      = "auto"      // bwrap when installed, else namespace
	Bwrap     = "bwrap"     // bubblewrap
	Namespace = "namespace" // vfsd's own namespaces (root only)
)

// The guarantees both sandboxes give, said once for --help and the report:
// the host read-only but for the session and --rw paths, private /tmp,
// /dev and /proc, no capabilities, a new session (no controlling
// terminal), the daemon's files hidden, no network with --no-network.

// Spec is what runs in a sandbox: Argv in WorkDir, where the session
// (mounted at Mountpoint on the host) appears.
type Spec struct {
	Kind       string   // Bwrap or Namespace, resolved (see Resolve)
	UserNS     bool     // in a user namespace (root mapped to root)
	Bwrap      string   // bubblewrap's path (see Resolve)
	Mountpoint string   // the session's mount on the host
	WorkDir    string   // where the command sees it: the staged folder's own path
	Writable   []string // host paths the command may write: absolute, resolved, existing (see ResolveWritable)
	NoNetwork  bool     // no network
	Env        []string // the command's environment (see Env)
	Argv       []string // the command and its arguments
	masks      []string // host paths the command must not see (the daemon's files, host sockets): SetMasks
}

// UnknownKindError is Resolve's error for a kind other than Auto, Bwrap
// and Namespace: a mistake on the command line.
type UnknownKindError struct {
	Kind string // the kind asked for
}

// Error says which kinds there are.
func (e *UnknownKindError) Error() string {
	return fmt.Sprintf("--sandbox %q: use auto, bwrap or namespace", e.Kind)
}

// ExitError is a failure that comes with the exit status vfsd run ends
// with: ExitFailed, ExitCannot or ExitNotFound, or (from RunChild) the
// command's own.
type ExitError struct {
	Code int   // the exit status
	Err  error // what failed; nil when the status says it all
}

// Error is Err's message, or the status when Err is nil.
func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

// Unwrap returns Err.
func (e *ExitError) Unwrap() error { return e.Err }

// Resolve picks the sandbox kind and, for Bwrap, bubblewrap's path: Bwrap
// when asked or when Auto finds it installed, else Namespace, which needs
// root. It fails, saying what to do, when the kind asked for cannot run
// here; a kind it does not know is an *UnknownKindError.
func Resolve(kind string) (resolved, bwrap string, err error) {
	bwrap, lookErr := exec.LookPath("bwrap")
	switch kind {
	case Auto:
		if lookErr == nil {
			return Bwrap, bwrap, nil
		}
		if os.Geteuid() != 0 {
			return "", "", errors.New("no sandbox can run here: bubblewrap is not installed (apt-get install bubblewrap; dnf install bubblewrap), and vfsd's own namespace sandbox needs root")
		}
		return Namespace, "", nil
	case Bwrap:
		if lookErr != nil {
			return "", "", errors.New("--sandbox bwrap: bubblewrap is not installed (apt-get install bubblewrap), or use --sandbox namespace as root")
		}
		return Bwrap, bwrap, nil
	case Namespace:
		if os.Geteuid() != 0 {
			return "", "", errors.New("--sandbox namespace needs root; install bubblewrap (apt-get install bubblewrap) and use --sandbox bwrap")
		}
		return Namespace, "", nil
	}
	return "", "", &UnknownKindError{Kind: kind}
}

// Describe is the line vfsd run prints about the sandbox on stderr.
func (s Spec) Describe() string {
	name := "bubblewrap"
	if s.Kind == Namespace {
		name = "namespace (vfsd's own)"
	}
	net := "network shared"
	if s.NoNetwork {
		net = "no network"
	}
	rw := "the session"
	if len(s.Writable) > 0 {
		rw += " and " + strings.Join(s.Writable, ", ")
	}
	caps := "no capabilities"
	if s.UserNS {
		caps += ", user namespace"
	}
	return fmt.Sprintf("sandbox: %s (host read-only but %s; private /tmp, /dev, /proc; %s; %s; %d daemon and host paths hidden)",
		name, rw, caps, net, len(s.masks))
}

// ResolveWritable makes the --rw paths absolute and resolved, and fails on
// one that does not exist: a failure of vfsd's, before anything is staged.
func ResolveWritable(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err == nil {
			abs, err = filepath.EvalSymlinks(abs)
		}
		if err != nil {
			return nil, fmt.Errorf("--rw %s: %w; create it first, or leave the flag out", p, errors.Unwrap(err))
		}
		if !slices.Contains(out, abs) {
			out = append(out, abs)
		}
	}
	return out, nil
}

// LookCommand finds argv0 as the sandbox will, on PATH: the host's file
// system is the sandbox's. A path with a slash is left to the sandbox (it
// may be in the session). Not found is an *ExitError with ExitNotFound
// (127), not runnable one with ExitCannot (126).
func LookCommand(argv0 string) error {
	if strings.Contains(argv0, "/") {
		return nil
	}
	if _, err := exec.LookPath(argv0); err != nil {
		code := ExitNotFound
		if !errors.Is(err, exec.ErrNotFound) && !errors.Is(err, os.ErrNotExist) {
			code = ExitCannot
		}
		return &ExitError{code, fmt.Errorf("%s: command not found on PATH (%v)", argv0, err)}
	}
	return nil
}

// safeEnv are the variables of vfsd's own environment the sandboxed
// command gets: where programs are, who and where the user is, the
// terminal, the locale and the time zone. Nothing else is passed on —
// credentials (AWS_*, tokens, API keys, passwords, proxies with a password
// in them) are not named, and an allow-list cannot miss one — unless
// --env names it.
var safeEnv = map[string]bool{
	"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "SHELL": true,
	"TERM": true, "COLORTERM": true, "NO_COLOR": true, "COLUMNS": true, "LINES": true,
	"LANG": true, "LANGUAGE": true, "TZ": true,
}

// safeEnvName reports whether vfsd passes its variable name on: one of
// safeEnv, or a locale category (LC_*).
func safeEnvName(name string) bool {
	return safeEnv[name] || strings.HasPrefix(name, "LC_")
}

// ParseEnvFlags checks vfsd run's --env values: NAME (pass vfsd's own
// value, if it has one) or NAME=VALUE. A VFSD_* name is refused: those
// lead to the daemon, which the command must not reach (VFSD_SESSION is
// set by vfsd).
func ParseEnvFlags(flags []string) error {
	for _, f := range flags {
		name, _, _ := strings.Cut(f, "=")
		if !validEnvName(name) {
			return fmt.Errorf("--env %q: give NAME or NAME=VALUE, NAME made of letters, digits and _", f)
		}
		if strings.HasPrefix(name, "VFSD_") {
			return fmt.Errorf("--env %s: no VFSD_* variable reaches the command (they lead to the daemon); it gets VFSD_SESSION", name)
		}
	}
	return nil
}

// validEnvName reports whether name is a portable variable name.
func validEnvName(name string) bool {
	if name == "" || name[0] >= '0' && name[0] <= '9' {
		return false
	}
	for _, c := range name {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// Env is the command's environment (Spec.Env): of env (vfsd's own) only
// the variables safeEnvName allows, then those --env names (extra, checked
// by ParseEnvFlags: NAME takes env's value when it has one, NAME=VALUE sets
// it), with VFSD_SESSION, TMPDIR where the command can write (the
// TMPDIR asked for when it lies in a --rw path, else /tmp), and the usual
// caches in it (privateCaches).
func Env(env, extra []string, session string, writable []string) []string {
	vars := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := vars[k]; !ok {
			order = append(order, k)
		}
		vars[k] = v
	}
	own := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		own[k] = v
		if safeEnvName(k) {
			set(k, v)
		}
	}
	tmpdir, tmpOK := own["TMPDIR"]
	for _, f := range extra {
		k, v, hasValue := strings.Cut(f, "=")
		if !hasValue {
			if v, hasValue = own[k]; !hasValue {
				continue
			}
		}
		if k == "TMPDIR" {
			tmpdir, tmpOK = v, true
			continue
		}
		set(k, v)
	}
	tmp := "/tmp"
	if t := filepath.Clean(tmpdir); tmpOK && filepath.IsAbs(t) && underAny(t, writable) {
		tmp = t
	}
	privateCaches(own, vars, set, tmp, writable)
	out := make([]string, 0, len(order)+2)
	for _, k := range order {
		if !strings.HasPrefix(k, "VFSD_") && k != "TMPDIR" {
			out = append(out, k+"="+vars[k])
		}
	}
	return append(out, "VFSD_SESSION="+session, "TMPDIR="+tmp)
}

// privateCaches points the caches tools write as they work (Go's build
// cache and pip's under XDG_CACHE_HOME, npm's) into the command's
// private /tmp, where the host's are read-only: a build works (with a cold
// cache), and nothing the command writes there can poison a cache the
// host's own programs trust later — a Go build cache entry is code. A
// cache under a --rw path is the host's own, shared on purpose; one the
// caller sets with --env is left alone.
func privateCaches(own, vars map[string]string, set func(k, v string), tmp string, writable []string) {
	home := own["HOME"]
	caches := []struct{ env, host, private string }{
		{"XDG_CACHE_HOME", own["XDG_CACHE_HOME"], tmp + "/.cache"},
		{"npm_config_cache", own["npm_config_cache"], tmp + "/.npm"},
	}
	if caches[0].host == "" && home != "" {
		caches[0].host = filepath.Join(home, ".cache")
	}
	if caches[1].host == "" && home != "" {
		caches[1].host = filepath.Join(home, ".npm")
	}
	for _, c := range caches {
		if _, given := vars[c.env]; given {
			continue
		}
		if c.host != "" && filepath.IsAbs(c.host) && underAny(filepath.Clean(c.host), writable) {
			set(c.env, c.host)
			continue
		}
		set(c.env, c.private)
	}
}

// within reports whether p is dir or lies beneath it.
func within(dir, p string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if within(d, p) {
			return true
		}
	}
	return false
}

// hostView tells whether the sandbox shows path p from the host (read-only
// or through a --rw path), as opposed to something of its own (private
// /tmp, /dev, /proc, the session): only what the host shows needs masking.
func (s Spec) hostView(p string) bool {
	best, host := "/", true
	consider := func(dir string, isHost bool) {
		if within(dir, p) && len(dir) >= len(best) {
			best, host = dir, isHost
		}
	}
	for _, d := range []string{"/tmp", "/dev", "/proc"} {
		consider(d, false)
	}
	for _, w := range s.Writable {
		consider(w, true)
	}
	consider(s.WorkDir, false)
	return host
}

// HostSockets are the host's bound Unix sockets (from /proc/net/unix): as
// root, the command could connect to any of them (connect needs no
// writable mount) — the daemon's, systemd's, docker's — so they are
// masked unless a --rw path grants them.
func HostSockets() []string {
	f, err := os.Open("/proc/net/unix")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 || !strings.HasPrefix(fields[7], "/") {
			continue
		}
		out = append(out, fields[7])
	}
	return out
}

// FuseMounts reads /proc/self/mountinfo: the FUSE mounts of the daemon's
// sessions other than mountpoint (the command must not reach other
// sessions through them), and every FUSE mount point (paths beneath which
// vfsd must not look: a FUSE server that hangs would hang vfsd with it).
// Mount points are reported by the kernel resolved, so they need no stat.
func FuseMounts(mountpoint string) (sessions, all []string) {
	ms, err := mountinfo.Read()
	if err != nil {
		return nil, nil
	}
	for _, m := range ms {
		if m.FSType == "overlay" && strings.HasPrefix(m.Source, "vfsd:") {
			if mp := m.MountPoint; mp != mountpoint { // another session's overlay mount
				sessions = append(sessions, mp)
			}
			continue
		}
		if !strings.HasPrefix(m.FSType, "fuse") {
			continue
		}
		mp := m.MountPoint
		all = append(all, mp)
		if strings.HasPrefix(m.Source, "vfsd:") && mp != mountpoint {
			sessions = append(sessions, mp)
		}
	}
	return sessions, all
}

// SetMasks sets what the sandbox hides. It keeps, of the candidate paths,
// those that exist and that the sandbox would show from the host, resolved
// and without duplicates: daemon paths, other sessions' mounts (as
// mountinfo gives them: never stat'ed; see FuseMounts) and host sockets
// (see HostSockets). A socket a --rw path grants is left visible; a daemon
// path or mount holding the folder or a --rw path is an error (it could
// not be hidden). Nothing beneath a FUSE mount in fuse is looked at.
func (s *Spec) SetMasks(daemonPaths, mounts, sockets, fuse []string) error {
	seen := map[string]bool{}
	add := func(p string, grantable, resolved bool) error {
		if p == "" || !filepath.IsAbs(p) {
			return nil
		}
		if !resolved {
			if underAny(p, fuse) {
				return nil // another mount's inside: hidden with it, or not the daemon's
			}
			r, err := filepath.EvalSymlinks(p)
			if err != nil {
				return nil // nothing there to hide
			}
			p = r
		}
		for _, w := range append([]string{s.WorkDir}, s.Writable...) {
			if within(p, w) {
				if grantable {
					return nil
				}
				return fmt.Errorf("%s is inside %s, which the daemon keeps to itself (its data, socket or another session's mount) and the command must not see; run on, and --rw, paths outside it", w, p)
			}
		}
		if seen[p] || !s.hostView(p) || (grantable && underAny(p, s.Writable)) {
			return nil
		}
		seen[p] = true
		s.masks = append(s.masks, p)
		return nil
	}
	for _, p := range daemonPaths {
		if err := add(p, false, false); err != nil {
			return err
		}
	}
	for _, p := range mounts {
		if err := add(p, false, true); err != nil {
			return err
		}
	}
	for _, p := range sockets {
		_ = add(p, true, false)
	}
	slices.Sort(s.masks)
	return nil
}

// Descriptors the sandbox's process gets besides stdin, stdout, stderr.
const (
	statusFD  = 3 // bubblewrap's --json-status-fd protocol (see runStatus)
	startedFD = 4 // one byte once the command is about to run: the sandbox is up
)

// Proc is a sandbox's process, made by Spec.Command, and the read ends of
// its two pipes. Start it, Wait for it, then Close it.
type Proc struct {
	cmd             *exec.Cmd
	kind            string // the sandbox's kind, for messages
	status, started *os.File
}

// Close releases the read ends.
func (p *Proc) Close() {
	p.status.Close()
	p.started.Close()
}

// Command returns the process that runs the spec, with the command's
// stdin, stdout and stderr. It never starts inside the mount: the process
// serving a FUSE mount must not be asked to run a binary or a working
// directory within it. When ctx is done (vfsd was interrupted or told to
// stop), the process gets SIGTERM, and SIGKILL ten seconds later.
func (s Spec) Command(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) (*Proc, error) {
	var cmd *exec.Cmd
	var err error
	switch s.Kind {
	case Bwrap:
		cmd = exec.CommandContext(ctx, s.Bwrap, s.bwrapArgs()...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	case Namespace:
		cmd, err = s.namespaceCommand(ctx)
	default:
		err = fmt.Errorf("unknown sandbox %q", s.Kind)
	}
	if err != nil {
		return nil, err
	}
	p := &Proc{cmd: cmd, kind: s.Kind}
	var statusW, startedW *os.File
	if p.status, statusW, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("sandbox status pipe: %w", err)
	}
	if p.started, startedW, err = os.Pipe(); err != nil {
		p.status.Close()
		statusW.Close()
		return nil, fmt.Errorf("sandbox status pipe: %w", err)
	}
	cmd.ExtraFiles = []*os.File{statusW, startedW} // statusFD, startedFD
	cmd.Env, cmd.Dir = s.Env, "/"
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	return p, nil
}

// Start starts the process and closes the write ends vfsd holds.
func (p *Proc) Start() error {
	err := p.cmd.Start()
	for _, f := range p.cmd.ExtraFiles {
		f.Close()
	}
	return err
}

// ErrInterrupted is Wait's error when ctx ended the sandbox (vfsd was
// interrupted or told to stop): the command ran and was stopped, and its
// status is ExitSignaled plus SIGTERM.
var ErrInterrupted = errors.New("interrupted; the command was stopped")

// Wait waits for the started process and returns the command's exit
// status, as a shell would report it (128+N when signal N ended it), and
// whether the command ran at all. When the sandbox failed before the
// command ran, the status is ExitFailed and the error says so; when ctx
// ended the run, the error is ErrInterrupted.
func (p *Proc) Wait(ctx context.Context) (status int, ran bool, err error) {
	type result struct {
		code int
		seen bool
	}
	statusCh, startedCh := make(chan result, 1), make(chan bool, 1)
	go func() {
		var r result
		r.code, r.seen = runStatus(p.status)
		statusCh <- r
	}()
	go func() { startedCh <- hasStarted(p.started) }()
	_ = p.cmd.Wait()
	st := p.cmd.ProcessState
	var r result
	ran = false
	select { // the pipes end with the sandbox, unless something it left holds them
	case r = <-statusCh:
	case <-time.After(5 * time.Second):
	}
	select {
	case ran = <-startedCh:
	case <-time.After(time.Second):
	}
	switch {
	case ctx.Err() != nil && !signaled(st):
		// Stopped on vfsd's interrupt: a sandbox may exit 0 then.
		return ExitSignaled + int(syscall.SIGTERM), true, ErrInterrupted
	case !ran:
		return ExitFailed, false, fmt.Errorf("the %s sandbox failed before the command ran (%s; its message is above)", p.kind, st)
	case r.seen:
		return r.code, true, nil
	}
	return exitStatusOf(st), true, nil
}

// exitStatusOf is the status a shell would report for a finished process:
// its exit code, or 128+N when signal N ended it.
func exitStatusOf(st *os.ProcessState) int {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ExitSignaled + int(ws.Signal())
	}
	return st.ExitCode()
}

// signaled reports whether a signal ended the process.
func signaled(st *os.ProcessState) bool {
	ws, ok := st.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled()
}

// runStatus reads bubblewrap's --json-status-fd protocol (the namespace
// sandbox speaks it too): JSON objects, one with "exit-code" when the
// command ended. seen says that one came.
func runStatus(r io.Reader) (code int, seen bool) {
	dec := json.NewDecoder(r)
	for {
		var m map[string]json.RawMessage
		if dec.Decode(&m) != nil {
			return code, seen
		}
		if raw, has := m["exit-code"]; has && json.Unmarshal(raw, &code) == nil {
			seen = true
		}
	}
}

// hasStarted reads the started pipe: whether the command was about to run.
func hasStarted(r io.Reader) bool {
	var b [1]byte
	n, _ := r.Read(b[:])
	return n == 1
}
