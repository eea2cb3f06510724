package snapshot_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// hangAfter bounds how long the tests below wait for a call that should
// answer at once: a hang detector, thousands of times what the call needs,
// not a timing bar.
const hangAfter = 10 * time.Second

// gate holds calls until it opens, and tells when the first arrives: a
// remote that is slow for as long as a test wants.
type gate struct {
	entered, opened chan struct{}
	arrive, leave   sync.Once
}

func newGate() *gate { return &gate{entered: make(chan struct{}), opened: make(chan struct{})} }

// wait holds a call until the gate opens or ctx ends.
func (g *gate) wait(ctx context.Context) error {
	g.arrive.Do(func() { close(g.entered) })
	select {
	case <-g.opened:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gate) open() { g.leave.Do(func() { close(g.opened) }) }

// reached waits until a call is held at the gate.
func (g *gate) reached(t *testing.T, what string) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(hangAfter):
		t.Fatalf("%s never reached the remote", what)
	}
}

// answers runs fn, which must not wait for the gate, and fails the test
// if it does (opening the gate, so that nothing stays stuck).
func (g *gate) answers(t *testing.T, what string, fn func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		require.NoError(t, err, what)
	case <-time.After(hangAfter):
		g.open()
		t.Fatalf("%s waited for the remote", what)
	}
}

// slowUploads is a remote whose uploads wait at a gate.
type slowUploads struct {
	snapshot.Store
	*gate
}

func (s slowUploads) Put(ctx context.Context, ns snapshot.Namespace, r io.Reader, o snapshot.PutOptions) (vfs.Hash, int64, error) {
	if err := s.wait(ctx); err != nil {
		return vfs.Hash{}, 0, err
	}
	return s.Store.Put(ctx, ns, r, o)
}

// slowDownloads is a remote whose downloads wait at a gate.
type slowDownloads struct {
	snapshot.Store
	*gate
}

func (s slowDownloads) Open(ctx context.Context, ns snapshot.Namespace, h vfs.Hash) (vfs.Blob, error) {
	if err := s.wait(ctx); err != nil {
		return nil, err
	}
	return s.Store.Open(ctx, ns, h)
}

// slowListings is a remote whose listings wait at a gate.
type slowListings struct {
	snapshot.Store
	*gate
}

func (s slowListings) List(ctx context.Context, ns snapshot.Namespace, fn func(vfs.Hash, int64) error) error {
	if err := s.wait(ctx); err != nil {
		return err
	}
	return s.Store.List(ctx, ns, fn)
}

// pushed returns a snapshot of one file, path, pushed to a new remote.
func pushed(t *testing.T, path, content string) (*snapshot.MemoryStore, *snapshot.Snapshot) {
	t.Helper()
	mem := snapshot.NewMemory()
	a, _ := newRemoteRepo(t, mem, snapshot.RemoteOptions{})
	sa, err := a.NewSession(ctx, snapshot.SessionOptions{ID: "a"})
	require.NoError(t, err)
	write(t, sa, path, content)
	snap, err := a.Snapshot(ctx, sa, "")
	require.NoError(t, err)
	_, err = a.Push(ctx, snap.ID)
	require.NoError(t, err)
	return mem, snap
}

