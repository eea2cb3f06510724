//go:build linux

package tests

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
)

// noDaemonEnv is the environment of a vfsd with no daemon about: no VFSD_*
// variables, and state and runtime directories of its own.
func noDaemonEnv(t *testing.T) (env []string, dataDir string) {
	state, runtime := t.TempDir(), shortTempDir(t)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "VFSD_") && !strings.HasPrefix(kv, "XDG_") {
			env = append(env, kv)
		}
	}
	return append(env, "XDG_STATE_HOME="+state, "XDG_RUNTIME_DIR="+runtime), filepath.Join(state, "vfsd")
}

// vfsdCLI returns a function running the vfsd binary with env: stdout,
// stderr and the exit code.
func vfsdCLI(ctx context.Context, t *testing.T, env []string) func(args ...string) (string, string, int) {
	bin := vfsdBinary(t)
	return func(args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = env
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return stdout.String(), stderr.String(), ee.ExitCode()
		}
		require.NoError(t, err)
		return stdout.String(), stderr.String(), 0
	}
}

// TestCLIWithoutDaemon drives every kind of verb with no daemon running:
// each runs one inside itself on the default data directory (apply,
// session close and session list used to fail), allowing the host folders
// it names or its session's; vfsd mount refuses, saying why.
func TestCLIWithoutDaemon(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env, dataDir := noDaemonEnv(t)
	vfsd := vfsdCLI(ctx, t, env)
	project := filepath.Join(t.TempDir(), "my project")
	require.NoError(t, os.MkdirAll(project, 0o755))
	writeFile(t, filepath.Join(project, "a.txt"), "a\n")

	out, errOut, code := vfsd("session", "create", "--id", "w", "--folder", project+"=/", "--label", "no daemon")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "created session w")

	// vfsd version says which build this is: its commit (where git can
	// tell it) and when the binary was built.
	out, errOut, code = vfsd("version")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "built: ")
	if head, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil {
		require.Contains(t, out, "commit "+string(head[:12]), "built from a git work tree: the commit is shown")
	}

	// An error names the command to run first, the route after it.
	_, errOut, code = vfsd("session", "show", "nosuch")
	require.NotEqual(t, 0, code)
	require.Contains(t, errOut, "vfsd session list (GET /v1/sessions)")

	out, errOut, code = vfsd("session", "list")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "CREATED")
	require.Contains(t, out, "no daemon")
	require.Contains(t, out, project+"=/")
	out, _, code = vfsd("session", "list", "-q")
	require.Equal(t, 0, code)
	require.Equal(t, "w\n", out)

	out, errOut, code = vfsd("tool", "w", "write_file", "--params", `{"path":"b.txt","content":"b\n"}`)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `"status":"ok"`)
	out, errOut, code = vfsd("diff", "w")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "+b")
	out, errOut, code = vfsd("apply", "w")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "1 changes applied")
	requireFile(t, filepath.Join(project, "b.txt"), "b\n")

	// vfsd mount needs a daemon that stays; listing the mounts does not.
	_, errOut, code = vfsd("mount", "w", t.TempDir())
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "needs one that keeps running")
	require.Contains(t, errOut, "vfsd serve")
	out, errOut, code = vfsd("mount")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "no mounts")

	// vfsd run --session reruns a command in the session, without a daemon.
	if fuseAvailable() {
		out, errOut, code = vfsd("run", "--sandbox", "namespace", "--session", "w", "--", "sh", "-c", "echo again >> a.txt && cat b.txt")
		require.Equal(t, 0, code, errOut)
		require.Contains(t, out, "b\n", "the command sees the session")
		require.Contains(t, out, "+again")
		require.NotContains(t, out, "+b", "the diff is this run's")
		require.Contains(t, errOut, "undo this run:  vfsd snapshot restore w ")
		requireFile(t, filepath.Join(project, "a.txt"), "a\n")
		out, errOut, code = vfsd("run", "--sandbox", "namespace", "--session", "w", "--apply", "--", "true")
		require.Equal(t, 0, code, errOut)
		requireFile(t, filepath.Join(project, "a.txt"), "a\nagain\n")
		out, _, _ = vfsd("session", "list", "-q")
		require.Equal(t, "w\n", out, "--apply keeps a session it did not create")
	}

	out, errOut, code = vfsd("session", "rm", "w")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "closed session w")
	out, _, _ = vfsd("session", "list", "-q")
	require.Empty(t, out)
	_, err := os.Stat(dataDir)
	require.NoError(t, err, "the state is in the default data directory")
}

