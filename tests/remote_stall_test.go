package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
)

// TestRemoteStalled: the remote stops answering without going away (its
// process is paused: connections are accepted, nothing replies). Tool
// calls on local content, local snapshots, other sessions and the daemon's
// own endpoints answer as before; a read that needs an unfetched blob, and
// a remote fork, fail with a clear error when their caller stops waiting,
// instead of holding anything else up. Once the remote answers again the
// same read succeeds.
func TestRemoteStalled(t *testing.T) {
	srv := startS3(t)
	url := srv.URL("vfsd-stall", "fleet")
	dirA, sockA := newDaemonDirs(t)
	dirB, sockB := newDaemonDirs(t)
	a := startDaemon(t, dirA, sockA, "--remote", url)
	// B's blob cache holds four of the ten files, so its background
	// prefetch leaves the last ones on the remote.
	b := startDaemon(t, dirB, sockB, "--remote", url, "--remote-cache-bytes", "4KiB")
	ca, cb := a.client(), b.client()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	content := func(i int) string { return fmt.Sprintf("file %d\n%s", i, strings.Repeat("x", 1000)) }
	_, err := ca.CreateSession(ctx, api.CreateSessionRequest{ID: "a"})
	require.NoError(t, err)
	for i := range 10 {
		tool(t, ca, "a", "write_file", map[string]any{"path": fmt.Sprintf("src/f%02d.txt", i), "content": content(i)})
	}
	snap, err := ca.CreateSnapshot(ctx, "a", "to fork")
	require.NoError(t, err)
	_, err = ca.PushSnapshot(ctx, snap.ID)
	require.NoError(t, err)
	_, err = cb.ForkSnapshot(ctx, snap.ID, api.CreateSessionRequest{ID: "b"})
	require.NoError(t, err)
	// A second snapshot, pushed, that B has never seen.
	tool(t, ca, "a", "write_file", map[string]any{"path": "later.txt", "content": "later\n"})
	later, err := ca.CreateSnapshot(ctx, "a", "not seen by B")
	require.NoError(t, err)
	_, err = ca.PushSnapshot(ctx, later.ID)
	require.NoError(t, err)
	require.Equal(t, content(0), readText(t, cb, "b", "src/f00.txt")) // fetched: now local

	require.NoError(t, srv.Pause())
	t.Cleanup(func() { _ = srv.Resume() })

	// A read of a blob not fetched yet waits on the remote, until its
	// caller gives up (below, once everything else has answered).
	stuck := make(chan error, 1)
	rctx, giveUp := context.WithCancel(ctx)
	defer giveUp()
	stuckAt := time.Now()
	go func() {
		r, err := cb.CallTool(rctx, "b", "read_file", json.RawMessage(`{"path":"src/f09.txt"}`))
		if err == nil {
			err = fmt.Errorf("answered after %v: %s", time.Since(stuckAt), r.JSON)
		}
		stuck <- err
	}()
	time.Sleep(200 * time.Millisecond) // let it reach the remote

	// Meanwhile everything local answers. Each call gets 10 s, thousands
	// of times what it needs: only a call held up by the stalled read
	// (which waits for as long as this test lets it) runs out.
	local := func(what string, fn func(ctx context.Context) error) {
		t.Helper()
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		defer ccancel()
		start := time.Now()
		require.NoError(t, fn(cctx), "%s with the remote stalled", what)
		t.Logf("%s: %v", what, time.Since(start).Round(time.Millisecond))
	}
	local("read a fetched file", func(ctx context.Context) error {
		return callOK(ctx, cb, "b", "read_file", `{"path":"src/f00.txt"}`)
	})
	local("write a new file", func(ctx context.Context) error {
		return callOK(ctx, cb, "b", "write_file", `{"path":"local.txt","content":"written while stalled\n"}`)
	})
	local("edit a fetched file", func(ctx context.Context) error {
		return callOK(ctx, cb, "b", "edit_file", `{"path":"src/f00.txt","old_string":"file 0","new_string":"file zero"}`)
	})
	local("list a directory of unfetched files", func(ctx context.Context) error {
		return callOK(ctx, cb, "b", "list_directory", `{"path":"src"}`)
	})
	local("snapshot the fork", func(ctx context.Context) error {
		_, err := cb.CreateSnapshot(ctx, "b", "while stalled")
		return err
	})
	local("create and use another session", func(ctx context.Context) error {
		if _, err := cb.CreateSession(ctx, api.CreateSessionRequest{ID: "c"}); err != nil {
			return err
		}
		return callOK(ctx, cb, "c", "write_file", `{"path":"x","content":"x"}`)
	})
	local("list the sessions", func(ctx context.Context) error {
		_, err := cb.Sessions(ctx)
		return err
	})
	local("the remote's status", func(ctx context.Context) error {
		_, err := cb.RemoteStatus(ctx)
		return err
	})
	require.Equal(t, "written while stalled\n", readText(t, cb, "b", "local.txt"))

	// On A, a snapshot queues a push, which waits on the remote; deleting
	// a snapshot and collecting garbage meanwhile, then snapshotting and
	// creating sessions, all answer.
	tool(t, ca, "a", "write_file", map[string]any{"path": "stalled-push.txt", "content": "x\n"})
	local("snapshot on A (its push waits)", func(ctx context.Context) error {
		_, err := ca.CreateSnapshot(ctx, "a", "push stalls")
		return err
	})
	time.Sleep(200 * time.Millisecond) // let the push reach the remote
	// Deleting a pushed snapshot deletes it here at once, then from the
	// remote, which does not answer: the caller who stops waiting is told
	// to run it again.
	dctx, dcancel := context.WithTimeout(ctx, 3*time.Second)
	_, err = ca.DeleteSnapshot(dctx, snap.ID)
	dcancel()
	if err != nil {
		var ae *api.Error
		if errors.As(err, &ae) {
			require.Equal(t, api.CodeUnavailable, ae.Code, "%v", err)
			require.Contains(t, ae.Message, "run vfsd snapshot rm again")
		}
	}
	local("the deleted snapshot is gone here", func(ctx context.Context) error {
		list, err := ca.Snapshots(ctx, "")
		for _, s := range list {
			if s.ID == snap.ID {
				return fmt.Errorf("snapshot %s is still listed after its deletion", snap.ID)
			}
		}
		return err
	})
	local("collect garbage on A", func(ctx context.Context) error {
		_, err := ca.GC(ctx)
		return err
	})
	local("snapshot on A again", func(ctx context.Context) error {
		_, err := ca.CreateSnapshot(ctx, "a", "again")
		return err
	})
	local("create a session on A", func(ctx context.Context) error {
		_, err := ca.CreateSession(ctx, api.CreateSessionRequest{ID: "a2"})
		return err
	})

	select {
	case err := <-stuck:
		t.Fatalf("a read that needs the stalled remote ended before its caller gave up: %v", err)
	default:
	}
	giveUp()
	select {
	case err := <-stuck:
		require.Error(t, err, "a read that needs the stalled remote cannot succeed")
	case <-time.After(30 * time.Second):
		t.Fatal("a read waiting on the stalled remote did not end when its caller gave up")
	}

	// A remote fork fails once its caller stops waiting, and leaves no
	// session behind.
	fctx, fcancel := context.WithTimeout(ctx, 3*time.Second)
	_, err = cb.ForkSnapshot(fctx, later.ID, api.CreateSessionRequest{ID: "b2"})
	fcancel()
	require.Error(t, err)
	local("list the sessions after the failed fork", func(ctx context.Context) error {
		list, err := cb.Sessions(ctx)
		if err == nil {
			for _, s := range list {
				if s.ID == "b2" {
					return fmt.Errorf("the failed fork left session b2: %+v", s)
				}
			}
		}
		return err
	})

	// A daemon stops cleanly while its pushes and fetches wait on the
	// stalled remote (the queued push resumes at its next start).
	a.stop()

	require.NoError(t, srv.Resume())
	require.Equal(t, content(9), readText(t, cb, "b", "src/f09.txt"))
	_, err = cb.ForkSnapshot(ctx, later.ID, api.CreateSessionRequest{ID: "b2"})
	require.NoError(t, err)
	require.Equal(t, content(8), readText(t, cb, "b2", "src/f08.txt"))
	require.Equal(t, "later\n", readText(t, cb, "b2", "later.txt"))
}

// callOK calls a tool and fails unless its receipt says ok.
func callOK(ctx context.Context, c *client.Client, session, name, params string) error {
	r, err := c.CallTool(ctx, session, name, json.RawMessage(params))
	if err == nil && r.Status != "ok" {
		err = fmt.Errorf("%s %s: %s", name, params, r.JSON)
	}
	return err
}
