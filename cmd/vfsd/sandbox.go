//go:build linux

package main

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

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/internal/mountinfo"
)

// Sandbox kinds for vfsd run.
const (
	sandboxAuto      = "auto"      // bwrap when installed, else namespace
	sandboxBwrap     = "bwrap"     // bubblewrap
	sandboxNamespace = "namespace" // vfsd's own namespaces (root only)
)

// The guarantees both sandboxes give, said once for --help and the report:
// the host read-only but for the session and --rw paths, private /tmp,
// /dev and /proc, no capabilities, a new session (no controlling
// terminal), the daemon's files hidden, no network with --no-network.

// sandboxSpec is what runs in a sandbox: argv in workDir, where the session
// (mounted at mountpoint on the host) appears.
type sandboxSpec struct {
	kind       string   // sandboxBwrap or sandboxNamespace, resolved
	userns     bool     // in a user namespace (root mapped to root)
	bwrap      string   // bubblewrap's path
	mountpoint string   // the session's FUSE mount on the host
	backend    string   // the mount backend asked for: fuse, overlay or auto
	workDir    string   // where the command sees it: the staged folder's own path
	writable   []string // host paths the command may write: absolute, resolved, existing
	noNetwork  bool     // no network
	masks      []string // host paths the command must not see (the daemon's files, host sockets)
	env        []string // the command's environment (sandboxEnv)
	argv       []string
}

// resolveSandbox picks the sandbox kind: bwrap when asked or when auto
// finds it installed, else the namespace sandbox, which needs root. It
// fails, saying what to do, when the kind asked for cannot run here.
func resolveSandbox(kind string) (string, string, error) {
	bwrap, lookErr := exec.LookPath("bwrap")
	switch kind {
	case sandboxAuto:
		if lookErr == nil {
			return sandboxBwrap, bwrap, nil
		}
		if os.Geteuid() != 0 {
			return "", "", errors.New("no sandbox can run here: bubblewrap is not installed (apt-get install bubblewrap; dnf install bubblewrap), and vfsd's own namespace sandbox needs root")
		}
		return sandboxNamespace, "", nil
	case sandboxBwrap:
		if lookErr != nil {
			return "", "", errors.New("--sandbox bwrap: bubblewrap is not installed (apt-get install bubblewrap), or use --sandbox namespace as root")
		}
		return sandboxBwrap, bwrap, nil
	case sandboxNamespace:
		if os.Geteuid() != 0 {
			return "", "", errors.New("--sandbox namespace needs root; install bubblewrap (apt-get install bubblewrap) and use --sandbox bwrap")
		}
		return sandboxNamespace, "", nil
	}
	return "", "", usageError{fmt.Errorf("--sandbox %q: use auto, bwrap or namespace", kind)}
}

// describe is the line vfsd run prints about the sandbox on stderr.
func (s sandboxSpec) describe() string {
	name := "bubblewrap"
	if s.kind == sandboxNamespace {
		name = "namespace (vfsd's own)"
	}
	net := "network shared"
	if s.noNetwork {
		net = "no network"
	}
	rw := "the session"
	if len(s.writable) > 0 {
		rw += " and " + strings.Join(s.writable, ", ")
	}
	caps := "no capabilities"
	if s.userns {
		caps += ", user namespace"
	}
	return fmt.Sprintf("sandbox: %s (host read-only but %s; private /tmp, /dev, /proc; %s; %s; %d daemon and host paths hidden)",
		name, rw, caps, net, len(s.masks))
}

