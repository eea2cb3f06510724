package httpapi_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
)

// TestDiffShowsLinksModesAndQuotedNames is the attack of issue 11 (finding
// 3): a symlink to "/", a file made 0777 and a name that forges diff lines
// must all be visible, and harmless, in the review diff.
func TestDiffShowsLinksModesAndQuotedNames(t *testing.T) {
	root := t.TempDir()
	proj := filepath.Join(root, "proj")
	require.NoError(t, os.MkdirAll(proj, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(proj, "run.sh"), []byte("echo hi\n"), 0o644))
	cfg := newConfig(t)
	cfg.AllowRoots = []string{root}
	s := start(t, cfg)
	ctx := context.Background()
	c := s.c
	created, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "r", Mounts: []api.Mount{{HostPath: proj, MountPath: "/"}}})
	require.NoError(t, err)
	before := created.Import.Snapshot

	// What an agent's command does in the session, done on the host and
	// imported again: the diff between the two imports is what a review
	// of that command shows.
	const evil = "x\n+++ b/evil\n@@ -0,0 +1 @@\n+\x1b[2Jsafe"
	require.NoError(t, os.Chmod(filepath.Join(proj, "run.sh"), 0o777))
	require.NoError(t, os.Symlink("/", filepath.Join(proj, "rootlink")))
	require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(proj, evil)), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(proj, evil), []byte("boom\n"), 0o644))
	reset, err := c.ResetSession(ctx, "r")
	require.NoError(t, err)
	after := reset.Import.Snapshot

	text, err := c.DiffText(ctx, client.DiffQuery{From: before, To: after})
	require.NoError(t, err)
	t.Logf("the review diff:\n%s", text)
	require.Contains(t, text, "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100777\n")
	require.Contains(t, text, "diff --git a/rootlink b/rootlink\nnew file mode 120000\n")
	require.Contains(t, text, "+++ b/rootlink\n@@ -0,0 +1 @@\n+/\n\\ No newline at end of file\n")
	quoted := `"b/x\n+++ b/evil\n@@ -0,0 +1 @@\n+\033[2Jsafe"`
	require.Contains(t, text, "+++ "+quoted+"\n")
	require.NotContains(t, text, "\x1b", "no raw escape sequence reaches the terminal")
	for _, line := range strings.Split(text, "\n") {
		require.NotEqual(t, "+++ b/evil", line, "a name cannot forge a diff line")
	}

	d, err := c.Diff(ctx, client.DiffQuery{From: before, To: after})
	require.NoError(t, err)
	byPath := map[string]api.DiffEntry{}
	for _, e := range d.Entries {
		byPath[e.Path] = e
	}
	require.Equal(t, "/", byPath["rootlink"].NewTarget, "the structured entry carries the link target")
	require.EqualValues(t, 0o644, byPath["run.sh"].OldMode)
	require.EqualValues(t, 0o777, byPath["run.sh"].NewMode)
}
