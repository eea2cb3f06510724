package httpapi_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
	"github.com/vfsd/vfsd/vfs"
)

func TestSnapshotsForksDiffs(t *testing.T) {
	s := start(t, newConfig(t))
	ctx := context.Background()
	c := s.c
	_, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "w"})
	require.NoError(t, err)
	call(t, c, "w", "write_file", `{"path":"a.txt","inline_text":"one\n"}`, "ok")

	snap, err := c.CreateSnapshot(ctx, "w", "first")
	require.NoError(t, err)
	require.Len(t, snap.ID, 64)
	require.Equal(t, "first", snap.Label)
	require.Equal(t, "w", snap.Session)
	require.EqualValues(t, 1, snap.Files)

	got, err := c.Snapshot(ctx, snap.ID[:8])
	require.NoError(t, err, "a unique prefix names a snapshot")
	require.Equal(t, snap.ID, got.ID)

	call(t, c, "w", "edit_file", `{"path":"a.txt","old_string":"one","new_string":"two"}`, "ok")
	call(t, c, "w", "write_file", `{"path":"b.txt","inline_text":"bee\n"}`, "ok")

	d, err := c.SessionDiff(ctx, "w", client.DiffQuery{From: snap.ID, Text: true})
	require.NoError(t, err)
	require.Equal(t, 1, d.Added)
	require.Equal(t, 1, d.Modified)
	require.Equal(t, "live", d.To)
	require.Contains(t, d.Entries[0].Text, "-one\n+two\n")

	d, err = c.SessionDiff(ctx, "w", client.DiffQuery{})
	require.NoError(t, err, "base..live of a session that started empty")
	require.Equal(t, 2, d.Added)

	text, err := c.SessionDiffText(ctx, "w", client.DiffQuery{From: snap.ID})
	require.NoError(t, err)
	require.Contains(t, text, "--- a/a.txt\n+++ b/a.txt\n")
	require.Contains(t, text, "+++ b/b.txt\n")

	_, err = c.SessionDiff(ctx, "w", client.DiffQuery{From: "import"})
	requireCode(t, err, api.CodeInvalidInput)

	// Fork the live session and the snapshot; both are isolated.
	fork, err := c.ForkSession(ctx, "w", api.CreateSessionRequest{ID: "w2"})
	require.NoError(t, err)
	require.Equal(t, "w", fork.Session.ForkOf)
	require.NotEmpty(t, fork.Token)
	old, err := c.ForkSnapshot(ctx, snap.ID[:10], api.CreateSessionRequest{})
	require.NoError(t, err)
	require.Equal(t, snap.ID, old.Session.Base)
	r := call(t, c, old.Session.ID, "read_file", `{"path":"a.txt"}`, "ok")
	require.Equal(t, "one\n", r["inline_text"])
	call(t, c, "w2", "write_file", `{"path":"c.txt","inline_text":"sea\n"}`, "ok")
	call(t, c, "w", "exists", `{"path":"c.txt"}`, "ok")
	ex := call(t, c, "w", "exists", `{"path":"c.txt"}`, "ok")
	require.Equal(t, false, ex["exists"])

	_, err = c.ForkSession(ctx, "w", api.CreateSessionRequest{Base: snap.ID})
	requireCode(t, err, api.CodeInvalidInput)

	gd, err := c.Diff(ctx, client.DiffQuery{From: "session:w", To: "session:w2"})
	require.NoError(t, err)
	require.Equal(t, 1, gd.Added)
	require.Equal(t, "c.txt", gd.Entries[0].Path)
	gt, err := c.DiffText(ctx, client.DiffQuery{From: snap.ID, To: "session:w2"})
	require.NoError(t, err)
	require.Contains(t, gt, "+sea\n")

	// Restore.
	view, err := c.Restore(ctx, "w", snap.ID)
	require.NoError(t, err)
	require.Equal(t, snap.ID, view.LastSnapshot)
	r = call(t, c, "w", "read_file", `{"path":"a.txt"}`, "ok")
	require.Equal(t, "one\n", r["inline_text"])
	_, err = c.Restore(ctx, "w", "")
	requireCode(t, err, api.CodeInvalidInput)

	// Listings.
	mine, err := c.SessionSnapshots(ctx, "w")
	require.NoError(t, err)
	require.NotEmpty(t, mine)
	for _, sn := range mine {
		require.Equal(t, "w", sn.Session)
	}
	all, err := c.Snapshots(ctx, "")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(all), len(mine))
	filtered, err := c.Snapshots(ctx, "w")
	require.NoError(t, err)
	require.Equal(t, mine, filtered)

	rep, err := c.GC(ctx)
	require.NoError(t, err)
	require.Positive(t, rep.Scanned)
	r = call(t, c, "w2", "read_file", `{"path":"c.txt"}`, "ok")
	require.Equal(t, "sea\n", r["inline_text"], "GC keeps what sessions reference")
}

// TestSnapshotProgress streams a snapshot's sealing of files written
// through handles (as the FUSE mount writes), then its result.
func TestSnapshotProgress(t *testing.T) {
	s := start(t, newConfig(t))
	ctx := context.Background()
	_, err := s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "p"})
	require.NoError(t, err)
	ts, err := s.d.Toolset("p")
	require.NoError(t, err)
	for _, name := range []string{"a.bin", "b.bin", "c.bin"} {
		h, err := ts.Session().OpenFile(ctx, vfs.MustPath(name), os.O_RDWR|os.O_CREATE, 0)
		require.NoError(t, err)
		_, err = h.WriteAt(make([]byte, 4096), 0)
		require.NoError(t, err)
		require.NoError(t, h.Close())
	}
	var seen []api.Progress
	snap, err := s.c.CreateSnapshotProgress(ctx, "p", "with progress", func(p api.Progress) { seen = append(seen, p) })
	require.NoError(t, err)
	require.Equal(t, "with progress", snap.Label)
	require.Equal(t, int64(3), snap.Files)
	require.NotEmpty(t, seen)
	last := seen[len(seen)-1]
	require.Equal(t, api.Progress{Phase: "seal", Files: 3, FilesTotal: 3, Bytes: 3 * 4096, BytesTotal: 3 * 4096}, last)

	_, err = s.c.CreateSnapshotProgress(ctx, "nope", "", nil)
	requireCode(t, err, api.CodeNotFound)
}
