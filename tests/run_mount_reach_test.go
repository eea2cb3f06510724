//go:build linux

package tests

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/internal/mountinfo"
	"github.com/vfsd/vfsd/mount/overlay"
)

// TestRunMountUnreachableFromHost replays the finding "a vfsd run command
// makes a setuid-root binary that nobody runs from the host": inside the
// sandbox, uid 0 (no capabilities) copies id and chmods it 4755; while the
// command is still running, nobody on the host looks for the session's
// mount (mountinfo shows every mount point) and runs the copy through it.
// The mount point must be out of nobody's reach (a path walk crosses into
// the mount's root, whose mode is the session's, so a 0700 mount point
// directory is no barrier: its parent must be), and were it reached, the
// mount is nosuid. Both backends; the sandbox is the default one.
func TestRunMountUnreachableFromHost(t *testing.T) {
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("needs setpriv(1) (util-linux) to act as nobody")
	}
	f := newSandboxFixture(t)
	for _, backend := range []string{"overlay", "fuse"} {
		t.Run(backend, func(t *testing.T) {
			if backend == "overlay" && overlay.Available() != nil {
				t.Skipf("the overlay backend is unavailable here: %v", overlay.Available())
			}
			syncDir := filepath.Join(f.base, "sync-"+backend)
			require.NoError(t, os.MkdirAll(syncDir, 0o755))
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			script := `cp /usr/bin/id ./id && chmod 4755 ./id && touch "$0/ready" &&
				i=0; while [ ! -e "$0/done" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done`
			cmd := exec.CommandContext(ctx, f.p.bin, "run", "--backend", backend, "--rw", syncDir, "--dir", f.project,
				"--", "sh", "-c", script, syncDir)
			cmd.Env = append(os.Environ(), "VFSD_SOCKET="+f.p.socket)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Start())
			exited := make(chan struct{})
			var waitErr error
			go func() { waitErr = cmd.Wait(); close(exited) }()
			finish := sync.OnceFunc(func() {
				os.WriteFile(filepath.Join(syncDir, "done"), nil, 0o644)
				select {
				case <-exited:
				case <-ctx.Done():
				}
			})
			defer finish()

			deadline := time.Now().Add(time.Minute)
			for {
				if _, err := os.Stat(filepath.Join(syncDir, "ready")); err == nil {
					break
				}
				select {
				case <-exited:
					require.FailNow(t, "vfsd run ended before the command was ready", "%v\n%s\n%s", waitErr, stdout.String(), stderr.String())
				default:
				}
				if time.Now().After(deadline) {
					finish() // vfsd run has ended: its output is whole
					require.FailNow(t, "the command never got ready", stderr.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
			mp := runMountPoint(t)
			// The file is there, set-user-ID root, for root on the host.
			var st unix.Stat_t
			require.NoError(t, unix.Lstat(filepath.Join(mp, "id"), &st))
			require.EqualValues(t, 0o4755, st.Mode&0o7777)
			require.Zero(t, st.Uid)

			asNobody := func(args ...string) (string, error) {
				// setpriv keeps its capabilities across the uid change
				// (PR_SET_KEEPCAPS) until it executes: the shell it runs
				// has none, and walks the path as nobody.
				c := exec.CommandContext(ctx, setpriv, append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "--",
					"/bin/sh", "-c", `exec "$0" "$@"`}, args...)...)
				c.Dir = "/"
				out, err := c.CombinedOutput()
				return strings.TrimSpace(string(out)), err
			}
			out, err := asNobody(filepath.Join(mp, "id"), "-u")
			require.NotEqual(t, "0", out, "nobody ran the command's setuid copy of id from %s with euid 0", mp)
			require.Error(t, err, "nobody reached the mount at %s: %s", mp, out)
			out, err = asNobody("stat", mp)
			require.Error(t, err, "nobody reached the mount point %s: %s", mp, out)
			require.Contains(t, out, "Permission denied")

			finish()
			require.NotNil(t, cmd.ProcessState, "vfsd run did not end")
			require.Zero(t, cmd.ProcessState.ExitCode(), "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
		})
	}
}

// runMountPoint finds the mount point of the one vfsd run in progress in
// mountinfo, as any host user can.
func runMountPoint(t *testing.T) string {
	t.Helper()
	ms, err := mountinfo.Read()
	require.NoError(t, err)
	var found []string
	for _, m := range ms {
		if strings.HasPrefix(m.Source, "vfsd:") && strings.Contains(m.MountPoint, "vfsd-run-") {
			found = append(found, m.MountPoint)
		}
	}
	require.Len(t, found, 1, "the run's mount in mountinfo:\n%+v", ms)
	return found[0]
}

// TestRunSandboxMountsNosuid: inside either sandbox, the session and the
// --rw paths are mounted nosuid and nodev too (the host read-only view is,
// as /tmp is), so nothing the command finds or makes there is honoured as
// set-ID, a file capability or a device.
func TestRunSandboxMountsNosuid(t *testing.T) {
	f := newSandboxFixture(t)
	for _, sandbox := range []string{"bwrap", "namespace"} {
		t.Run(sandbox, func(t *testing.T) {
			if sandbox == "bwrap" {
				if _, err := exec.LookPath("bwrap"); err != nil {
					t.Skip("bubblewrap is not installed (.ci/run installs it)")
				}
			}
			rw := filepath.Join(f.base, "rw-flags-"+sandbox)
			require.NoError(t, os.MkdirAll(rw, 0o755))
			stdout, stderr, code := f.run(t, runOpts{}, "--sandbox", sandbox, "--rw", rw, "--dir", f.project, "--",
				"cat", "/proc/self/mountinfo")
			require.Equal(t, 0, code, stderr)
			seen := map[string]bool{}
			ms, err := mountinfo.Parse(strings.NewReader(stdout))
			require.NoError(t, err)
			for _, m := range ms {
				mp, opts := m.MountPoint, ","+m.Options+","
				if mp != f.project && mp != rw && mp != "/" {
					continue
				}
				seen[mp] = true
				require.Contains(t, opts, ",nosuid,", "%s is not nosuid in the sandbox: %+v", mp, m)
				require.Contains(t, opts, ",nodev,", "%s is not nodev in the sandbox: %+v", mp, m)
			}
			require.True(t, seen[f.project] && seen[rw] && seen["/"], "mounts not found:\n%s", stdout)
		})
	}
}

// TestRunApplyWritesNoSetID: the command's chmod 4755 copy of id reaches
// the host folder with --apply without its set-ID bit, and the report says
// so; the old apply wrote it set-user-ID root into the folder.
func TestRunApplyWritesNoSetID(t *testing.T) {
	f := newSandboxFixture(t)
	_, stderr, code := f.run(t, runOpts{}, "--apply", "--dir", f.project, "--",
		"sh", "-c", "cp /usr/bin/id ./id && chmod 4755 ./id")
	require.Equal(t, 0, code, stderr)
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(filepath.Join(f.project, "id"), &st))
	require.EqualValues(t, 0o755, st.Mode&0o7777, "the host got the command's set-user-ID file")
	require.Contains(t, stderr, "set-ID bits not applied")
}
