package httpapi_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/policy"
)

// tcpServer starts a daemon listening on TCP too, for tests with tokens.
func tcpServer(t *testing.T) (*server, *client.Client) {
	cfg := newConfig(t)
	cfg.Listen = "127.0.0.1:0"
	s := start(t, cfg)
	return s, s.tcpClient(s.d.AdminToken())
}

// TestReusedIDSeesNoOldSnapshots is the attack of issue 11: once session
// "victim" is closed, a session token recreates "victim" by forking itself
// with that id and reads the old victim's snapshots. A session token may not
// choose a fork's id; and even a "victim" the admin creates anew is another
// incarnation that reaches none of the old one's snapshots.
func TestReusedIDSeesNoOldSnapshots(t *testing.T) {
	s, admin := tcpServer(t)
	ctx := context.Background()
	v, err := admin.CreateSession(ctx, api.CreateSessionRequest{ID: "victim"})
	require.NoError(t, err)
	cv := s.tcpClient(v.Token)
	call(t, cv, "victim", "write_file", `{"path":"secret.txt","inline_text":"the victim's secret\n"}`, "ok")
	old, err := cv.CreateSnapshot(ctx, "victim", "secret")
	require.NoError(t, err)
	mallory, err := admin.CreateSession(ctx, api.CreateSessionRequest{ID: "mallory"})
	require.NoError(t, err)
	cm := s.tcpClient(mallory.Token)
	require.NoError(t, cv.CloseSession(ctx, "victim"))

	// A session token cannot name its fork.
	_, err = cm.ForkSession(ctx, "mallory", api.CreateSessionRequest{ID: "victim"})
	requireCode(t, err, api.CodeForbidden)
	require.Contains(t, err.Error(), "leave id out")
	_, err = admin.Session(ctx, "victim")
	requireCode(t, err, api.CodeNotFound)

	// The admin recreates "victim": a new incarnation, with a new token.
	v2, err := admin.CreateSession(ctx, api.CreateSessionRequest{ID: "victim"})
	require.NoError(t, err)
	cv2 := s.tcpClient(v2.Token)
	list, err := cv2.SessionSnapshots(ctx, "victim")
	require.NoError(t, err)
	require.Empty(t, list, "the old victim's snapshots are not the new one's")
	list, err = admin.SessionSnapshots(ctx, "victim")
	require.NoError(t, err)
	require.Empty(t, list, "the session route lists this incarnation's snapshots, for the admin too")
	for _, ref := range []string{old.ID, old.ID[:12], old.ID[:4]} {
		_, err = cv2.Restore(ctx, "victim", ref)
		requireCode(t, err, api.CodeNotFound)
		if len(ref) < 64 {
			require.NotContains(t, err.Error(), old.ID[:len(ref)+1], "the error names no more of the ID than was sent")
		}
		_, err = cv2.SessionDiff(ctx, "victim", client.DiffQuery{From: ref, Text: true})
		requireCode(t, err, api.CodeNotFound)
		_, err = cv2.SessionDiff(ctx, "victim", client.DiffQuery{From: "live", To: ref})
		requireCode(t, err, api.CodeNotFound)
		_, err = cv2.ForkSnapshot(ctx, ref, api.CreateSessionRequest{})
		requireCode(t, err, api.CodeForbidden)
	}
	call(t, cv2, "victim", "read_file", `{"path":"secret.txt"}`, "not_found")

	// A fork the new victim makes reaches its own base, not the old
	// victim's snapshots.
	f, err := cv2.ForkSession(ctx, "victim", api.CreateSessionRequest{})
	require.NoError(t, err)
	require.NotEqual(t, "victim", f.Session.ID)
	cf := s.tcpClient(f.Token)
	_, err = cf.Restore(ctx, f.Session.ID, f.Session.Base)
	require.NoError(t, err, "a fork reaches the snapshot it was forked from")
	_, err = cf.Restore(ctx, f.Session.ID, old.ID)
	requireCode(t, err, api.CodeNotFound)

	// Its own snapshots stay within its reach; the admin still reaches all.
	mine, err := cv2.CreateSnapshot(ctx, "victim", "mine")
	require.NoError(t, err)
	list, err = cv2.SessionSnapshots(ctx, "victim")
	require.NoError(t, err)
	require.Len(t, list, 2, "its own and the one its fork took of it")
	require.Equal(t, mine.ID, list[0].ID)
	require.Equal(t, f.Session.Base, list[1].ID)
	_, err = cv2.Restore(ctx, "victim", mine.ID[:8])
	require.NoError(t, err)
	_, err = admin.Restore(ctx, "victim", old.ID)
	require.NoError(t, err, "the admin may restore any snapshot")
	call(t, admin, "victim", "read_file", `{"path":"secret.txt"}`, "ok")
}

