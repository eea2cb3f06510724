//go:build linux

package sandbox

import (
	"os"
	"strconv"
)

// bwrapArgs runs argv in bubblewrap: every namespace new (a user namespace
// included; the network shared unless noNetwork), no capabilities, a new
// session (no controlling terminal to push keystrokes into), dying with
// vfsd; the host read-only, fresh /dev, /proc (its /proc/sys and kin
// read-only) and /tmp; the writable paths bound read-write where they are,
// the session bound read-write at workDir, and the masks hidden. bwrap
// writes its status to statusFD; a shell tells startedFD that the sandbox
// is up and runs the command (127 when it is not found, 126 when it
// cannot run).
func (s Spec) bwrapArgs() []string {
	args := []string{"--unshare-all", "--unshare-user"}
	if !s.NoNetwork {
		args = append(args, "--share-net")
	}
	args = append(args, "--cap-drop", "ALL", "--new-session", "--die-with-parent",
		"--json-status-fd", strconv.Itoa(statusFD),
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc")
	// In a user namespace bubblewrap leaves /proc/sys writable, and the
	// command's uid 0 is the host's root there: make it read-only, with
	// the other host-wide knobs of /proc.
	for _, p := range procReadOnly {
		args = append(args, "--ro-bind-try", p, p)
	}
	args = append(args, "--tmpfs", "/tmp")
	for _, w := range s.Writable {
		args = append(args, "--bind", w, w)
	}
	args = append(args, "--bind", s.Mountpoint, s.WorkDir)
	for _, m := range outermost(s.masks) {
		if fi, err := os.Stat(m); err == nil && fi.IsDir() {
			args = append(args, "--tmpfs", m, "--remount-ro", m)
		} else {
			args = append(args, "--ro-bind", "/dev/null", m)
		}
	}
	args = append(args, "--chdir", s.WorkDir, "--setenv", "PWD", s.WorkDir, "--",
		"/bin/sh", "-c", `printf x >&`+strconv.Itoa(startedFD)+` && exec `+strconv.Itoa(startedFD)+`>&- && exec "$@"`, "vfsd-run")
	return append(args, s.Argv...)
}

// outermost drops the masks inside a masked directory.
func outermost(masks []string) []string {
	var out []string
	for _, m := range masks {
		inside := false
		for _, o := range masks {
			if o != m && within(o, m) {
				inside = true
			}
		}
		if !inside {
			out = append(out, m)
		}
	}
	return out
}

// procReadOnly are the parts of /proc that act on the whole host, made
// read-only in both sandboxes.
var procReadOnly = []string{"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"}
