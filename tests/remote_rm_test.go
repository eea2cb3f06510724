package tests

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
)

// TestRemoteSnapshotRm: vfsd snapshot rm on a daemon with a remote deletes
// the snapshot's record from the remote as well, so that another daemon can
// no longer fork it and remote garbage collection may collect its blobs;
// a later snapshot that shares its manifests still forks whole.
func TestRemoteSnapshotRm(t *testing.T) {
	srv := startS3(t)
	url := srv.URL("vfsd-e2e", "rm")
	dirA, sockA := newDaemonDirs(t)
	dirB, sockB := newDaemonDirs(t)
	ca := startDaemon(t, dirA, sockA, "--remote", url).client()
	cb := startDaemon(t, dirB, sockB, "--remote", url).client()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	_, err := ca.CreateSession(ctx, api.CreateSessionRequest{ID: "a"})
	require.NoError(t, err)
	tool(t, ca, "a", "write_file", map[string]any{"path": "src/keep.txt", "content": "kept\n"})
	tool(t, ca, "a", "write_file", map[string]any{"path": "src/gone.txt", "content": "v1\n"})
	first, err := ca.CreateSnapshot(ctx, "a", "first")
	require.NoError(t, err)
	_, err = ca.PushSnapshot(ctx, first.ID)
	require.NoError(t, err)
	tool(t, ca, "a", "write_file", map[string]any{"path": "src/gone.txt", "content": "v2\n"})
	second, err := ca.CreateSnapshot(ctx, "a", "second")
	require.NoError(t, err)
	_, err = ca.PushSnapshot(ctx, second.ID)
	require.NoError(t, err)
	require.NoError(t, ca.CloseSession(ctx, "a"))

	resp, err := ca.DeleteSnapshot(ctx, first.ID)
	require.NoError(t, err)
	require.Equal(t, []string{first.ID}, resp.Deleted)
	require.Equal(t, []string{first.ID}, resp.RemoteDeleted)

	_, err = cb.ForkSnapshot(ctx, first.ID, api.CreateSessionRequest{ID: "b1"})
	var ae *api.Error
	require.ErrorAs(t, err, &ae)
	require.Equal(t, api.CodeNotFound, ae.Code, "%v", err)
	_, err = cb.ForkSnapshot(ctx, second.ID, api.CreateSessionRequest{ID: "b2"})
	require.NoError(t, err)
	require.Equal(t, "kept\n", readText(t, cb, "b2", "src/keep.txt"))
	require.Equal(t, "v2\n", readText(t, cb, "b2", "src/gone.txt"))
}
