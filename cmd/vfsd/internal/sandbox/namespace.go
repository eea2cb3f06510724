//go:build linux

package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The namespace sandbox is vfsd's own, for when bubblewrap is missing:
// vfsd runs itself (the hidden verb ChildVerb) in new mount, PID, IPC,
// UTS and cgroup namespaces (and network with --no-network), in a new
// session and dying with vfsd. There, as the PID namespace's init, it
// builds the same view bubblewrap does — the host read-only, nosuid and
// nodev; a private /tmp, a minimal /dev, a fresh /proc with its host-wide
// knobs read-only; the --rw paths and the session writable, nosuid and
// nodev; the masks hidden — drops every capability for good, and runs the command.

// nsSpec is what the namespace sandbox's init is told (as JSON, its first
// argument after ChildVerb).
type nsSpec struct {
	Mountpoint string   `json:"mountpoint"`
	WorkDir    string   `json:"work_dir"`
	Writable   []string `json:"writable,omitempty"`
	Masks      []string `json:"masks,omitempty"`
	NoNetwork  bool     `json:"no_network,omitempty"`
}

// namespaceCommand returns the process of the namespace sandbox.
func (s Spec) namespaceCommand(ctx context.Context) (*exec.Cmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find vfsd's own binary for the namespace sandbox: %w", err)
	}
	spec, err := json.Marshal(nsSpec{Mountpoint: s.Mountpoint, WorkDir: s.WorkDir, Writable: s.Writable, Masks: s.masks, NoNetwork: s.NoNetwork})
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, self, append([]string{ChildVerb, string(spec), "--"}, s.Argv...)...)
	flags := uintptr(unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP)
	if s.NoNetwork {
		flags |= unix.CLONE_NEWNET
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: flags, Setsid: true, Pdeathsig: syscall.SIGKILL}
	if s.UserNS {
		// In a user namespace of its own (root mapped to root), whatever
		// the sandbox's init keeps reaches no namespace it did not create.
		cmd.SysProcAttr.Cloneflags |= unix.CLONE_NEWUSER
		cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}}
		cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}}
	}
	return cmd, nil
}

// UserNamespaces reports whether this process can create a user namespace
// (some kernels and containers forbid it): it tries, with /bin/true.
func UserNamespaces() bool {
	b, err := os.ReadFile("/proc/sys/user/max_user_namespaces")
	if n, _ := strconv.Atoi(strings.TrimSpace(string(b))); err != nil || n == 0 {
		return false
	}
	cmd := exec.Command("/bin/true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}}
	return cmd.Run() == nil
}

// RunChild is the namespace sandbox's init, run as `vfsd ChildVerb SPEC
// -- CMD [ARG]...`: spec is SPEC, argv CMD and its arguments. It sets the
// sandbox up, runs the command and waits for it; it always returns an
// *ExitError with the status to exit with, the command's own when it ran
// (its Err nil then), and the program must exit with that status at once.
func RunChild(spec string, argv []string) error {
	var s nsSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		return &ExitError{ExitFailed, fmt.Errorf("namespace sandbox: bad spec: %w", err)}
	}
	return nsInit(s, argv)
}