// resolveWritable makes the --rw paths absolute and resolved, and fails on
// one that does not exist: a failure of vfsd's, before anything is staged.
func resolveWritable(paths []string) ([]string, error) {
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

// lookCommand finds argv0 as the sandbox will, on PATH: the host's file
// system is the sandbox's. A path with a slash is left to the sandbox (it
// may be in the session). Not found is 127, not runnable 126.
func lookCommand(argv0 string) error {
	if strings.Contains(argv0, "/") {
		return nil
	}
	if _, err := exec.LookPath(argv0); err != nil {
		code := exitRunNotFound
		if !errors.Is(err, exec.ErrNotFound) && !errors.Is(err, os.ErrNotExist) {
			code = exitRunCannot
		}
		return exitStatus{code, fmt.Errorf("%s: command not found on PATH (%v)", argv0, err)}
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

// parseEnvFlags checks vfsd run's --env values: NAME (pass vfsd's own
// value, if it has one) or NAME=VALUE. A VFSD_* name is refused: those
// lead to the daemon, which the command must not reach (VFSD_SESSION is
// set by vfsd).
func parseEnvFlags(flags []string) error {
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

// sandboxEnv is the command's environment: of env (vfsd's own) only the
// variables safeEnvName allows, then those --env names (extra, checked by
// parseEnvFlags: NAME takes env's value when it has one, NAME=VALUE sets
// it), with VFSD_SESSION, and TMPDIR where the command can write (the
// TMPDIR asked for when it lies in a --rw path, else /tmp).
func sandboxEnv(env, extra []string, session string, writable []string) []string {
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
	out := make([]string, 0, len(order)+2)
	for _, k := range order {
		if !strings.HasPrefix(k, "VFSD_") && k != "TMPDIR" {
			out = append(out, k+"="+vars[k])
		}
	}
	return append(out, "VFSD_SESSION="+session, "TMPDIR="+tmp)
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
func (s sandboxSpec) hostView(p string) bool {
	best, host := "/", true
	consider := func(dir string, isHost bool) {
		if within(dir, p) && len(dir) >= len(best) {
			best, host = dir, isHost
		}
	}
	for _, d := range []string{"/tmp", "/dev", "/proc"} {
		consider(d, false)
	}
	for _, w := range s.writable {
		consider(w, true)
	}
	consider(s.workDir, false)
	return host
}

// daemonMasks are the daemon's own paths the command must not reach: what
// the daemon reports to its admin, else (an older daemon) the defaults,
// and the socket and data directory this vfsd used.
func daemonMasks(h *api.Health, g *globalFlags, embedded *embeddedDaemon) []string {
	var ps []string
	if h != nil && h.Private != nil {
		ps = append(ps, h.Private.DataDir, h.Private.Socket, h.Private.TokenFile)
		ps = append(ps, h.Private.Other...)
	}
	if embedded != nil {
		ps = append(ps, embedded.dataDir, embedded.sockDir)
	}
	if value(g.addr, envAddr) == "" {
		ps = append(ps, g.socketPath())
	}
	ps = append(ps, defaultDataDir())
	return ps
}

// hostSockets are the host's bound Unix sockets (from /proc/net/unix): as
// root, the command could connect to any of them (connect needs no
// writable mount) — the daemon's, systemd's, docker's — so they are
// masked unless a --rw path grants them.
func hostSockets() []string {
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

// fuseMounts reads /proc/self/mountinfo: the FUSE mounts of the daemon's
// sessions other than mountpoint (the command must not reach other
// sessions through them), and every FUSE mount point (paths beneath which
// vfsd must not look: a FUSE server that hangs would hang vfsd with it).
// Mount points are reported by the kernel resolved, so they need no stat.
func fuseMounts(mountpoint string) (sessions, all []string) {
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

// setMasks keeps, of the candidate paths, those that exist and that the
// sandbox would show from the host, resolved and without duplicates:
// daemon paths, other sessions' mounts (as mountinfo gives them: never
// stat'ed) and host sockets. A socket a --rw path grants is left visible;
// a daemon path or mount holding the folder or a --rw path is an error (it
// could not be hidden). Nothing beneath a FUSE mount in fuse is looked at.
func (s *sandboxSpec) setMasks(daemonPaths, mounts, sockets, fuse []string) error {
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
		for _, w := range append([]string{s.workDir}, s.writable...) {
			if within(p, w) {
				if grantable {
					return nil
				}
				return fmt.Errorf("%s is inside %s, which the daemon keeps to itself (its data, socket or another session's mount) and the command must not see; run on, and --rw, paths outside it", w, p)
			}
		}
		if seen[p] || !s.hostView(p) || (grantable && underAny(p, s.writable)) {
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

// sandboxProc is the running sandbox's process and the read ends of its
// two pipes.
type sandboxProc struct {
	*exec.Cmd
	status, started *os.File
}

// close releases the read ends.
func (p *sandboxProc) close() {
	p.status.Close()
	p.started.Close()
}

// command returns the process that runs the spec. It never starts inside
// the mount: the process serving a FUSE mount must not be asked to run a
// binary or a working directory within it. When ctx is done (vfsd was
// interrupted or told to stop), the process gets SIGTERM, and SIGKILL ten
// seconds later.
func (s sandboxSpec) command(ctx context.Context) (*sandboxProc, error) {
	var cmd *exec.Cmd
	var err error
	switch s.kind {
	case sandboxBwrap:
		cmd = exec.CommandContext(ctx, s.bwrap, s.bwrapArgs()...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	case sandboxNamespace:
		cmd, err = s.namespaceCommand(ctx)
	default:
		err = fmt.Errorf("unknown sandbox %q", s.kind)
	}
	if err != nil {
		return nil, err
	}
	p := &sandboxProc{Cmd: cmd}
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
	cmd.Env, cmd.Dir = s.env, "/"
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	return p, nil
}

// start starts the process and closes the write ends vfsd holds.
func (p *sandboxProc) start() error {
	err := p.Start()
	for _, f := range p.ExtraFiles {
		f.Close()
	}
	return err
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
