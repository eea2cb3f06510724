package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
)

func TestMountsApplyReset(t *testing.T) {
	root := t.TempDir()
	proj := filepath.Join(root, "proj")
	require.NoError(t, os.MkdirAll(filepath.Join(proj, "node_modules/x"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(proj, "main.go"), []byte("package main\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(proj, "keep.txt"), []byte("keep\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(proj, "node_modules/x/i.js"), []byte("x\n"), 0o644))

	cfg := newConfig(t)
	cfg.AllowRoots = []string{root}
	s := start(t, cfg)
	ctx := context.Background()
	c := s.c

	_, err := c.CreateSession(ctx, api.CreateSessionRequest{Mounts: []api.Mount{{HostPath: "/etc"}}})
	requireCode(t, err, api.CodeForbidden)
	_, err = c.CreateSession(ctx, api.CreateSessionRequest{Mounts: []api.Mount{{HostPath: proj, MaxBytes: 3}}})
	requireCode(t, err, api.CodeTooLarge)

	created, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "p",
		Mounts: []api.Mount{{HostPath: proj, MountPath: "/", DefaultExcludes: true}}})
	require.NoError(t, err)
	require.NotNil(t, created.Import)
	require.EqualValues(t, 2, created.Import.Files)
	require.True(t, created.Session.ResetRestages)
	require.Equal(t, created.Import.Snapshot, created.Session.ImportSnapshot)
	call(t, c, "p", "exists", `{"path":"main.go"}`, "ok")

	call(t, c, "p", "edit_file", `{"path":"main.go","old_string":"main","new_string":"app"}`, "ok")
	call(t, c, "p", "write_file", `{"path":"new/n.txt","inline_text":"n\n"}`, "ok")
	call(t, c, "p", "delete_file", `{"path":"keep.txt"}`, "ok")

	dry, err := c.Apply(ctx, "p", true)
	require.NoError(t, err)
	require.True(t, dry.DryRun)
	require.Len(t, dry.Applied, 4) // main.go, new/, new/n.txt, keep.txt
	require.Empty(t, dry.Conflicts)
	b, _ := os.ReadFile(filepath.Join(proj, "main.go"))
	require.Equal(t, "package main\n", string(b), "a dry run writes nothing")

	rep, err := c.Apply(ctx, "p", false)
	require.NoError(t, err)
	require.Len(t, rep.Applied, 4)
	require.NotEmpty(t, rep.ImportSnapshot)
	b, _ = os.ReadFile(filepath.Join(proj, "main.go"))
	require.Equal(t, "package app\n", string(b))
	b, _ = os.ReadFile(filepath.Join(proj, "new/n.txt"))
	require.Equal(t, "n\n", string(b))
	require.NoFileExists(t, filepath.Join(proj, "keep.txt"))

	again, err := c.Apply(ctx, "p", false)
	require.NoError(t, err)
	require.Empty(t, again.Applied, "the next apply starts from what was applied")

	// A host file changed since: a conflict, left alone.
	call(t, c, "p", "write_file", `{"path":"main.go","inline_text":"package mine\n"}`, "ok")
	require.NoError(t, os.WriteFile(filepath.Join(proj, "main.go"), []byte("package theirs\n"), 0o644))
	conflicted, err := c.Apply(ctx, "p", false)
	require.NoError(t, err)
	require.Len(t, conflicted.Conflicts, 1)
	require.Equal(t, rep.ImportSnapshot, conflicted.ImportSnapshot, "nothing applied: the import base stays")
	b, _ = os.ReadFile(filepath.Join(proj, "main.go"))
	require.Equal(t, "package theirs\n", string(b))

	// Reset imports the host again.
	reset, err := c.ResetSession(ctx, "p")
	require.NoError(t, err)
	require.NotNil(t, reset.Import)
	r := call(t, c, "p", "read_file", `{"path":"main.go"}`, "ok")
	require.Equal(t, "package theirs\n", r["inline_text"])
	require.Equal(t, reset.Import.Snapshot, reset.Session.ImportSnapshot)

	// A fork keeps the mounts for apply, and resets to its fork point.
	fork, err := c.ForkSession(ctx, "p", api.CreateSessionRequest{ID: "pf"})
	require.NoError(t, err)
	require.False(t, fork.Session.ResetRestages)
	require.Equal(t, reset.Import.Snapshot, fork.Session.ImportSnapshot)
	call(t, c, "pf", "write_file", `{"path":"fork.txt","inline_text":"f\n"}`, "ok")
	frep, err := c.Apply(ctx, "pf", false)
	require.NoError(t, err)
	require.Len(t, frep.Applied, 1)
	require.FileExists(t, filepath.Join(proj, "fork.txt"))

	// A session without mounts has nothing to apply to.
	_, err = c.CreateSession(ctx, api.CreateSessionRequest{ID: "plain"})
	require.NoError(t, err)
	_, err = c.Apply(ctx, "plain", false)
	requireCode(t, err, api.CodeConflict)
}