// nsInit sets the sandbox up and runs argv in it as the PID namespace's
// init: it passes on the signals vfsd run sends, reports the command's
// status on the status pipe and exits with it, whereupon the kernel ends
// whatever the command left running in the namespace.
func nsInit(spec nsSpec, argv []string) error {
	// The pipes must not reach the command.
	unix.CloseOnExec(statusFD)
	unix.CloseOnExec(startedFD)
	status := os.NewFile(statusFD, "status")
	started := os.NewFile(startedFD, "started")
	// Every credential change below is per thread: the command is started
	// from this thread, which keeps them.
	runtime.LockOSThread()
	if err := buildView(spec); err != nil {
		return &ExitError{ExitFailed, fmt.Errorf("namespace sandbox: %w", err)}
	}
	if err := os.Chdir(spec.WorkDir); err != nil {
		return &ExitError{ExitFailed, fmt.Errorf("namespace sandbox: enter %s: %w", spec.WorkDir, err)}
	}
	os.Setenv("PWD", spec.WorkDir)
	path, err := exec.LookPath(argv[0])
	if err != nil && !errors.Is(err, exec.ErrDot) {
		code := ExitNotFound
		if !errors.Is(err, exec.ErrNotFound) && !errors.Is(err, os.ErrNotExist) {
			code = ExitCannot
		}
		started.Write([]byte("x")) // the sandbox is up; the command is what failed
		writeStatus(status, "exit-code", code)
		return &ExitError{code, fmt.Errorf("%s: %w", argv[0], err)}
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(spec.WorkDir, path)
	}
	if err := dropPrivileges(); err != nil {
		return &ExitError{ExitFailed, fmt.Errorf("namespace sandbox: drop privileges: %w", err)}
	}
	cmd := &exec.Cmd{Path: path, Args: argv, Env: os.Environ(), Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	started.Write([]byte("x"))
	started.Close()
	if err := cmd.Start(); err != nil {
		writeStatus(status, "exit-code", ExitCannot)
		return &ExitError{ExitCannot, fmt.Errorf("run %s: %w", argv[0], err)}
	}
	writeStatus(status, "child-pid", cmd.Process.Pid)
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	_ = cmd.Wait()
	code := exitStatusOf(cmd.ProcessState)
	writeStatus(status, "exit-code", code)
	return &ExitError{Code: code}
}

// writeStatus writes one object of the status protocol.
func writeStatus(f *os.File, key string, v int) {
	fmt.Fprintf(f, "{ %q: %d }\n", key, v)
}

// buildView builds the sandbox's file system view in this (new, private)
// mount namespace.
func buildView(spec nsSpec) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make the mount namespace private: %w", err)
	}
	if spec.NoNetwork {
		loopbackUp()
	}
	// Hide the masks first, so the clones of the --rw paths below carry
	// them too.
	for _, m := range outermost(spec.Masks) {
		if err := mask(m); err != nil {
			return err
		}
	}
	// Clone what will be mounted back over the private /tmp and /dev.
	clone := func(p string, recursive bool) (int, error) {
		flags := uint(unix.OPEN_TREE_CLONE | unix.OPEN_TREE_CLOEXEC)
		if recursive {
			flags |= unix.AT_RECURSIVE
		}
		fd, err := unix.OpenTree(unix.AT_FDCWD, p, flags)
		if err != nil {
			return -1, fmt.Errorf("clone the mount of %s: %w", p, err)
		}
		return fd, nil
	}
	session, err := clone(spec.Mountpoint, false)
	if err != nil {
		return err
	}
	rw := make([]int, len(spec.Writable))
	for i, w := range spec.Writable {
		if rw[i], err = clone(w, true); err != nil {
			return err
		}
	}
	devs := map[string]int{}
	for _, d := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
		if devs[d], err = clone("/dev/"+d, false); err != nil {
			return err
		}
	}
	// The host read-only, without setuid binaries or device nodes.
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE,
		&unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}); err != nil {
		return fmt.Errorf("make the host read-only (mount_setattr needs Linux 5.12; or install bubblewrap): %w", err)
	}
	if err := unix.Mount("tmpfs", "/tmp", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
		return fmt.Errorf("mount a private /tmp: %w", err)
	}
	if err := buildDev(devs); err != nil {
		return err
	}
	if err := buildProc(); err != nil {
		return err
	}
	// The --rw paths and the session are nosuid and nodev, as bubblewrap's
	// binds are: nothing found or made there is honoured as set-ID, a file
	// capability or a device.
	for i, w := range spec.Writable {
		if err := attach(rw[i], w, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV); err != nil {
			return err
		}
	}
	return attach(session, spec.WorkDir, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
}

