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
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
)

// TestDaemonRun runs commands with `vfsd run` on a folder, in each
// sandbox: the command sees the folder at its own path and changes it, the
// host folder stays as it was, the diff is printed, the command's status
// is vfsd's, and `vfsd apply` then writes the changes to the host.
func TestDaemonRun(t *testing.T) {
	if !fuseAvailable() {
		t.Skip("vfsd run needs FUSE: root and /dev/fuse")
	}
	for _, sandbox := range []string{"bwrap", "namespace"} {
		t.Run(sandbox, func(t *testing.T) {
			if sandbox == "bwrap" {
				if _, err := exec.LookPath("bwrap"); err != nil {
					t.Skip("bubblewrap is not installed (.ci/run installs it)")
				}
			}
			testRun(t, sandbox)
		})
	}
}

func testRun(t *testing.T, sandbox string) {
	root := t.TempDir()
	project := filepath.Join(root, "project")
	require.NoError(t, os.MkdirAll(filepath.Join(project, "src"), 0o755))
	writeFile(t, filepath.Join(project, "src/a.txt"), "alpha\n")
	writeFile(t, filepath.Join(project, "old.txt"), "old\n")
	writeFile(t, filepath.Join(project, "secret.env"), "TOKEN=1\n")
	dataDir, socket := newDaemonDirs(t)
	p := startDaemon(t, dataDir, socket, "--allow-root", root)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	script := `test "$(pwd)" = "$0" && test ! -e secret.env && echo beta >> src/a.txt && rm old.txt && ` +
		`mkdir -p out && echo built > out/bin.txt && echo "ran in $PWD"; exit 7`
	stdout, stderr, code := p.cli(ctx, nil, "run", "--sandbox", sandbox, "--dir", project,
		"--exclude", "*.env", "--", "sh", "-c", script, project)
	require.Equal(t, 7, code, "the command's status: %s\n%s", stdout, stderr)
	require.Contains(t, stdout, "ran in "+project)
	require.Contains(t, stdout, "+beta")
	require.Contains(t, stdout, "-old")
	require.Contains(t, stdout, "+built")
	require.Contains(t, stderr, "2 added, 1 modified, 1 deleted")
	id := sessionIn(t, stderr)
	require.Contains(t, stderr, "vfsd apply "+id)

	// The host folder is untouched, and nothing stays mounted.
	requireFile(t, filepath.Join(project, "src/a.txt"), "alpha\n")
	requireFile(t, filepath.Join(project, "old.txt"), "old\n")
	require.NoDirExists(t, filepath.Join(project, "out"))
	requireUnmounted(t, id)

	// Applying writes the changes to the host.
	_, stderr, code = p.cli(ctx, nil, "apply", id)
	require.Equal(t, 0, code, stderr)
	requireFile(t, filepath.Join(project, "src/a.txt"), "alpha\nbeta\n")
	requireFile(t, filepath.Join(project, "out/bin.txt"), "built\n")
	require.NoFileExists(t, filepath.Join(project, "old.txt"))
	requireFile(t, filepath.Join(project, "secret.env"), "TOKEN=1\n")

	// --json: the session, the status and the diff; no changes here.
	stdout, stderr, code = p.cli(ctx, nil, "run", "--sandbox", sandbox, "--dir", project, "--json", "--", "true")
	require.Equal(t, 0, code, stderr)
	var res struct {
		Session  string   `json:"session"`
		Dir      string   `json:"dir"`
		ExitCode int      `json:"exit_code"`
		Diff     api.Diff `json:"diff"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &res), stdout)
	require.Equal(t, project, res.Dir)
	require.Empty(t, res.Diff.Entries)

	// Failures of vfsd's own are 125 and say what to do.
	_, stderr, code = p.cli(ctx, nil, "run", "--sandbox", sandbox, "--dir", t.TempDir(), "--", "true")
	require.Equal(t, 125, code)
	require.Contains(t, stderr, "--allow-root")
	_, stderr, code = p.cli(ctx, nil, "run", "--dir", project, "true")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "put the command after --")
	_, stderr, code = p.cli(ctx, nil, "run", "--sandbox", sandbox, "--dir", project, "--", "no-such-command-vfsd")
	require.Equal(t, 127, code, stderr)
	_, stderr, code = p.cli(ctx, nil, "run", "--sandbox", sandbox, "--dir", project, "--", "./no-such-command-vfsd")
	require.Equal(t, 127, code, stderr)

	// Stopping vfsd stops the command, takes the mount down and still
	// reports the diff; the status says it was stopped.
	marks := t.TempDir()
	run := exec.CommandContext(ctx, p.bin, "run", "--sandbox", sandbox, "--dir", project, "--rw", marks, "--",
		"sh", "-c", "echo partial > partial.txt; touch "+marks+"/started; sleep 60")
	run.Env = append(os.Environ(), "VFSD_SOCKET="+p.socket)
	var runOut, runErr strings.Builder
	run.Stdout, run.Stderr = &runOut, &runErr
	require.NoError(t, run.Start())
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(marks, "started"))
		return err == nil
	}, time.Minute, 20*time.Millisecond, "the command did not start: %s", &runErr)
	start := time.Now()
	require.NoError(t, run.Process.Signal(syscall.SIGTERM))
	err := run.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, runErr.String())
	require.Equal(t, 128+int(syscall.SIGTERM), ee.ExitCode(), runErr.String())
	require.Less(t, time.Since(start), 30*time.Second, "the command was stopped, not waited for")
	require.Contains(t, runOut.String(), "+partial")
	requireUnmounted(t, sessionIn(t, runErr.String()))
}

// requireUnmounted requires that no FUSE mount of session id is left.
func requireUnmounted(t *testing.T, id string) {
	t.Helper()
	mounts, err := os.ReadFile("/proc/self/mounts")
	require.NoError(t, err)
	require.NotContains(t, string(mounts), "vfsd:"+id+" ")
}

// sessionIn finds the session vfsd run reported on stderr.
func sessionIn(t *testing.T, stderr string) string {
	t.Helper()
	for _, line := range strings.Split(stderr, "\n") {
		if rest, ok := strings.CutPrefix(line, "vfsd: session "); ok {
			id, _, _ := strings.Cut(rest, ":")
			return id
		}
	}
	t.Fatalf("no session in:\n%s", stderr)
	return ""
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

func requireFile(t *testing.T, path, content string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, content, string(b))
}

// TestRunWithoutDaemon runs `vfsd run` with no daemon about: it runs one in
// its own process on the default data directory, keeps the session there
// for the next `vfsd serve`, and with --apply writes the changes at once.
func TestRunWithoutDaemon(t *testing.T) {
	if !fuseAvailable() {
		t.Skip("vfsd run needs FUSE: root and /dev/fuse")
	}
	root := t.TempDir()
	project := filepath.Join(root, "project")
	require.NoError(t, os.MkdirAll(project, 0o755))
	writeFile(t, filepath.Join(project, "a.txt"), "a\n")
	state, runtime := t.TempDir(), shortTempDir(t)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "VFSD_") && !strings.HasPrefix(kv, "XDG_") {
			env = append(env, kv)
		}
	}
	env = append(env, "XDG_STATE_HOME="+state, "XDG_RUNTIME_DIR="+runtime)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	vfsd := func(args ...string) (string, string, int) {
		cmd := exec.CommandContext(ctx, vfsdBinary(t), args...)
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

	stdout, stderr, code := vfsd("run", "--sandbox", "namespace", "--dir", project, "--", "sh", "-c", "echo kept >> a.txt")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "+kept")
	require.Contains(t, stderr, "the session is kept in "+filepath.Join(state, "vfsd"))
	id := sessionIn(t, stderr)
	requireFile(t, filepath.Join(project, "a.txt"), "a\n")

	// The run says which backend served it and why; a build's caches
	// are writable (in the private /tmp); a run that changed nothing
	// leaves no session behind.
	require.Contains(t, stderr, "vfsd: mounted with ")
	_, stderr, code = vfsd("run", "--sandbox", "namespace", "--dir", project, "--", "sh", "-c",
		`mkdir -p "$XDG_CACHE_HOME/go-build" && echo c > "$XDG_CACHE_HOME/go-build/x" && mkdir -p "$npm_config_cache"`)
	require.Equal(t, 0, code, stderr)
	require.Regexp(t, `no changes to .*; session \S+ dropped \(vfsd run --keep keeps such a session\)`, stderr)
	_, stderr, code = vfsd("run", "--sandbox", "namespace", "--dir", project, "--keep", "--", "true")
	require.Equal(t, 0, code, stderr)
	kept := sessionIn(t, stderr)
	_, stderr, code = vfsd("session", "close", kept)
	require.Equal(t, 0, code, stderr)

	_, stderr, code = vfsd("run", "--sandbox", "namespace", "--dir", project, "--apply", "--", "sh", "-c", "echo now > b.txt")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stderr, "applied 1 changes to "+project)
	requireFile(t, filepath.Join(project, "b.txt"), "now\n")

	// The command of a daemon that runs in vfsd run's own process holds no
	// descriptor of /dev/fuse: with one it could answer the session's FUSE
	// requests itself (mount.TestFuseDeviceNotInherited is the unit test).
	sandboxes := []string{"namespace"}
	if _, err := exec.LookPath("bwrap"); err == nil {
		sandboxes = append(sandboxes, "bwrap")
	}
	for _, sb := range sandboxes {
		stdout, stderr, code = vfsd("run", "--sandbox", sb, "--dir", project, "--apply", "--",
			"sh", "-c", `for f in /proc/self/fd/*; do readlink "$f"; done; true`)
		require.Equal(t, 0, code, stderr)
		require.NotContains(t, stdout, "/dev/fuse", "%s sandbox: the command's descriptors:\n%s", sb, stdout)
	}

	// The next daemon on the data directory has the kept session (and not
	// the applied one), and applies it.
	p := startDaemon(t, filepath.Join(state, "vfsd"), filepath.Join(runtime, "d.sock"), "--allow-root", root)
	sessions, err := p.client().Sessions(ctx)
	require.NoError(t, err)
	require.Len(t, sessions, 1)
	require.Equal(t, id, sessions[0].ID)
	_, stderr, code = p.cli(ctx, nil, "apply", id)
	require.Equal(t, 0, code, stderr)
	requireFile(t, filepath.Join(project, "a.txt"), "a\nkept\n")
	p.stop()

	// git status in a repository rewrites .git/index to refresh its stat
	// cache: that is no change to review; git add is one.
	if _, err := exec.LookPath("git"); err != nil {
		t.Log("git is not installed: the git index part is skipped")
		return
	}
	repo := filepath.Join(root, "repo")
	require.NoError(t, os.MkdirAll(repo, 0o755))
	writeFile(t, filepath.Join(repo, "main.go"), "package main\n")
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	stdout, stderr, code = vfsd("run", "--sandbox", "namespace", "--dir", repo, "--", "git", "status", "--porcelain")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stderr, ".git/index: only git's stat cache changed")
	require.Contains(t, stderr, "no changes to "+repo)
	require.NotContains(t, stdout, "Binary files")
	stdout, stderr, code = vfsd("run", "--sandbox", "namespace", "--dir", repo, "--", "sh", "-c", "echo x > new.txt && git add new.txt")
	require.Equal(t, 0, code, stderr)
	require.NotContains(t, stderr, "only git's stat cache changed")
	require.Contains(t, stdout, "new.txt")
	require.Contains(t, stdout, ".git/index")
}

// shortTempDir is a temporary directory with a path short enough for Unix
// sockets.
func shortTempDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "vfsd")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