// TestCLIPolish checks the CLI's edges against a running daemon: version,
// usage errors (exit 2, naming real commands), deprecated flag names that
// warn, shell completion of session IDs, and the FUSE mount's refusals,
// plain umount, vfsd unmount and a re-mount, and "." and "..".
func TestCLIPolish(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	root := t.TempDir()
	project := filepath.Join(root, "app")
	require.NoError(t, os.MkdirAll(project, 0o755))
	writeFile(t, filepath.Join(project, "a.txt"), "a\n")
	dataDir, socket := newDaemonDirs(t)
	p := startDaemon(t, dataDir, socket, "--allow-root", root)
	cli := func(args ...string) (string, string, int) { return p.cli(ctx, nil, args...) }

	out, _, code := cli("--version")
	require.Equal(t, 0, code)
	require.True(t, strings.HasPrefix(out, "vfsd "), out)
	out, _, code = cli("version", "--json")
	require.Equal(t, 0, code)
	var v struct {
		Version string `json:"version"`
		Daemon  *struct {
			Version string `json:"version"`
		} `json:"daemon"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &v), out)
	require.NotEmpty(t, v.Version)
	require.NotNil(t, v.Daemon, "the running daemon's version")

	for _, tc := range []struct {
		args []string
		hint string
	}{
		{[]string{"nonsense"}, "see 'vfsd --help'"},
		{[]string{"sesion", "list"}, "did you mean session"},
		{[]string{"--bogus"}, "see 'vfsd --help'"},
		{[]string{"session", "create", "--bogus"}, "see 'vfsd session create --help'"},
		{[]string{"session", "show"}, "see 'vfsd session show --help'"},
		{[]string{"session", "nope"}, "see 'vfsd session --help'"},
		{[]string{"mount", "x"}, "see 'vfsd mount --help'"},
		{[]string{"diff"}, "see 'vfsd diff --help'"},
		{[]string{"run", "--dir", project, "true"}, "put the command after --"},
		{[]string{"run", "--session", "x", "--exclude", "*.go", "--", "true"}, "--exclude shapes a new session"},
		{[]string{"tool", "x", "read_file", "--params", "{", "--json", "{}"}, "--params"},
	} {
		_, errOut, code := cli(tc.args...)
		require.Equal(t, 2, code, "%v: %s", tc.args, errOut)
		require.Contains(t, errOut, tc.hint, tc.args)
		require.NotContains(t, errOut, "vfsd vfsd", tc.args)
	}

	// The old flag names work and warn.
	out, errOut, code := cli("session", "create", "--id", "s", "--mount", project+"=/", "--label", "polish")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "--mount is deprecated and will go: use --folder")
	out, errOut, code = cli("tool", "s", "read_file", "--json", `{"path":"a.txt"}`)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `"status":"ok"`)
	require.Contains(t, errOut, "--json is deprecated and will go: use --params")

	// Completion of session IDs asks the daemon.
	out, errOut, code = cli("__complete", "session", "show", "")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "s\tpolish")
	out, _, _ = cli("__complete", "run", "--session", "")
	require.Contains(t, out, "s\t")
	out, _, _ = cli("__complete", "apply", "s", "")
	require.NotContains(t, out, "s\t", "apply takes one session")

	if !fuseAvailable() {
		t.Skip("the mount checks need FUSE: root and /dev/fuse")
	}
	mnt := filepath.Join(root, "mnt")
	full := filepath.Join(root, "full")
	require.NoError(t, os.Mkdir(mnt, 0o755))
	require.NoError(t, os.Mkdir(full, 0o755))
	writeFile(t, filepath.Join(full, "keep"), "k")
	_, errOut, code = cli("mount", "s", full)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "it is not empty")
	_, errOut, code = cli("mount", "s", mnt)
	require.Equal(t, 0, code, errOut)
	_, errOut, code = cli("mount", "s", mnt)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "already mounted")
	out, _, code = cli("mount")
	require.Equal(t, 0, code)
	require.Contains(t, out, mnt)

	// ls -a in a subprocess (a test must not read its own mount's
	// directories in-process only through Go, which hides . and ..).
	ls, err := exec.CommandContext(ctx, "ls", "-a", mnt).CombinedOutput()
	require.NoError(t, err, string(ls))
	require.Equal(t, []string{".", "..", "a.txt"}, strings.Fields(string(ls)))

	// A plain umount, then vfsd unmount and a mount again, work.
	umount, err := exec.CommandContext(ctx, "umount", mnt).CombinedOutput()
	require.NoError(t, err, string(umount))
	_, errOut, code = cli("unmount", mnt)
	require.Equal(t, 0, code, errOut)
	_, errOut, code = cli("mount", "s", mnt)
	require.Equal(t, 0, code, errOut)
	umount, err = exec.CommandContext(ctx, "umount", mnt).CombinedOutput()
	require.NoError(t, err, string(umount))
	_, errOut, code = cli("mount", "s", mnt)
	require.Equal(t, 0, code, "a mount unmounted behind the daemon's back does not block a new one: %s", errOut)
	s, err := p.client().Session(ctx, "s")
	require.NoError(t, err)
	require.Equal(t, []api.FuseMount{{Dir: mnt, DefaultPermissions: true, BackendWhy: "asked for"}}, s.FuseMounts)
	_, errOut, code = cli("unmount", mnt)
	require.Equal(t, 0, code, errOut)
}
