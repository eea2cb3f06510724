package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

// Sandbox kinds for vfsd run.
const (
	sandboxAuto      = "auto"      // bwrap when installed, else namespace
	sandboxBwrap     = "bwrap"     // bubblewrap: read-only host, private /tmp, /proc, /dev
	sandboxNamespace = "namespace" // a private mount namespace: the workspace only
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
// a binary or a working directory within it.
func (s sandboxSpec) command() (*exec.Cmd, error) {
	kind := s.kind
	if kind == sandboxAuto {
		kind = sandboxNamespace
		if _, err := exec.LookPath("bwrap"); err == nil {
			kind = sandboxBwrap
		}
	}
	switch kind {
	case sandboxBwrap:
		bwrap, err := exec.LookPath("bwrap")
		if err != nil {
			return nil, errors.New("--sandbox bwrap: bubblewrap is not installed (apt-get install bubblewrap), or use --sandbox namespace")
		}
		cmd := exec.Command(bwrap, s.bwrapArgs()...)
		cmd.Env, cmd.Dir = s.env, "/"
		return cmd, nil
	case sandboxNamespace:
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find vfsd's own binary for the namespace sandbox: %w", err)
		}
		args := append([]string{nsChildVerb, s.mountpoint, s.workDir, "--"}, s.argv...)
		cmd := exec.Command(self, args...)
		cmd.Env, cmd.Dir = s.env, "/"
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS}
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
// new mount namespace: it binds the session over the folder and executes
// the command there.
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

// execInNamespace, in a private mount namespace, binds mountpoint over dir
// and replaces the process with argv run in dir.
func execInNamespace(mountpoint, dir string, argv []string) error {
	// Keep the binding to this namespace: mounts made here must not
	// propagate back to the host.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return exitStatus{exitRunFailed, fmt.Errorf("make the mount namespace private (this needs root; or install bubblewrap): %w", err)}
	}
	if err := unix.Mount(mountpoint, dir, "", unix.MS_BIND, ""); err != nil {
		return exitStatus{exitRunFailed, fmt.Errorf("bind the session over %s: %w", dir, err)}
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
	err = syscall.Exec(path, argv, os.Environ())
	return exitStatus{exitRunCannot, fmt.Errorf("run %s: %w", argv[0], err)}
}