// TestSnapshotProbeIsNoOracle checks that a session token learns nothing
// from probing snapshot references: another session's snapshot answers
// exactly as one that does not exist.
func TestSnapshotProbeIsNoOracle(t *testing.T) {
	s, admin := tcpServer(t)
	ctx := context.Background()
	a, err := admin.CreateSession(ctx, api.CreateSessionRequest{ID: "a"})
	require.NoError(t, err)
	b, err := admin.CreateSession(ctx, api.CreateSessionRequest{ID: "b"})
	require.NoError(t, err)
	ca, cb := s.tcpClient(a.Token), s.tcpClient(b.Token)
	call(t, ca, "a", "write_file", `{"path":"x","inline_text":"x"}`, "ok")
	theirs, err := ca.CreateSnapshot(ctx, "a", "")
	require.NoError(t, err)

	// A reference that matches no snapshot at all, of the same length.
	all, err := admin.Snapshots(ctx, "")
	require.NoError(t, err)
	absent := func(n int) string {
		for _, c := range []string{"0000", "1111", "2222", "3333", "4444", "5555", "6666", "7777", "8888", "9999", "aaaa", "bbbb", "cccc", "dddd", "eeee", "ffff"} {
			ref := strings.Repeat(c, 16)[:n]
			taken := false
			for _, s := range all {
				taken = taken || strings.HasPrefix(s.ID, ref)
			}
			if !taken {
				return ref
			}
		}
		t.Fatal("no absent prefix")
		return ""
	}
	type probe func(ref string) error
	probes := map[string]probe{
		"restore": func(ref string) error { _, err := cb.Restore(ctx, "b", ref); return err },
		"diff from": func(ref string) error {
			_, err := cb.SessionDiff(ctx, "b", client.DiffQuery{From: ref})
			return err
		},
		"diff to": func(ref string) error {
			_, err := cb.SessionDiff(ctx, "b", client.DiffQuery{From: "base", To: ref})
			return err
		},
	}
	for name, p := range probes {
		for _, n := range []int{4, 12, 64} {
			seen, missing := p(theirs.ID[:n]), p(absent(n))
			require.Error(t, seen, name)
			require.Error(t, missing, name)
			var es, em *api.Error
			require.ErrorAs(t, seen, &es)
			require.ErrorAs(t, missing, &em)
			require.Equal(t, em.Code, es.Code, "%s %d: %v vs %v", name, n, seen, missing)
			require.Equal(t, em.Status, es.Status)
			require.Equal(t, strings.ReplaceAll(em.Message, absent(n), "REF"), strings.ReplaceAll(es.Message, theirs.ID[:n], "REF"),
				"%s with %d hex digits: the messages differ only by the reference sent", name, n)
			if n < 64 {
				require.NotContains(t, es.Message, theirs.ID[:n+1], "%s: no more of the ID than was sent", name)
			}
		}
	}
}

