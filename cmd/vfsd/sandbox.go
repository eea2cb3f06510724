package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

// Sandbox kinds for vfsd run.
const (
	sandboxAuto      = "auto"      // bwrap when installed, else namespace
	sandboxBwrap     = "bwrap"     // bubblewrap: read-only host, private /tmp, /proc, /dev
	sandboxNamespace = "namespace" // private mount and PID namespaces: the workspace only
)

// sandboxSpec is what runs in a sandbox: argv in workDir, where the session
// (mounted at mountpoint on the host) appears.
type sandboxSpec struct {
	kind       string
	mountpoint string   // the session's FUSE mount on the host
	workDir    string   // where the command sees it: the staged folder's own path
	writable   []string // host paths the command may write (bwrap)
	noNetwork  bool     // no network (bwrap)
	env        []string
	argv       []string
}

// command returns the process that runs the spec. It never starts inside
// the mount: the process serving a FUSE mount must not be asked to run
// a binary or a working directory within it. When ctx is done (vfsd was
// interrupted or told to stop), the process gets SIGTERM, and SIGKILL
// ten seconds later.
func (s sandboxSpec) command(ctx context.Context) (*exec.Cmd, error) {
	cmd, err := s.process(ctx)
	if err != nil {
		return nil, err
	}
	cmd.Env, cmd.Dir = s.env, "/"
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	return cmd, nil
}

// process returns the sandbox's process, not yet configured.
func (s sandboxSpec) process(ctx context.Context) (*exec.Cmd, error) {
	bwrap, lookErr := exec.LookPath("bwrap")
	kind := s.kind
	if kind == sandboxAuto {
		kind = sandboxNamespace
		if lookErr == nil {
			kind = sandboxBwrap
		}
	}
	switch kind {
	case sandboxBwrap:
		if lookErr != nil {
			return nil, errors.New("--sandbox bwrap: bubblewrap is not installed (apt-get install bubblewrap), or use --sandbox namespace")
		}
		return exec.CommandContext(ctx, bwrap, s.bwrapArgs()...), nil
	case sandboxNamespace:
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find vfsd's own binary for the namespace sandbox: %w", err)
		}
		args := append([]string{nsChildVerb, s.mountpoint, s.workDir, "--"}, s.argv...)
		cmd := exec.CommandContext(ctx, self, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID}
		return cmd, nil
	}
	return nil, usageError{fmt.Errorf("--sandbox %q: use auto, bwrap or namespace", s.kind)}
}

// bwrapArgs runs argv with the host read-only, fresh /dev, /proc and /tmp,
// the session bound read-write at workDir and the writable paths bound
// read-write where they are.
func (s sandboxSpec) bwrapArgs() []string {
	args := []string{"--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"}
	if s.noNetwork {
		args = append(args, "--unshare-net")
	}
	for _, w := range s.writable {
		args = append(args, "--bind", w, w)
	}
	args = append(args, "--bind", s.mountpoint, s.workDir, "--chdir", s.workDir,
		"--setenv", "PWD", s.workDir, "--")
	return append(args, s.argv...)
}

// nsChildVerb is the hidden verb the namespace sandbox runs vfsd as, in a
// new mount and PID namespace: it binds the session over the folder and
// runs the command there as the namespace's init (see runAsInit).
const nsChildVerb = "__run-namespace-child"

func newNamespaceChildCmd() *cobra.Command {
	return &cobra.Command{
		Use:    nsChildVerb + " MOUNTPOINT DIR -- CMD...",
		Hidden: true,
		Args:   usageArgs(cobra.MinimumNArgs(3)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return execInNamespace(args[0], args[1], args[2:])
		},
	}
}

// execInNamespace, in a private mount and PID namespace, binds mountpoint
// over dir, mounts a /proc of the namespace, and runs argv in dir.
func execInNamespace(mountpoint, dir string, argv []string) error {
	// Keep the binding to this namespace: mounts made here must not
	// propagate back to the host.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return exitStatus{exitRunFailed, fmt.Errorf("make the mount namespace private (this needs root; or install bubblewrap): %w", err)}
	}
	if err := unix.Mount(mountpoint, dir, "", unix.MS_BIND, ""); err != nil {
		return exitStatus{exitRunFailed, fmt.Errorf("bind the session over %s: %w", dir, err)}
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return exitStatus{exitRunFailed, fmt.Errorf("mount /proc for the sandbox: %w", err)}
	}
	if err := os.Chdir(dir); err != nil {
		return exitStatus{exitRunFailed, fmt.Errorf("enter %s: %w", dir, err)}
	}
	os.Setenv("PWD", dir)
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return exitStatus{exitRunNotFound, fmt.Errorf("%s: %w", argv[0], err)}
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	return runAsInit(path, argv)
}

// runAsInit runs the command as the child of this process, the PID
// namespace's init: it passes on the signals vfsd run sends (an interrupt
// becomes the command's), and exits with the command's status, whereupon
// the kernel ends whatever the command left running in the namespace.
func runAsInit(path string, argv []string) error {
	cmd := &exec.Cmd{Path: path, Args: argv, Env: os.Environ(), Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return exitStatus{exitRunCannot, fmt.Errorf("run %s: %w", argv[0], err)}
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	_ = cmd.Wait()
	return exitStatus{code: exitStatusOf(cmd.ProcessState)}
}
