package tests

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
)

// TestDaemonCLI drives a real `vfsd serve` with the vfsd binary's own
// client verbs, the way a person or a script would.
func TestDaemonCLI(t *testing.T) {
	root := t.TempDir()
	proj := filepath.Join(root, "proj")
	require.NoError(t, os.MkdirAll(filepath.Join(proj, "src"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(proj, "src/main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(proj, "README.md"), []byte("# proj\n"), 0o644))

	dataDir, socket := newDaemonDirs(t)
	p := startDaemon(t, dataDir, socket, "--allow-root", root)
	ctx := context.Background()
	run := func(wantCode int, args ...string) string {
		t.Helper()
		out, errOut, code := p.cli(ctx, nil, args...)
		require.Equal(t, wantCode, code, "vfsd %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), out, errOut)
		if wantCode != 0 {
			require.NotEmpty(t, errOut, "a failure says why on stderr")
			return errOut
		}
		return out
	}

	out := run(0, "session", "create", "--id", "p", "--folder", proj+"=/", "--exclude", "README.md", "--json")
	var created api.CreateSessionResponse
	require.NoError(t, json.Unmarshal([]byte(out), &created))
	require.Equal(t, "p", created.Session.ID)
	require.EqualValues(t, 1, created.Import.Files)

	out = run(0, "session", "list")
	require.Contains(t, out, "p ")
	out = run(0, "tool", "p", "edit_file", "--params", `{"path":"src/main.go","old_string":"func main() {}","new_string":"func main() { println(1) }"}`)
	require.Contains(t, out, `"status":"ok"`)
	out = run(1, "tool", "p", "read_file", "--params", `{"path":"README.md"}`)
	require.Contains(t, out, "did not succeed")
	out = run(0, "tool", "p", "read_file", "--params", `{"path":"src/main.go"}`, "--text")
	require.Contains(t, out, "println(1)")

	out = run(0, "snapshot", "create", "p", "--label", "edited", "--json")
	var snap api.Snapshot
	require.NoError(t, json.Unmarshal([]byte(out), &snap))
	out = run(0, "snapshot", "diff", "--session", "p", "--from", "import")
	require.Contains(t, out, "+func main() { println(1) }")
	out = run(0, "snapshot", "list", "--session", "p")
	require.Contains(t, out, snap.ID[:12])
	require.Contains(t, run(0, "snapshot", "show", snap.ID[:8]), "edited")

	out = run(0, "apply", "p", "--dry-run")
	require.Contains(t, out, "would apply")
	b, _ := os.ReadFile(filepath.Join(proj, "src/main.go"))
	require.NotContains(t, string(b), "println")
	run(0, "apply", "p")
	b, _ = os.ReadFile(filepath.Join(proj, "src/main.go"))
	require.Contains(t, string(b), "println(1)")

	out = run(0, "snapshot", "fork", snap.ID[:8], "--id", "f")
	require.Contains(t, out, "created session f")
	require.Contains(t, out, "token: vfsd_sess_")
	run(0, "snapshot", "restore", "p", snap.ID)
	require.Contains(t, run(0, "snapshot", "diff", "session:p", "session:f", "--stat"), "0 added, 0 modified, 0 deleted")
	require.Contains(t, run(0, "snapshot", "gc"), "deleted")
	out, errOut, code := p.cli(ctx, nil, "session", "reset", "p", "--progress")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "imported its folders again")
	require.Contains(t, errOut, "importing: 1/1 files", "--progress shows the import on stderr")
	require.Contains(t, run(0, "session", "show", "p"), "folder    "+proj+" -> /")

	// Usage errors exit 2, failures 1, each saying what to do.
	require.Contains(t, run(2, "session", "show"), "accepts 1 arg")
	require.Contains(t, run(2, "snapshot", "diff", "only-one"), "accepts 2 arg")
	require.Contains(t, run(2, "tool", "p"), "give SESSION and NAME")
	require.Contains(t, run(1, "session", "show", "ghost"), "vfsd session list")
	require.Contains(t, run(1, "--socket", filepath.Join(t.TempDir(), "none.sock"), "session", "list"), "start it with vfsd serve")

	run(0, "session", "close", "f")
	require.Contains(t, run(1, "session", "close", "f"), "not_found")

	// Snapshots can be deleted, except one a live session needs; a purge
	// drops a closed session's own.
	out = run(0, "session", "create", "--id", "q", "--json")
	extra := run(0, "snapshot", "create", "q", "--label", "extra", "--json")
	var extraSnap api.Snapshot
	require.NoError(t, json.Unmarshal([]byte(extra), &extraSnap))
	require.Contains(t, run(0, "snapshot", "rm", extraSnap.ID[:10]), "deleted snapshot "+extraSnap.ID)
	require.Contains(t, run(1, "snapshot", "rm", created.Session.ImportSnapshot[:10]), "in use by session p")
	run(0, "snapshot", "create", "q", "--label", "mine")
	run(0, "session", "close", "q", "--purge")
	require.NotContains(t, run(0, "snapshot", "list"), "mine")
	require.Contains(t, run(2, "serve", "--max-session-bytes", "lots"), "not a size")

	if fuseAvailable() {
		mnt := t.TempDir()
		run(0, "mount", "p", mnt)
		b, err := os.ReadFile(filepath.Join(mnt, "src/main.go"))
		require.NoError(t, err)
		require.Contains(t, string(b), "println(1)")
		run(0, "unmount", mnt)
		require.NoFileExists(t, filepath.Join(mnt, "src/main.go"))
	}

	p.stop()
	require.NoFileExists(t, socket, "a graceful stop removes the socket")
}

// fuseAvailable reports whether this machine can mount FUSE file systems.
func fuseAvailable() bool {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return false
	}
	return os.Geteuid() == 0
}