// localWork deletes the snapshot doomed, collects garbage, and creates,
// writes and snapshots a new session called id: what must go on while a
// remote call waits.
func localWork(r *snapshot.Repo, doomed, id string) error {
	if _, err := r.DeleteSnapshots(ctx, []string{doomed}, snapshot.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	if _, err := r.GC(ctx); err != nil {
		return fmt.Errorf("gc: %w", err)
	}
	s, err := r.NewSession(ctx, snapshot.SessionOptions{ID: id})
	if err != nil {
		return err
	}
	defer s.Close()
	if _, err := s.WriteFile(ctx, p("y"), strings.NewReader("y"), vfs.WriteOptions{}); err != nil {
		return err
	}
	_, err = r.Snapshot(ctx, s, "")
	return err
}

// TestSlowPushHoldsUpNothing: a push waiting on the remote holds no lock of
// the repository, so deleting the parent snapshot (whose record holds
// manifests the pushed one shares), collecting garbage and snapshotting go
// on; the push then finds the parent's record gone, works out what to send
// again (the pack the manifests moved to), and the remote gets a snapshot
// another repository forks whole.
func TestSlowPushHoldsUpNothing(t *testing.T) {
	mem := snapshot.NewMemory()
	g := newGate()
	// One upload at a time: the parent's record is opened only after the
	// gate opens, by when it is deleted.
	a, _ := newRemoteRepo(t, slowUploads{mem, g}, snapshot.RemoteOptions{Parallel: 1})
	sa, err := a.NewSession(ctx, snapshot.SessionOptions{ID: "a"})
	require.NoError(t, err)
	write(t, sa, "d/f1", "in the parent")
	parent, err := a.Snapshot(ctx, sa, "")
	require.NoError(t, err)
	write(t, sa, "top", "in the child")
	child, err := a.Snapshot(ctx, sa, "")
	require.NoError(t, err)
	require.NoError(t, sa.Close())
	require.NoError(t, a.DeleteSession("a"))

	push := make(chan error, 1)
	go func() {
		_, err := a.Push(ctx, child.ID)
		push <- err
	}()
	g.reached(t, "the push")
	g.answers(t, "deleting, collecting and snapshotting during the push", func() error {
		return localWork(a, parent.ID, "b")
	})

	g.open()
	require.NoError(t, <-push)
	b, _ := newRemoteRepo(t, mem, snapshot.RemoteOptions{})
	sb, err := b.Fork(ctx, snapshot.Source{Snapshot: child.ID}, snapshot.SessionOptions{ID: "b"})
	require.NoError(t, err)
	require.Equal(t, "in the parent", read(t, sb, "d/f1"))
	require.Equal(t, "in the child", read(t, sb, "top"))
}

// TestSlowForkHoldsUpNothing: a fork waiting on the remote for its
// snapshot's record holds no lock of the repository: local snapshots are
// deleted, collected and taken meanwhile, and local sessions created.
func TestSlowForkHoldsUpNothing(t *testing.T) {
	mem, remoteSnap := pushed(t, "d/f", "remote content")
	g := newGate()
	b, _ := newRemoteRepo(t, slowDownloads{mem, g}, snapshot.RemoteOptions{})
	sb, err := b.NewSession(ctx, snapshot.SessionOptions{ID: "local"})
	require.NoError(t, err)
	write(t, sb, "x", "local")
	localSnap, err := b.Snapshot(ctx, sb, "")
	require.NoError(t, err)
	require.NoError(t, sb.Close())
	require.NoError(t, b.DeleteSession("local"))

	fork := make(chan error, 1)
	go func() {
		s, err := b.Fork(ctx, snapshot.Source{Snapshot: remoteSnap.ID}, snapshot.SessionOptions{ID: "fork"})
		if err == nil {
			defer s.Close()
			var got []byte
			if got, _, err = s.ReadFile(ctx, p("d/f")); err == nil && string(got) != "remote content" {
				err = fmt.Errorf("read %q", got)
			}
		}
		fork <- err
	}()
	g.reached(t, "the fork")
	g.answers(t, "deleting, collecting and snapshotting during the fork", func() error {
		return localWork(b, localSnap.ID, "another")
	})
	g.open()
	require.NoError(t, <-fork)
}

// TestSlowRestoreHoldsUpNothing: a restore waiting on the remote for its
// snapshot's record holds no lock of the repository.
func TestSlowRestoreHoldsUpNothing(t *testing.T) {
	mem, remoteSnap := pushed(t, "d/f", "remote content")
	g := newGate()
	b, _ := newRemoteRepo(t, slowDownloads{mem, g}, snapshot.RemoteOptions{})
	sb, err := b.NewSession(ctx, snapshot.SessionOptions{ID: "restored"})
	require.NoError(t, err)
	defer sb.Close()
	write(t, sb, "x", "local")
	localSnap, err := b.Snapshot(ctx, sb, "")
	require.NoError(t, err)
	write(t, sb, "x", "local, later") // the session no longer needs localSnap

	restore := make(chan error, 1)
	go func() { restore <- b.Restore(ctx, sb, remoteSnap.ID) }()
	g.reached(t, "the restore")
	g.answers(t, "deleting, collecting and snapshotting during the restore", func() error {
		return localWork(b, localSnap.ID, "another")
	})
	g.open()
	require.NoError(t, <-restore)
	require.Equal(t, "remote content", read(t, sb, "d/f"))
}

// TestSlowListingHoldsUpNoFetch: while a push waits for the remote's
// listing, a read that fetches a blob completes (it used to wait for the
// listing to record the blob as known).
func TestSlowListingHoldsUpNoFetch(t *testing.T) {
	mem, snap := pushed(t, "f", "remote content")
	g := newGate()
	b, _ := newRemoteRepo(t, slowListings{mem, g}, snapshot.RemoteOptions{})
	sb, err := b.Fork(ctx, snapshot.Source{Snapshot: snap.ID}, snapshot.SessionOptions{ID: "b"})
	require.NoError(t, err)
	write(t, sb, "mine", "local")
	mine, err := b.Snapshot(ctx, sb, "")
	require.NoError(t, err)
	push := make(chan error, 1)
	go func() {
		_, err := b.Push(ctx, mine.ID)
		push <- err
	}()
	g.reached(t, "the push's listing")
	g.answers(t, "a read fetching a blob during the listing", func() error {
		b, _, err := sb.ReadFile(ctx, p("f"))
		if err == nil && string(b) != "remote content" {
			err = fmt.Errorf("read %q", b)
		}
		return err
	})
	g.open()
	require.NoError(t, <-push)
}