// TestForkBounds checks that a session token cannot outlive its session
// through forks, nor fork without bound; the admin is not bounded.
func TestForkBounds(t *testing.T) {
	s, admin := tcpServer(t)
	ctx := context.Background()
	p, err := admin.CreateSession(ctx, api.CreateSessionRequest{ID: "p", TTL: "60s"})
	require.NoError(t, err)
	require.NotNil(t, p.Session.ExpiresAt)
	cp := s.tcpClient(p.Token)
	limit := int(policy.Default().Caps.MaxForks)
	require.Positive(t, limit, "the default policy bounds forks")

	// Forks of a session token expire with their parent at the latest.
	for _, ttl := range []string{"never", "0", "", "24h"} {
		f, err := cp.ForkSession(ctx, "p", api.CreateSessionRequest{TTL: ttl})
		require.NoError(t, err, ttl)
		require.NotNil(t, f.Session.ExpiresAt, "ttl %q", ttl)
		require.False(t, f.Session.ExpiresAt.After(*p.Session.ExpiresAt), "ttl %q: %v after %v", ttl, f.Session.ExpiresAt, p.Session.ExpiresAt)
		// ... and so do their forks.
		cf := s.tcpClient(f.Token)
		ff, err := cf.ForkSession(ctx, f.Session.ID, api.CreateSessionRequest{TTL: "never"})
		require.NoError(t, err)
		require.NotNil(t, ff.Session.ExpiresAt)
		require.False(t, ff.Session.ExpiresAt.After(*p.Session.ExpiresAt))
	}
	f, err := cp.ForkSession(ctx, "p", api.CreateSessionRequest{TTL: "10s"})
	require.NoError(t, err)
	require.True(t, f.Session.ExpiresAt.Before(*p.Session.ExpiresAt), "a shorter TTL is kept")

	// The forks session tokens make from one session the admin created
	// share one budget: 9 open so far.
	made := 9
	for ; made < limit; made++ {
		_, err := cp.ForkSession(ctx, "p", api.CreateSessionRequest{})
		require.NoError(t, err, "fork %d of %d", made+1, limit)
	}
	_, err = cp.ForkSession(ctx, "p", api.CreateSessionRequest{})
	requireCode(t, err, api.CodeLimitExceeded)
	require.Contains(t, err.Error(), "max_forks")
	// A fork's token draws on the same budget.
	cf := s.tcpClient(f.Token)
	_, err = cf.ForkSession(ctx, f.Session.ID, api.CreateSessionRequest{})
	requireCode(t, err, api.CodeLimitExceeded)
	got, err := admin.Session(ctx, "p")
	require.NoError(t, err)
	require.Equal(t, limit, got.Forks)

	// Closing a fork gives its place back.
	require.NoError(t, cf.CloseSession(ctx, f.Session.ID))
	again, err := cp.ForkSession(ctx, "p", api.CreateSessionRequest{})
	require.NoError(t, err)
	_, err = cp.ForkSession(ctx, "p", api.CreateSessionRequest{})
	requireCode(t, err, api.CodeLimitExceeded)
	require.Equal(t, "p", again.Session.ForkBudgetOf)

	// The admin is bounded by neither.
	a, err := admin.ForkSession(ctx, "p", api.CreateSessionRequest{ID: "by-admin", TTL: "never"})
	require.NoError(t, err)
	require.Nil(t, a.Session.ExpiresAt)

	// The count survives a restart.
	s.stop()
	s2 := start(t, s.cfg)
	cp = s2.tcpClient(p.Token)
	_, err = cp.ForkSession(ctx, "p", api.CreateSessionRequest{})
	requireCode(t, err, api.CodeLimitExceeded)
	got, err = s2.c.Session(ctx, "p")
	require.NoError(t, err)
	require.Equal(t, limit, got.Forks)
}

