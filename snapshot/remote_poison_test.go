package snapshot_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// poisonFiles is the workspace the poisoning tests push: two directories,
// so that a snapshot's manifests can live in more than one record.
var poisonFiles = map[string]string{
	"src/main.go":  "package main\n\nfunc main() {}\n",
	"src/util.go":  "package main\n\nfunc util() int { return 42 }\n",
	"docs/README":  "read me\n",
	"docs/LICENSE": "do what you like\n",
}

// writeAll writes files into s.
func writeAll(t *testing.T, s *vfs.Session, files map[string]string) {
	t.Helper()
	for f, c := range files {
		write(t, s, f, c)
	}
}

// forksWhole forks snapshot id on a new repository of the remote — another
// daemon — and reads every file of want there.
func forksWhole(t *testing.T, remote snapshot.Store, id string, want map[string]string) {
	t.Helper()
	b, _ := newRemoteRepo(t, remote, snapshot.RemoteOptions{})
	sb, err := b.Fork(ctx, snapshot.Source{Snapshot: id}, snapshot.SessionOptions{ID: "reader"})
	require.NoError(t, err, "fork on another daemon")
	for f, c := range want {
		got, _, err := sb.ReadFile(ctx, p(f))
		require.NoError(t, err, "read %s on another daemon", f)
		require.Equal(t, c, string(got), f)
	}
}

// junkLike returns content that is not want: of the same size when
// sameSize, else of another.
func junkLike(want []byte, sameSize bool) []byte {
	if sameSize {
		j := []byte(strings.Repeat("X", len(want)))
		return j
	}
	return []byte("planted by another tenant of the bucket")
}

// poisonedSetup is a repository on a new bucket with a snapshot of a
// session holding poisonFiles, not pushed yet.
func poisonedSetup(t *testing.T) (*bucket, *snapshot.Repo, *snapshot.Snapshot) {
	t.Helper()
	remote := newBucket()
	a, _ := newRemoteRepo(t, remote, snapshot.RemoteOptions{})
	sa, err := a.NewSession(ctx, snapshot.SessionOptions{ID: "a"})
	require.NoError(t, err)
	writeAll(t, sa, poisonFiles)
	snap, err := a.Snapshot(ctx, sa, "")
	require.NoError(t, err)
	return remote, a, snap
}

// TestPushRepairsPlantedBlob: another tenant of the bucket puts junk under
// the key of a blob the push is about to send (blobs/<BLAKE3 of its
// content>). The push must not take the listing's word for it: it finds
// the junk (by size, or by content when the size is right), overwrites it
// and says so, and another daemon forks the snapshot and reads every file.
// On the old code the push trusted the listing, skipped the blob and
// reported success; the fork then failed with corrupt_object for ever.
func TestPushRepairsPlantedBlob(t *testing.T) {
	for _, sameSize := range []bool{false, true} {
		t.Run(fmt.Sprintf("same size %v", sameSize), func(t *testing.T) {
			remote, a, snap := poisonedSetup(t)

			victim := []byte(poisonFiles["src/util.go"])
			remote.Plant(snapshot.Blobs, vfs.HashOf(victim), junkLike(victim, sameSize), timeZero)

			rep, err := a.Push(ctx, snap.ID)
			require.NoError(t, err)
			require.Equal(t, 1, rep.Repaired, "%+v", rep)
			require.Equal(t, 4, rep.UploadedBlobs, "%+v", rep)
			forksWhole(t, remote, snap.ID, poisonFiles)
			got, _ := remote.raw(snapshot.Blobs, vfs.HashOf(victim))
			require.Equal(t, victim, got, "the planted object is overwritten")
		})
	}
}

