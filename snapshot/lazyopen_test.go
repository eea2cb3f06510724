package snapshot_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// reopen closes r and opens the repository in dir again over store.
func reopen(t *testing.T, r *snapshot.Repo, store snapshot.Store, dir string) *snapshot.Repo {
	t.Helper()
	require.NoError(t, r.Close())
	r2, err := snapshot.OpenRepo(ctx, store, filepath.Join(dir, "sessions"), snapshot.RepoOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { r2.Close() })
	return r2
}

// sessionDir returns the directory holding session id (directories have
// opaque names; the journal header names the session).
func sessionDir(t *testing.T, dir, id string) string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "sessions"))
	require.NoError(t, err)
	for _, e := range entries {
		d := filepath.Join(dir, "sessions", e.Name())
		if h, err := vfs.ReadHeader(d); err == nil && h.Session == id {
			return d
		}
	}
	t.Fatalf("no directory holds session %s", id)
	return ""
}

// corruptJournal appends a record whose checksum matches but whose payload
// is not an event: not a torn tail, so Open refuses the journal.
func corruptJournal(t *testing.T, sessionDir string) {
	t.Helper()
	payload := []byte("{not an event")
	rec := make([]byte, 8+len(payload))
	binary.LittleEndian.PutUint32(rec[0:4], uint32(len(payload)))
	binary.LittleEndian.PutUint32(rec[4:8], crc32.Checksum(payload, crc32.MakeTable(crc32.Castagnoli)))
	copy(rec[8:], payload)
	f, err := os.OpenFile(filepath.Join(sessionDir, "journal"), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write(rec)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func TestOpenRepoOpensNoSession(t *testing.T) {
	r, store, dir := newRepo(t)
	base, err := r.NewSession(ctx, snapshot.SessionOptions{ID: "base"})
	require.NoError(t, err)
	write(t, base, "a.txt", "base\n")
	snap, err := r.Snapshot(ctx, base, "")
	require.NoError(t, err)
	const n = 20
	for i := range n {
		s, err := r.Fork(ctx, snapshot.Source{Snapshot: snap.ID}, snapshot.SessionOptions{ID: "f" + string(rune('a'+i))})
		require.NoError(t, err)
		write(t, s, "own.txt", s.ID())
	}

	r2 := reopen(t, r, store, dir)
	require.Zero(t, r2.OpenCount(), "opening a repository opens no session")
	require.Len(t, r2.SessionIDs(), n+1)
	require.Empty(t, r2.Sessions(), "none is open until used")

	s, err := r2.Session("fc")
	require.NoError(t, err)
	require.Equal(t, "fc", read(t, s, "own.txt"))
	require.Equal(t, "base\n", read(t, s, "a.txt"))
	require.EqualValues(t, 1, r2.OpenCount())
	s2, err := r2.Session("fc")
	require.NoError(t, err)
	require.Same(t, s, s2, "a second use gets the open session")
	require.EqualValues(t, 1, r2.OpenCount())

	// Deleting a snapshot asks unopened sessions' journals what they hold,
	// without opening them.
	_, err = r2.DeleteSnapshots(ctx, []string{snap.ID}, snapshot.DeleteOptions{})
	var inUse *snapshot.InUseError
	require.ErrorAs(t, err, &inUse)
	require.Len(t, inUse.Holders[snap.ID], n)
	require.EqualValues(t, 1, r2.OpenCount())

	// Deleting a session never opened removes it without opening it.
	require.NoError(t, r2.DeleteSession("fd"))
	require.EqualValues(t, 1, r2.OpenCount())
	_, err = r2.Session("fd")
	require.ErrorIs(t, err, vfs.ErrNotFound)

	// GC must see every session's references: it opens them all.
	_, err = r2.GC(ctx)
	require.NoError(t, err)
	require.EqualValues(t, n, r2.OpenCount())
	require.Len(t, r2.Sessions(), n)
}

func TestCorruptSessionFailsOnlyItsUses(t *testing.T) {
	r, store, dir := newRepo(t)
	for _, id := range []string{"good", "bad"} {
		s, err := r.NewSession(ctx, snapshot.SessionOptions{ID: id})
		require.NoError(t, err)
		write(t, s, "f.txt", id)
	}
	require.NoError(t, r.Close())
	badDir := sessionDir(t, dir, "bad")
	corruptJournal(t, badDir)

	r2, err := snapshot.OpenRepo(ctx, store, filepath.Join(dir, "sessions"), snapshot.RepoOptions{})
	require.NoError(t, err, "one corrupt session does not stop the repository from opening")
	t.Cleanup(func() { r2.Close() })
	require.Equal(t, []string{"bad", "good"}, r2.SessionIDs())

	good, err := r2.Session("good")
	require.NoError(t, err)
	require.Equal(t, "good", read(t, good, "f.txt"))
	write(t, good, "g.txt", "still works")

	_, err = r2.Session("bad")
	var oe *snapshot.SessionOpenError
	require.ErrorAs(t, err, &oe)
	require.Equal(t, "bad", oe.ID)
	require.Contains(t, err.Error(), "session bad cannot be opened")
	require.Contains(t, err.Error(), "corrupt")
	require.Contains(t, err.Error(), "delete the session")
	// Every use says so again; the good session is unaffected.
	_, err = r2.Session("bad")
	require.ErrorAs(t, err, &oe)
	_, err = r2.GC(ctx)
	require.ErrorAs(t, err, &oe, "GC cannot know what the corrupt session references")

	// The way out: delete it.
	require.NoError(t, r2.DeleteSession("bad"))
	require.NoDirExists(t, badDir)
	_, err = r2.GC(ctx)
	require.NoError(t, err)
	require.Equal(t, "good", read(t, good, "f.txt"))
}

func TestConcurrentFirstUseOpensOnce(t *testing.T) {
	r, store, dir := newRepo(t)
	s, err := r.NewSession(ctx, snapshot.SessionOptions{ID: "one"})
	require.NoError(t, err)
	for i := range 50 {
		write(t, s, "d/f"+string(rune('a'+i%26))+".txt", "x")
	}
	r2 := reopen(t, r, store, dir)

	const users = 16
	got := make([]*vfs.Session, users)
	var wg sync.WaitGroup
	for i := range users {
		wg.Go(func() {
			s, err := r2.Session("one")
			if err == nil {
				got[i] = s
			}
		})
	}
	wg.Wait()
	for i := range users {
		require.NotNil(t, got[i])
		require.Same(t, got[0], got[i])
	}
	require.EqualValues(t, 1, r2.OpenCount())
}

func TestCloseWhileOpening(t *testing.T) {
	r, store, dir := newRepo(t)
	_, err := r.NewSession(ctx, snapshot.SessionOptions{ID: "one"})
	require.NoError(t, err)
	r2 := reopen(t, r, store, dir)
	done := make(chan error, 1)
	go func() {
		_, err := r2.Session("one")
		done <- err
	}()
	require.NoError(t, r2.Close())
	err = <-done
	if err != nil { // lost the race with Close: told so, and nothing leaks
		require.ErrorIs(t, err, vfs.ErrClosed)
	}
	_, err = r2.Session("one")
	require.ErrorIs(t, err, vfs.ErrClosed)
}

func TestUnopenedSessionHoldsRestoredSnapshot(t *testing.T) {
	r, store, dir := newRepo(t)
	s, err := r.NewSession(ctx, snapshot.SessionOptions{ID: "one"})
	require.NoError(t, err)
	write(t, s, "a.txt", "1")
	first, err := r.Snapshot(ctx, s, "")
	require.NoError(t, err)
	write(t, s, "a.txt", "2")
	second, err := r.Snapshot(ctx, s, "")
	require.NoError(t, err)
	require.NoError(t, r.Restore(ctx, s, first.ID))
	write(t, s, "b.txt", "after the restore")

	r2 := reopen(t, r, store, dir)
	_, err = r2.DeleteSnapshots(ctx, []string{first.ID}, snapshot.DeleteOptions{})
	var inUse *snapshot.InUseError
	require.ErrorAs(t, err, &inUse, "the session restored it: its journal needs it")
	require.Equal(t, []string{"session one"}, inUse.Holders[first.ID])
	_, err = r2.DeleteSnapshots(ctx, []string{second.ID}, snapshot.DeleteOptions{})
	require.NoError(t, err, "nothing needs the other one")
	require.Zero(t, r2.OpenCount())
	s2, err := r2.Session("one")
	require.NoError(t, err)
	require.Equal(t, "1", read(t, s2, "a.txt"))
	require.Equal(t, "after the restore", read(t, s2, "b.txt"))
}

// countingStore counts the records read from a store.
type countingStore struct {
	snapshot.Store
	mu      sync.Mutex
	records int
	lists   int
}

func (c *countingStore) Open(ctx context.Context, ns snapshot.Namespace, h vfs.Hash) (vfs.Blob, error) {
	if ns == snapshot.Records {
		c.mu.Lock()
		c.records++
		c.mu.Unlock()
	}
	return c.Store.Open(ctx, ns, h)
}

func (c *countingStore) List(ctx context.Context, ns snapshot.Namespace, fn func(h vfs.Hash, size int64) error) error {
	if ns == snapshot.Records {
		c.mu.Lock()
		c.lists++
		c.mu.Unlock()
	}
	return c.Store.List(ctx, ns, fn)
}

func (c *countingStore) counts() (records, lists int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.records, c.lists
}

// TestOpenReadsOnlyTheRecordsItNeeds: opening a repository reads no
// snapshot record, and opening a session whose base shares manifests with
// its ancestors reads those ancestors' records, not every record.
func TestOpenReadsOnlyTheRecordsItNeeds(t *testing.T) {
	r, store, dir := newRepo(t)
	s, err := r.NewSession(ctx, snapshot.SessionOptions{ID: "main"})
	require.NoError(t, err)
	for i := range 20 {
		write(t, s, fmt.Sprintf("d%02d/f.txt", i), "v1")
	}
	_, err = r.Snapshot(ctx, s, "gen 1")
	require.NoError(t, err)
	write(t, s, "d00/f.txt", "v2")
	gen2, err := r.Snapshot(ctx, s, "gen 2: one directory changed; the others' manifests are gen 1's")
	require.NoError(t, err)
	// Many unrelated snapshots.
	other, err := r.NewSession(ctx, snapshot.SessionOptions{ID: "other"})
	require.NoError(t, err)
	for i := range 30 {
		write(t, other, fmt.Sprintf("o%02d.txt", i), "x")
		_, err := r.Snapshot(ctx, other, "")
		require.NoError(t, err)
	}
	fork, err := r.Fork(ctx, snapshot.Source{Snapshot: gen2.ID}, snapshot.SessionOptions{ID: "fork"})
	require.NoError(t, err)
	write(t, fork, "d05/g.txt", "fork")
	require.NoError(t, r.Close())

	cs := &countingStore{Store: store}
	r2, err := snapshot.OpenRepo(ctx, cs, filepath.Join(dir, "sessions"), snapshot.RepoOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { r2.Close() })
	records, lists := cs.counts()
	require.Zero(t, records, "opening a repository reads no snapshot record")
	require.Zero(t, lists)

	f, err := r2.Session("fork")
	require.NoError(t, err)
	require.Equal(t, "v1", read(t, f, "d07/f.txt"))
	require.Equal(t, "v2", read(t, f, "d00/f.txt"))
	require.Equal(t, "fork", read(t, f, "d05/g.txt"))
	records, lists = cs.counts()
	require.Zero(t, lists, "no scan of every record")
	// The base's record (read by Get, and again by the tree load) and its
	// parent's, not the 30 others.
	require.LessOrEqual(t, records, 3)
}

// BenchmarkOpenRepoSessions times opening a repository (warm page cache)
// holding n sessions: it reads each session's journal header and opens
// none, so the cost per session is one small read.
func BenchmarkOpenRepoSessions(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			store, err := snapshot.OpenLocal(filepath.Join(dir, "store"))
			require.NoError(b, err)
			defer store.Close()
			sessions := filepath.Join(dir, "sessions")
			r, err := snapshot.OpenRepo(ctx, store, sessions, snapshot.RepoOptions{})
			require.NoError(b, err)
			for i := range n {
				s, err := r.NewSession(ctx, snapshot.SessionOptions{ID: fmt.Sprintf("s%04d", i)})
				require.NoError(b, err)
				write(b, s, "f.txt", "x")
			}
			require.NoError(b, r.Close())
			for b.Loop() {
				r, err := snapshot.OpenRepo(ctx, store, sessions, snapshot.RepoOptions{})
				if err != nil {
					b.Fatal(err)
				}
				r.Close()
			}
		})
	}
}