// TestVisibilitySurvivesRestart checks that a session's reach is the same
// after a restart: its own snapshots, not those of an earlier session of
// the same id.
func TestVisibilitySurvivesRestart(t *testing.T) {
	s, admin := tcpServer(t)
	ctx := context.Background()
	v, err := admin.CreateSession(ctx, api.CreateSessionRequest{ID: "victim"})
	require.NoError(t, err)
	old, err := s.tcpClient(v.Token).CreateSnapshot(ctx, "victim", "old")
	require.NoError(t, err)
	require.NoError(t, admin.CloseSession(ctx, "victim"))
	v2, err := admin.CreateSession(ctx, api.CreateSessionRequest{ID: "victim"})
	require.NoError(t, err)
	mine, err := s.tcpClient(v2.Token).CreateSnapshot(ctx, "victim", "mine")
	require.NoError(t, err)
	s.stop()

	s2 := start(t, s.cfg)
	c := s2.tcpClient(v2.Token)
	_, err = c.Restore(ctx, "victim", old.ID)
	requireCode(t, err, api.CodeNotFound)
	_, err = c.Restore(ctx, "victim", mine.ID)
	require.NoError(t, err)
	list, err := c.SessionSnapshots(ctx, "victim")
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, mine.ID, list[0].ID)
}

// TestLegacySnapshotsVisibility checks data dirs from before incarnation
// ids: a snapshot without one reaches the session it was taken of only when
// taken after that session was created; an earlier session of the same id
// keeps its own.
func TestLegacySnapshotsVisibility(t *testing.T) {
	cfg := newConfig(t)
	cfg.Listen = "127.0.0.1:0"
	ctx := context.Background()
	// What an older daemon left: two sessions "victim" one after the
	// other, each snapshotted, with records that carry no incarnation id.
	store, err := snapshot.OpenLocal(filepath.Join(cfg.DataDir, "store"))
	require.NoError(t, err)
	repo, err := snapshot.OpenRepo(ctx, store, filepath.Join(cfg.DataDir, "sessions"), snapshot.RepoOptions{})
	require.NoError(t, err)
	s1, err := repo.NewSession(ctx, snapshot.SessionOptions{ID: "victim"})
	require.NoError(t, err)
	old, err := repo.Snapshot(ctx, s1, "earlier incarnation")
	require.NoError(t, err)
	require.Empty(t, old.Record.SessionUID)
	require.NoError(t, repo.DeleteSession("victim"))
	time.Sleep(5 * time.Millisecond) // record times are milliseconds
	created := time.Now().UTC()
	time.Sleep(5 * time.Millisecond)
	s2, err := repo.NewSession(ctx, snapshot.SessionOptions{ID: "victim"})
	require.NoError(t, err)
	mine, err := repo.Snapshot(ctx, s2, "this incarnation")
	require.NoError(t, err)
	require.NoError(t, repo.Close())
	require.NoError(t, store.Close())
	token := "vfsd_sess_legacy-token"
	sum := sha256.Sum256([]byte(token))
	meta, err := json.Marshal(map[string]any{"format": 1, "id": "victim", "created": created, "policy": "default",
		"profile": "anthropic", "token_hash": hex.EncodeToString(sum[:])})
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(cfg.DataDir, "meta"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(cfg.DataDir, "meta", "victim.json"), meta, 0o600))

	s := start(t, cfg)
	c := s.tcpClient(token)
	_, err = c.Restore(ctx, "victim", old.ID)
	requireCode(t, err, api.CodeNotFound)
	_, err = c.Restore(ctx, "victim", mine.ID)
	require.NoError(t, err, "a snapshot taken of the session after it was created is its own")
	list, err := c.SessionSnapshots(ctx, "victim")
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, mine.ID, list[0].ID)
	got, err := s.c.Session(ctx, "victim")
	require.NoError(t, err)
	require.NotEmpty(t, got.UID, "the daemon gives an older session an incarnation id")

	// The same after another restart, and for a new snapshot.
	now, err := c.CreateSnapshot(ctx, "victim", "")
	require.NoError(t, err)
	s.stop()
	s = start(t, cfg)
	c = s.tcpClient(token)
	for _, id := range []string{mine.ID, now.ID} {
		_, err = c.Restore(ctx, "victim", id)
		require.NoError(t, err)
	}
	_, err = c.Restore(ctx, "victim", old.ID)
	requireCode(t, err, api.CodeNotFound)
}