// TestPushRepairsPlantedRecords: the same with the records a push writes —
// the snapshot's own record (a fork of it failed on the old code), and a
// record holding manifests the snapshot shares with an unpushed parent (a
// read in an unchanged directory failed).
func TestPushRepairsPlantedRecords(t *testing.T) {
	for _, sameSize := range []bool{false, true} {
		t.Run(fmt.Sprintf("own record, same size %v", sameSize), func(t *testing.T) {
			remote, a, snap := poisonedSetup(t)
			id, err := vfs.ParseHash(snap.ID)
			require.NoError(t, err)
			remote.Plant(snapshot.Records, id, junkLike(localObject(t, a, snapshot.Records, id), sameSize), timeZero)

			rep, err := a.Push(ctx, snap.ID)
			require.NoError(t, err)
			require.Equal(t, 1, rep.Repaired, "%+v", rep)
			forksWhole(t, remote, snap.ID, poisonFiles)
		})
		t.Run(fmt.Sprintf("parent's record, same size %v", sameSize), func(t *testing.T) {
			remote := newBucket()
			a, _ := newRemoteRepo(t, remote, snapshot.RemoteOptions{})
			sa, err := a.NewSession(ctx, snapshot.SessionOptions{ID: "a"})
			require.NoError(t, err)
			writeAll(t, sa, poisonFiles)
			parent, err := a.Snapshot(ctx, sa, "not pushed")
			require.NoError(t, err)
			change := map[string]string{"src/main.go": "package main // changed\n"}
			writeAll(t, sa, change)
			files := maps(poisonFiles, change)
			child, err := a.Snapshot(ctx, sa, "")
			require.NoError(t, err)
			pid, err := vfs.ParseHash(parent.ID)
			require.NoError(t, err)
			remote.Plant(snapshot.Records, pid, junkLike(localObject(t, a, snapshot.Records, pid), sameSize), timeZero)

			rep, err := a.Push(ctx, child.ID)
			require.NoError(t, err)
			require.Equal(t, 1, rep.Repaired, "%+v", rep)
			forksWhole(t, remote, child.ID, files) // docs/ is in the parent's record
		})
	}
}

// localObject returns an object of r's local store.
func localObject(t *testing.T, r *snapshot.Repo, ns snapshot.Namespace, h vfs.Hash) []byte {
	t.Helper()
	b, err := r.Store().Open(ctx, ns, h)
	require.NoError(t, err)
	defer b.Close()
	data := make([]byte, b.Size())
	_, err = b.ReadAt(data, 0)
	require.True(t, err == nil || errors.Is(err, io.EOF), "%v", err)
	return data
}

// timeZero dates a planted object now.
var timeZero time.Time