// mask hides path: an empty read-only tmpfs over a directory, /dev/null
// over anything else.
func mask(p string) error {
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return nil // nothing there to hide
	case fi.IsDir():
		err = unix.Mount("tmpfs", p, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,mode=755")
	default:
		err = unix.Mount("/dev/null", p, "", unix.MS_BIND, "")
	}
	if err != nil {
		return fmt.Errorf("hide %s: %w", p, err)
	}
	return nil
}

// attach mounts the detached tree fd at path, creating the mount point
// (in the private /tmp, say) when missing, and sets attrs on it.
func attach(fd int, path string, attrs uint64) error {
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("mount %s: %w", path, err)
	}
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			err = os.MkdirAll(path, 0o755)
		} else if err = os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
			err = os.WriteFile(path, nil, 0o644)
		}
		if err != nil {
			return fmt.Errorf("create the mount point %s: %w", path, err)
		}
	}
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, path, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("mount %s: %w", path, err)
	}
	if attrs != 0 {
		if err := unix.MountSetattr(unix.AT_FDCWD, path, unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: attrs}); err != nil {
			return fmt.Errorf("set the flags of %s: %w", path, err)
		}
	}
	return nil
}

// buildDev mounts a minimal /dev: the harmless device nodes of the host
// (never its disks), a private devpts and /dev/shm, and the usual links.
func buildDev(devs map[string]int) error {
	if err := unix.Mount("tmpfs", "/dev", "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=755"); err != nil {
		return fmt.Errorf("mount a private /dev: %w", err)
	}
	for name, fd := range devs {
		if err := attach(fd, "/dev/"+name, 0); err != nil {
			return err
		}
	}
	for _, d := range []string{"/dev/pts", "/dev/shm"} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
	}
	if err := unix.Mount("devpts", "/dev/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620"); err != nil {
		return fmt.Errorf("mount /dev/pts: %w", err)
	}
	if err := unix.Mount("tmpfs", "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
		return fmt.Errorf("mount /dev/shm: %w", err)
	}
	for link, target := range map[string]string{"ptmx": "pts/ptmx", "fd": "/proc/self/fd",
		"stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"} {
		if err := os.Symlink(target, "/dev/"+link); err != nil {
			return err
		}
	}
	return nil
}

// buildProc mounts the PID namespace's /proc, its host-wide knobs
// read-only.
func buildProc() error {
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	for _, p := range procReadOnly {
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s: %w", p, err)
		}
		if err := unix.MountSetattr(unix.AT_FDCWD, p, unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
			return fmt.Errorf("make %s read-only: %w", p, err)
		}
	}
	return nil
}

// loopbackUp brings the new network namespace's loopback up, as bubblewrap
// does: programs that talk to themselves on localhost still work.
func loopbackUp() {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return
	}
	ifr.SetUint16(unix.IFF_UP | unix.IFF_LOOPBACK | unix.IFF_RUNNING)
	_ = unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// Secure bits (linux/securebits.h): root gets no capabilities on exec nor
// keeps or regains them on uid changes, for good.
const (
	secbitNoroot             = 1 << 0
	secbitNorootLocked       = 1 << 1
	secbitNoSetuidFixup      = 1 << 2
	secbitNoSetuidFixupLockd = 1 << 3
	secbitKeepCapsLocked     = 1 << 5
	secbitNoCapAmbientRaise  = 1 << 6
	secbitNoCapAmbientLocked = 1 << 7
)

// dropPrivileges, for this thread and what it starts: no capabilities in
// any set (bounding and ambient included), none regained through uid 0,
// setuid or file capabilities (no_new_privs), and no ptrace of this
// process, whose other threads keep theirs.
func dropPrivileges() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("PR_SET_DUMPABLE: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, secbitNoroot|secbitNorootLocked|secbitNoSetuidFixup|secbitNoSetuidFixupLockd|
		secbitKeepCapsLocked|secbitNoCapAmbientRaise|secbitNoCapAmbientLocked, 0, 0, 0); err != nil {
		return fmt.Errorf("PR_SET_SECUREBITS: %w", err)
	}
	last := 63
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear the ambient capabilities: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("PR_SET_NO_NEW_PRIVS: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}