// TestBlobsStayApart checks that a session token reads only the blobs its
// session was given or made: not another session's content, even with its
// hash, and a blob it may not read answers as one that does not exist.
func TestBlobsStayApart(t *testing.T) {
	s, admin := tcpServer(t)
	ctx := context.Background()
	a, err := admin.CreateSession(ctx, api.CreateSessionRequest{ID: "a"})
	require.NoError(t, err)
	b, err := admin.CreateSession(ctx, api.CreateSessionRequest{ID: "b"})
	require.NoError(t, err)
	ca, cb := s.tcpClient(a.Token), s.tcpClient(b.Token)
	secret := "hunter2 is a's password\n"
	call(t, ca, "a", "write_file", `{"path":"secret.txt","inline_text":"`+strings.TrimSpace(secret)+`\n"}`, "ok")
	_, err = ca.CreateSnapshot(ctx, "a", "")
	require.NoError(t, err)
	guessed := "blake3:" + vfs.HashOf([]byte(secret)).String()
	nowhere := "blake3:" + vfs.HashOf([]byte("stored nowhere")).String()

	read := func(c *client.Client, ref string) (string, error) {
		rc, _, err := c.GetBlob(ctx, ref)
		if err != nil {
			return "", err
		}
		defer rc.Close()
		body, err := io.ReadAll(rc)
		return string(body), err
	}
	got, err := read(admin, guessed)
	require.NoError(t, err, "the admin reads any blob")
	require.Equal(t, secret, got)
	_, err = read(cb, guessed)
	requireCode(t, err, api.CodeNotFound)
	_, errMissing := read(cb, nowhere)
	requireCode(t, errMissing, api.CodeNotFound)
	require.Equal(t, strings.ReplaceAll(errMissing.Error(), nowhere[7:], "H"), strings.ReplaceAll(err.Error(), guessed[7:], "H"))
	// Nor through a tool: write_file from a guessed blob.
	r := call(t, cb, "b", "write_file", `{"path":"stolen.txt","blob_ref":"`+guessed+`"}`, "not_found")
	require.NotEmpty(t, r)

	// What a session uploads, it reads and writes; the other does not.
	up, err := ca.PutBlob(ctx, strings.NewReader("a's upload"))
	require.NoError(t, err)
	got, err = read(ca, up.BlobRef)
	require.NoError(t, err)
	require.Equal(t, "a's upload", got)
	call(t, ca, "a", "write_file", `{"path":"up.txt","blob_ref":"`+up.BlobRef+`"}`, "ok")
	_, err = read(cb, up.BlobRef)
	requireCode(t, err, api.CodeNotFound)

	// What the admin uploads, any session may use (the admin hands it out).
	shared, err := admin.PutBlob(ctx, strings.NewReader("for everyone"))
	require.NoError(t, err)
	call(t, cb, "b", "write_file", `{"path":"shared.txt","blob_ref":"`+shared.BlobRef+`"}`, "ok")
	got, err = read(cb, shared.BlobRef)
	require.NoError(t, err)
	require.Equal(t, "for everyone", got)

	// A tool's blob output is its session's to read.
	big := strings.Repeat("0123456789abcdef", 5000)
	call(t, ca, "a", "write_file", `{"path":"big.txt","inline_text":"`+big+`"}`, "ok")
	out := call(t, ca, "a", "read_file", `{"path":"big.txt","offset_bytes":0}`, "ok")
	blob, ok := out["blob"].(map[string]any)
	require.True(t, ok, "a large byte range returns a blob: %v", out)
	ref := blob["blob_ref"].(string)
	got, err = read(ca, ref)
	require.NoError(t, err)
	require.Equal(t, big, got)
	_, err = read(cb, ref)
	requireCode(t, err, api.CodeNotFound)
}
