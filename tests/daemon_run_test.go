package tests

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	stdout, stderr, code := p.cli(ctx, nil, "run", "--sandbox", sandbox, "--mount", project,
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
	mounts, err := os.ReadFile("/proc/self/mounts")
	require.NoError(t, err)
	require.NotContains(t, string(mounts), "vfsd-run-")

	// Applying writes the changes to the host.
	_, stderr, code = p.cli(ctx, nil, "apply", id)
	require.Equal(t, 0, code, stderr)
	requireFile(t, filepath.Join(project, "src/a.txt"), "alpha\nbeta\n")
	requireFile(t, filepath.Join(project, "out/bin.txt"), "built\n")
	require.NoFileExists(t, filepath.Join(project, "old.txt"))
	requireFile(t, filepath.Join(project, "secret.env"), "TOKEN=1\n")

	// --json: the session, the status and the diff; no changes here.
	stdout, stderr, code = p.cli(ctx, nil, "run", "--sandbox", sandbox, "--mount", project, "--json", "--", "true")
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
	_, stderr, code = p.cli(ctx, nil, "run", "--sandbox", sandbox, "--mount", t.TempDir(), "--", "true")
	require.Equal(t, 125, code)
	require.Contains(t, stderr, "--allow-root")
	_, stderr, code = p.cli(ctx, nil, "run", "--mount", project, "true")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "put the command after --")
	if sandbox == "namespace" {
		_, stderr, code = p.cli(ctx, nil, "run", "--sandbox", sandbox, "--mount", project, "--", "no-such-command-vfsd")
		require.Equal(t, 127, code, stderr)
	}
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