func TestBlobs(t *testing.T) {
	cfg := newConfig(t)
	cfg.MaxBlobBytes = 1 << 20
	s := start(t, cfg)
	ctx := context.Background()
	c := s.c
	_, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "b"})
	require.NoError(t, err)

	up, err := c.PutBlob(ctx, strings.NewReader("uploaded content\n"))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(up.BlobRef, "blake3:"))
	require.EqualValues(t, 17, up.SizeBytes)
	call(t, c, "b", "write_file", `{"path":"u.txt","blob_ref":"`+up.BlobRef+`"}`, "ok")
	r := call(t, c, "b", "read_file", `{"path":"u.txt"}`, "ok")
	require.Equal(t, "uploaded content\n", r["inline_text"])

	// A large byte range comes back as a blob, fetched by reference.
	big := strings.Repeat("0123456789abcdef", 8<<10) // 128 KiB
	params, _ := json.Marshal(map[string]string{"path": "big.txt", "inline_text": big})
	call(t, c, "b", "write_file", string(params), "ok")
	r = call(t, c, "b", "read_file", `{"path":"big.txt","offset_bytes":0}`, "ok")
	blob := r["blob"].(map[string]any)
	rc, n, err := c.GetBlob(ctx, blob["blob_ref"].(string))
	require.NoError(t, err)
	got, err := io.ReadAll(rc)
	rc.Close()
	require.NoError(t, err)
	require.EqualValues(t, len(big), n)
	require.Equal(t, big, string(got))

	_, _, err = c.GetBlob(ctx, "blake3:"+strings.Repeat("0", 64))
	requireCode(t, err, api.CodeNotFound)
	_, err = c.PutBlob(ctx, bytes.NewReader(make([]byte, 2<<20)))
	requireCode(t, err, api.CodeTooLarge)
}

func TestImportProgress(t *testing.T) {
	root := t.TempDir()
	for i := range 50 {
		require.NoError(t, os.WriteFile(filepath.Join(root, fmt.Sprintf("f%02d.txt", i)), []byte("content\n"), 0o644))
	}
	cfg := newConfig(t)
	cfg.AllowRoots = []string{root}
	s := start(t, cfg)
	ctx := context.Background()

	var seen []api.Progress
	resp, err := s.c.CreateSessionProgress(ctx, api.CreateSessionRequest{ID: "p", Mounts: []api.Mount{{HostPath: root}}},
		func(p api.Progress) { seen = append(seen, p) })
	require.NoError(t, err)
	require.Equal(t, "p", resp.Session.ID)
	require.EqualValues(t, 50, resp.Import.Files)
	require.NotEmpty(t, seen)
	last := seen[len(seen)-1]
	require.Equal(t, "import", last.Phase)
	require.EqualValues(t, 50, last.Files)
	require.EqualValues(t, 50, last.FilesTotal)

	seen = nil
	reset, err := s.c.ResetSessionProgress(ctx, "p", func(p api.Progress) { seen = append(seen, p) })
	require.NoError(t, err)
	require.EqualValues(t, 50, reset.Import.Cached, "unchanged files come from the cache")
	require.NotEmpty(t, seen)

	// A failure arrives in the stream, with its code and status.
	_, err = s.c.CreateSessionProgress(ctx, api.CreateSessionRequest{Mounts: []api.Mount{{HostPath: "/etc"}}}, nil)
	requireCode(t, err, api.CodeForbidden)
	_, err = s.c.CreateSessionProgress(ctx, api.CreateSessionRequest{ID: "p"}, nil)
	requireCode(t, err, api.CodeAlreadyExists)
}

// TestFolderMistakesSaySo: a host folder that does not exist says so (not
// that it is outside the allowed roots), one outside them names the
// daemon's flag and that it needs a restart, and include globs that
// match nothing stage nothing with a warning, not in silence.
func TestFolderMistakesSaySo(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "main.go"), []byte("package main\n"), 0o644))
	cfg := newConfig(t)
	cfg.AllowRoots = []string{root}
	s := start(t, cfg)
	ctx := context.Background()

	for _, missing := range []string{filepath.Join(root, "typo"), "/no/such/folder"} {
		_, err := s.c.CreateSession(ctx, api.CreateSessionRequest{Mounts: []api.Mount{{HostPath: missing}}})
		requireCode(t, err, api.CodeNotFound)
		require.ErrorContains(t, err, "does not exist")
	}
	outside := t.TempDir()
	_, err := s.c.CreateSession(ctx, api.CreateSessionRequest{Mounts: []api.Mount{{HostPath: outside}}})
	requireCode(t, err, api.CodeForbidden)
	require.ErrorContains(t, err, "restart vfsd serve with --allow-root")

	created, err := s.c.CreateSession(ctx, api.CreateSessionRequest{Mounts: []api.Mount{{HostPath: root, Include: []string{"**/*.gox"}}}})
	require.NoError(t, err)
	require.Zero(t, created.Import.Files)
	require.Len(t, created.Import.Warnings, 1)
	require.Contains(t, created.Import.Warnings[0], "**/*.gox matched nothing")
	created, err = s.c.CreateSession(ctx, api.CreateSessionRequest{Mounts: []api.Mount{{HostPath: root, Include: []string{"**/*.go"}}}})
	require.NoError(t, err)
	require.Empty(t, created.Import.Warnings)

	// A fork of a snapshot has no folders: apply says so, and does not
	// claim that forks can be applied.
	snap, err := s.c.CreateSnapshot(ctx, created.Session.ID, "")
	require.NoError(t, err)
	fork, err := s.c.ForkSnapshot(ctx, snap.ID, api.CreateSessionRequest{})
	require.NoError(t, err)
	_, err = s.c.Apply(ctx, fork.Session.ID, true)
	requireCode(t, err, api.CodeConflict)
	require.ErrorContains(t, err, "a fork of a snapshot")
	require.ErrorContains(t, err, "vfsd diff "+fork.Session.ID)
}