// TestOpenRepoReadsNoJournal: a repository finds its sessions by their
// directories' names, reading no session's journal: a session whose journal
// header is unreadable still opens the repository and fails its own uses
// only; directories of older repositories (d-<random>, named by their
// header alone) are still found; a directory named for a session whose
// creation never wrote the header is dropped on first use; a deletion cut
// short is finished, and a deleted session never comes back.
func TestOpenRepoReadsNoJournal(t *testing.T) {
	r, store, dir := newRepo(t)
	for _, id := range []string{"a", "b.2", "old", "gone"} {
		s, err := r.NewSession(ctx, snapshot.SessionOptions{ID: id})
		require.NoError(t, err)
		write(t, s, "f.txt", id)
	}
	require.NoError(t, r.Close())
	sessions := filepath.Join(dir, "sessions")

	// b.2's journal loses its header: reading it at open would fail the
	// repository ("without its header the directory cannot even be named").
	bDir := sessionDir(t, dir, "b.2")
	require.Regexp(t, `^s-b\.2\.[0-9a-f]{16}$`, filepath.Base(bDir), "named for its session")
	require.NoError(t, os.WriteFile(filepath.Join(bDir, "journal"), []byte("\x00garbage"), 0o600))
	// "old" as an older repository laid it out.
	oldDir := sessionDir(t, dir, "old")
	require.NoError(t, os.Rename(oldDir, filepath.Join(sessions, "d-00112233aabbccdd")))
	// A crash between naming a prepared directory and writing its header.
	require.NoError(t, vfs.PrepareDir(filepath.Join(sessions, "s-halfmade.0123456789abcdef")))
	// A deletion cut short after its rename.
	goneDir := sessionDir(t, dir, "gone")
	require.NoError(t, os.Rename(goneDir, filepath.Join(sessions, "x-"+filepath.Base(goneDir))))

	r2, err := snapshot.OpenRepo(ctx, store, sessions, snapshot.RepoOptions{})
	require.NoError(t, err, "opening reads no journal")
	t.Cleanup(func() { r2.Close() })
	require.Equal(t, []string{"a", "b.2", "halfmade", "old"}, r2.SessionIDs())
	require.NoDirExists(t, filepath.Join(sessions, "x-"+filepath.Base(goneDir)))

	for _, id := range []string{"a", "old"} {
		s, err := r2.Session(id)
		require.NoError(t, err)
		require.Equal(t, id, read(t, s, "f.txt"))
	}
	_, err = r2.Session("b.2")
	var oe *snapshot.SessionOpenError
	require.ErrorAs(t, err, &oe)
	_, err = r2.Session("halfmade")
	require.ErrorIs(t, err, vfs.ErrNotFound)
	require.Equal(t, []string{"a", "b.2", "old"}, r2.SessionIDs())
	require.NoDirExists(t, filepath.Join(sessions, "s-halfmade.0123456789abcdef"))

	// A session ID used again after a deletion is a new session.
	require.NoError(t, r2.DeleteSession("a"))
	s, err := r2.NewSession(ctx, snapshot.SessionOptions{ID: "a"})
	require.NoError(t, err)
	_, _, err = s.ReadFile(ctx, "f.txt")
	require.ErrorIs(t, err, vfs.ErrNotFound)
	write(t, s, "new.txt", "new")
	r3 := reopen(t, r2, store, dir)
	s, err = r3.Session("a")
	require.NoError(t, err)
	require.Equal(t, "new", read(t, s, "new.txt"))
	entries, err := os.ReadDir(sessions)
	require.NoError(t, err)
	for _, e := range entries {
		require.NotRegexp(t, `^x-`, e.Name(), "no deletion is left half done")
	}
}