// maps returns a copy of base with over applied.
func maps(base, over map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

// TestRePushRepairsOverwrittenObject: another tenant overwrites an object
// after the push (a blob, or the snapshot's record). Another daemon's fork
// meets corrupt_object and says so; the owner pushing the snapshot again
// repairs it, and the fork then reads. On the old code the second push
// sent nothing (the listing had the name), so the snapshot stayed broken.
func TestRePushRepairsOverwrittenObject(t *testing.T) {
	for _, sameSize := range []bool{false, true} {
		t.Run(fmt.Sprintf("same size %v", sameSize), func(t *testing.T) {
			remote, a, snap := poisonedSetup(t)
			_, err := a.Push(ctx, snap.ID)
			require.NoError(t, err)

			victim := []byte(poisonFiles["docs/README"])
			remote.Plant(snapshot.Blobs, vfs.HashOf(victim), junkLike(victim, sameSize), timeZero)
			b, _ := newRemoteRepo(t, remote, snapshot.RemoteOptions{})
			sb, err := b.Fork(ctx, snapshot.Source{Snapshot: snap.ID}, snapshot.SessionOptions{ID: "b"})
			require.NoError(t, err)
			_, _, err = sb.ReadFile(ctx, p("docs/README"))
			require.ErrorIs(t, err, snapshot.ErrCorruptObject)
			require.ErrorContains(t, err, "someone else wrote under its name")
			require.ErrorContains(t, err, "repairs it by pushing the snapshot again")

			rep, err := a.Push(ctx, snap.ID)
			require.NoError(t, err)
			require.Equal(t, 1, rep.Repaired, "%+v", rep)
			require.Equal(t, 1, rep.Uploaded, "%+v", rep)
			require.Equal(t, string(victim), read(t, sb, "docs/README"), "the same fork reads once repaired")
			forksWhole(t, remote, snap.ID, poisonFiles)
		})
	}
}

// TestPushReadsBackOnlyWhatItMust: the cost of not trusting the listing.
// What this daemon uploaded or fetched itself is never read back — not by
// a child's push, not by a push again, not after a restart (the marks are
// kept in StateDir); another daemon's fork pushes its changes without
// reading back the files it never read (it checks their sizes against the
// tree); only content that another daemon stored and this one has too (the
// same files written on two daemons) is read back, once.
func TestPushReadsBackOnlyWhatItMust(t *testing.T) {
	remote := newBucket()
	dir := t.TempDir()
	opts := snapshot.RemoteOptions{StateDir: filepath.Join(dir, "remote")}
	a, err := snapshot.OpenLocalRepo(ctx, dir, snapshot.RepoOptions{})
	require.NoError(t, err)
	require.NoError(t, a.SetRemote(remote, opts))
	sa, err := a.NewSession(ctx, snapshot.SessionOptions{ID: "a"})
	require.NoError(t, err)
	files := map[string]string{}
	for i := range 20 {
		files[fmt.Sprintf("d%d/f%02d", i%3, i)] = fmt.Sprintf("content %d\n", i)
	}
	writeAll(t, sa, files)
	first, err := a.Snapshot(ctx, sa, "")
	require.NoError(t, err)
	rep, err := a.Push(ctx, first.ID)
	require.NoError(t, err)
	require.Equal(t, 20, rep.UploadedBlobs)
	opens := remote.opens.Load()
	noReadBack := func(rep snapshot.PushReport, what string) {
		t.Helper()
		require.Zero(t, rep.Verified+rep.Repaired+rep.Rewritten+rep.Unrepaired, "%s: %+v", what, rep)
		require.Equal(t, opens, remote.opens.Load(), "%s reads nothing back", what)
	}

	write(t, sa, "d0/f00", "changed")
	write(t, sa, "d1/f01", "changed too")
	second, err := a.Snapshot(ctx, sa, "")
	require.NoError(t, err)
	rep, err = a.Push(ctx, second.ID)
	require.NoError(t, err)
	require.Equal(t, 2, rep.UploadedBlobs)
	noReadBack(rep, "a child's push")
	rep, err = a.Push(ctx, second.ID)
	require.NoError(t, err)
	require.Zero(t, rep.Uploaded)
	noReadBack(rep, "a push again")

	require.NoError(t, a.Close())
	a, err = snapshot.OpenLocalRepo(ctx, dir, snapshot.RepoOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	require.NoError(t, a.SetRemote(remote, opts))
	sa, err = a.Session("a")
	require.NoError(t, err)
	write(t, sa, "d2/f02", "changed after a restart")
	third, err := a.Snapshot(ctx, sa, "")
	require.NoError(t, err)
	rep, err = a.Push(ctx, third.ID)
	require.NoError(t, err)
	require.Equal(t, 1, rep.UploadedBlobs)
	noReadBack(rep, "a push after a restart")

	// Another daemon forks, reads two files, changes one and pushes.
	b, _ := newRemoteRepo(t, remote, snapshot.RemoteOptions{})
	sb, err := b.Fork(ctx, snapshot.Source{Snapshot: third.ID}, snapshot.SessionOptions{ID: "b"})
	require.NoError(t, err)
	require.Equal(t, files["d0/f03"], read(t, sb, "d0/f03"))
	require.Equal(t, files["d1/f04"], read(t, sb, "d1/f04"))
	write(t, sb, "d1/f04", "changed on b")
	onB, err := b.Snapshot(ctx, sb, "")
	require.NoError(t, err)
	opens = remote.opens.Load()
	rep, err = b.Push(ctx, onB.ID)
	require.NoError(t, err)
	require.Equal(t, 1, rep.UploadedBlobs)
	noReadBack(rep, "a fork's push")

	// A third daemon writes the first snapshot's files itself: their blobs
	// are in the remote, stored by another daemon; it reads each back once.
	c, _ := newRemoteRepo(t, remote, snapshot.RemoteOptions{})
	sc, err := c.NewSession(ctx, snapshot.SessionOptions{ID: "c"})
	require.NoError(t, err)
	writeAll(t, sc, files)
	same, err := c.Snapshot(ctx, sc, "")
	require.NoError(t, err)
	rep, err = c.Push(ctx, same.ID)
	require.NoError(t, err)
	require.Equal(t, 20, rep.Verified, "%+v", rep)
	require.Zero(t, rep.UploadedBlobs+rep.Repaired, "%+v", rep)
	write(t, sc, "d0/f00", "changed on c")
	next, err := c.Snapshot(ctx, sc, "")
	require.NoError(t, err)
	opens = remote.opens.Load()
	rep, err = c.Push(ctx, next.ID)
	require.NoError(t, err)
	noReadBack(rep, "its next push")
}

// touchReads is a bucket that renews an object's time as s3store does on
// servers where a copy keeps the old time: by reading it back, verified,
// and writing it again. It finds junk.
type touchReads struct{ *bucket }

func (t touchReads) Touch(ctx context.Context, ns snapshot.Namespace, h vfs.Hash) error {
	data, ok := t.raw(ns, h)
	if ok && vfs.HashOf(data) != h {
		return fmt.Errorf("touch %s: %w", h.Short(), snapshot.ErrCorruptObject)
	}
	return t.bucket.Touch(ctx, ns, h)
}

// TestPushRepairsWhatATouchFindsWrong: a push renews the time of an old
// object it relies on, and the touch finds it overwritten since the last
// listing. The push repairs it rather than fail (on the old code the push
// failed, and every retry with it).
func TestPushRepairsWhatATouchFindsWrong(t *testing.T) {
	const grace = 2 * time.Second
	remote := newBucket()
	a, _ := newRemoteRepo(t, touchReads{remote}, snapshot.RemoteOptions{Grace: grace})
	sa, err := a.NewSession(ctx, snapshot.SessionOptions{ID: "a"})
	require.NoError(t, err)
	writeAll(t, sa, poisonFiles)
	first, err := a.Snapshot(ctx, sa, "")
	require.NoError(t, err)
	_, err = a.Push(ctx, first.ID)
	require.NoError(t, err)
	stored := time.Now()

	// Past half the grace period, a push of another snapshot lists the
	// remote again: first's objects are old now.
	time.Sleep(grace/2 + 200*time.Millisecond)
	sb, err := a.NewSession(ctx, snapshot.SessionOptions{ID: "b"})
	require.NoError(t, err)
	write(t, sb, "other", "other")
	other, err := a.Snapshot(ctx, sb, "")
	require.NoError(t, err)
	_, err = a.Push(ctx, other.ID)
	require.NoError(t, err)

	// Then another tenant overwrites a blob, and a snapshot with no parent
	// in the remote needs it: the push touches it, and the touch reads junk.
	victim := []byte(poisonFiles["docs/README"])
	remote.Plant(snapshot.Blobs, vfs.HashOf(victim), junkLike(victim, true), stored)
	sc, err := a.NewSession(ctx, snapshot.SessionOptions{ID: "c"})
	require.NoError(t, err)
	write(t, sc, "README", string(victim))
	second, err := a.Snapshot(ctx, sc, "")
	require.NoError(t, err)
	rep, err := a.Push(ctx, second.ID)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Repaired, "%+v", rep)
	got, _ := remote.raw(snapshot.Blobs, vfs.HashOf(victim))
	require.Equal(t, victim, got)
	forksWhole(t, remote, second.ID, map[string]string{"README": string(victim)})
}
