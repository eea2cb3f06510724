package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
	"github.com/vfsd/vfsd/internal/s3server"
	"github.com/vfsd/vfsd/snapshot/s3store"
)

// The fleet's lease in these tests: short, so that a takeover waits
// little; the skew leaves room for a loaded machine.
const (
	fleetLease = 2 * time.Second
	fleetSkew  = 300 * time.Millisecond
)

// startFleetDaemon runs `vfsd serve` on the bucket url as daemon name, with
// env added to its environment (VFSD_CRASH_AT).
func startFleetDaemon(t *testing.T, url, name string, env ...string) *daemonProc {
	t.Helper()
	dir, sock := newDaemonDirs(t)
	p := &daemonProc{t: t, bin: vfsdBinary(t), dataDir: dir, socket: sock, env: env,
		args: []string{"--remote", url, "--name", name, "--lease", fleetLease.String(), "--max-clock-skew", fleetSkew.String()}}
	p.start()
	t.Cleanup(p.kill)
	return p
}

// restart starts a daemon that exited again, without the extra
// environment (its crash point).
func (p *daemonProc) restart() {
	p.t.Helper()
	p.kill9()
	p.mu.Lock()
	p.log.Reset()
	p.mu.Unlock()
	p.env = nil
	p.start()
}

// apiCode is the API error code of err ("" when it is none).
func apiCode(err error) string {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae.Code
	}
	return ""
}

// tryRead reads path in session on c: its text, or the call's error.
func tryRead(ctx context.Context, c *client.Client, session, path string) (string, error) {
	b, _ := json.Marshal(map[string]any{"path": path, "output_mode": "require_inline"})
	r, err := c.CallTool(ctx, session, "read_file", b)
	if err != nil {
		return "", err
	}
	if r.Status != "ok" {
		return "", fmt.Errorf("read_file: %s", r.JSON)
	}
	var out struct {
		Text *string `json:"inline_text"`
	}
	if err := json.Unmarshal(r.JSON, &out); err != nil || out.Text == nil {
		return "", fmt.Errorf("read_file: %s", r.JSON)
	}
	return *out.Text, nil
}

func tryWrite(ctx context.Context, c *client.Client, session, path, content string) error {
	b, _ := json.Marshal(map[string]any{"path": path, "content": content})
	r, err := c.CallTool(ctx, session, "write_file", b)
	if err != nil {
		return err
	}
	if r.Status != "ok" {
		return fmt.Errorf("write_file: %s", r.JSON)
	}
	return nil
}

// pushHead snapshots session on c and pushes it: the session's head in the
// fleet moves to it.
func pushHead(t *testing.T, ctx context.Context, c *client.Client, session string) *api.Snapshot {
	t.Helper()
	s, err := c.CreateSnapshot(ctx, session, "head")
	require.NoError(t, err)
	_, err = c.PushSnapshot(ctx, s.ID)
	require.NoError(t, err)
	got, err := c.Session(ctx, session)
	require.NoError(t, err)
	require.NotNil(t, got.Owner)
	require.Equal(t, s.ID, got.Owner.Head, "the push moved the session's head")
	return s
}

// TestFleetOwnershipRace: two daemons racing to create one session ID
// — exactly one wins, every round, and the loser's answer names the
// winner; then two daemons racing to take over the sessions of a daemon
// that died — exactly one takes each, from its pushed head.
func TestFleetOwnershipRace(t *testing.T) {
	srv := startS3(t)
	url := srv.URL("vfsd-fleet", "race")
	a := startFleetDaemon(t, url, "daemon-a")
	b := startFleetDaemon(t, url, "daemon-b")
	ca, cb := a.client(), b.client()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	for round := range 20 {
		id := fmt.Sprintf("race-%d", round)
		var wins atomic.Int32
		var wg sync.WaitGroup
		for _, c := range []*client.Client{ca, cb} {
			wg.Go(func() {
				_, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: id})
				switch {
				case err == nil:
					wins.Add(1)
				case apiCode(err) == api.CodeConflict && strings.Contains(err.Error(), "is owned by daemon"):
				default:
					t.Errorf("round %d: %v", round, err)
				}
			})
		}
		wg.Wait()
		require.EqualValues(t, 1, wins.Load(), "round %d: exactly one daemon creates the session", round)
	}

	// A third daemon owns sessions with pushed heads, and dies.
	c := startFleetDaemon(t, url, "daemon-c")
	cc := c.client()
	const n = 6
	for i := range n {
		id := fmt.Sprintf("orphan-%d", i)
		_, err := cc.CreateSession(ctx, api.CreateSessionRequest{ID: id})
		require.NoError(t, err)
		tool(t, cc, id, "write_file", map[string]any{"path": "f", "content": id})
		pushHead(t, ctx, cc, id)
	}
	_, err := ca.TakeSession(ctx, "orphan-0")
	require.Equal(t, api.CodeConflict, apiCode(err), "a live owner's session is not taken: %v", err)
	c.kill9()
	time.Sleep(fleetLease + fleetSkew + 200*time.Millisecond)
	for i := range n {
		id := fmt.Sprintf("orphan-%d", i)
		var wins atomic.Int32
		var winner atomic.Pointer[client.Client]
		var wg sync.WaitGroup
		for _, cl := range []*client.Client{ca, cb} {
			wg.Go(func() {
				s, err := cl.TakeSession(ctx, id)
				switch {
				case err == nil:
					require.EqualValues(t, 2, s.Owner.Epoch)
					wins.Add(1)
					winner.Store(cl)
				case apiCode(err) == api.CodeConflict:
				default:
					t.Errorf("take %s: %v", id, err)
				}
			})
		}
		wg.Wait()
		require.EqualValues(t, 1, wins.Load(), "%s: exactly one daemon takes it", id)
		require.Equal(t, id, readText(t, winner.Load(), id, "f"), "the taker starts from the pushed head")
	}
}

// TestFleetPausedOwnerIsFenced: the owner is paused (SIGSTOP) past its
// lease; a second daemon takes the session over; the first, resumed, has
// its next call refused with 'fenced' naming the new owner — and what it
// acknowledged after its last push is not lost: it is kept in the fleet
// under a ref.
func TestFleetPausedOwnerIsFenced(t *testing.T) {
	srv := startS3(t)
	url := srv.URL("vfsd-fleet", "pause")
	a := startFleetDaemon(t, url, "daemon-a")
	b := startFleetDaemon(t, url, "daemon-b")
	ca, cb := a.client(), b.client()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	_, err := ca.CreateSession(ctx, api.CreateSessionRequest{ID: "p"})
	require.NoError(t, err)
	tool(t, ca, "p", "write_file", map[string]any{"path": "pushed", "content": "in the head\n"})
	pushHead(t, ctx, ca, "p")
	tool(t, ca, "p", "write_file", map[string]any{"path": "acked", "content": "acknowledged after the push\n"})

	require.NoError(t, a.cmd.Process.Signal(syscall.SIGSTOP))
	resumed := false
	defer func() {
		if !resumed {
			_ = a.cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	time.Sleep(fleetLease + fleetSkew + 300*time.Millisecond)
	s, err := cb.TakeSession(ctx, "p")
	require.NoError(t, err)
	require.EqualValues(t, 2, s.Owner.Epoch)
	require.Equal(t, "in the head\n", readText(t, cb, "p", "pushed"))
	tool(t, cb, "p", "write_file", map[string]any{"path": "on-b", "content": "B's\n"})

	require.NoError(t, a.cmd.Process.Signal(syscall.SIGCONT))
	resumed = true
	err = tryWrite(ctx, ca, "p", "late", "after the lease\n")
	require.Equal(t, api.CodeFenced, apiCode(err), "the resumed owner's next write is refused: %v", err)
	require.Contains(t, err.Error(), "daemon-b")
	_, err = tryRead(ctx, ca, "p", "pushed")
	require.Equal(t, api.CodeFenced, apiCode(err))
	got, err := ca.Session(ctx, "p")
	require.NoError(t, err)
	require.True(t, got.Owner.Fenced)
	require.Equal(t, "daemon-b", got.Owner.Daemon)

	// What A acknowledged after its last push is kept under a ref.
	ref := "fenced/p/daemon-a-e1"
	require.Eventually(t, func() bool {
		_, err := cb.Ref(ctx, ref)
		return err == nil
	}, 60*time.Second, 50*time.Millisecond, "the fenced copy is kept in the fleet")
	_, err = cb.CreateSession(ctx, api.CreateSessionRequest{ID: "recovered", FromRef: ref})
	require.NoError(t, err)
	require.Equal(t, "acknowledged after the push\n", readText(t, cb, "recovered", "acked"))
	// B, the owner, goes on; its head moves.
	pushHead(t, ctx, cb, "p")
}

// TestFleetHandoffCrash hands a session from daemon A to daemon B and
// kills (SIGKILL) the sender or the receiver at each step of the
// protocol. After a restart, exactly one daemon serves the session — A
// before the compare-and-swap of the owner record, B from it on — with
// every change A acknowledged; the other answers fenced (A) or does not
// have it (B).
func TestFleetHandoffCrash(t *testing.T) {
	srv := startS3(t)
	for _, tc := range []struct {
		crash  string // VFSD_CRASH_AT
		sender bool   // which daemon crashes
		owner  string // who owns the session afterwards
	}{
		{crash: "", owner: "b"},
		{crash: "move:frozen", sender: true, owner: "a"},
		{crash: "move:snapshotted", sender: true, owner: "a"},
		{crash: "move:pushed", sender: true, owner: "a"},
		{crash: "move:handed", sender: true, owner: "b"},
		{crash: "adopt:read", owner: "b"},
		{crash: "adopt:forked", owner: "b"},
	} {
		name := tc.crash
		if name == "" {
			name = "none"
		}
		t.Run(name, func(t *testing.T) {
			testHandoffCrash(t, srv, tc.crash, tc.sender, tc.owner)
		})
	}
}

func testHandoffCrash(t *testing.T, srv *s3server.Server, crash string, sender bool, owner string) {
	url := srv.URL("vfsd-fleet", "handoff-"+strings.ReplaceAll(crash, ":", "-"))
	var envA, envB []string
	if crash != "" && sender {
		envA = []string{"VFSD_CRASH_AT=" + crash}
	} else if crash != "" {
		envB = []string{"VFSD_CRASH_AT=" + crash}
	}
	a := startFleetDaemon(t, url, "daemon-a", envA...)
	b := startFleetDaemon(t, url, "daemon-b", envB...)
	ca, cb := a.client(), b.client()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	_, err := ca.CreateSession(ctx, api.CreateSessionRequest{ID: "h"})
	require.NoError(t, err)
	tool(t, ca, "h", "write_file", map[string]any{"path": "old", "content": "pushed before\n"})
	pushHead(t, ctx, ca, "h")
	tool(t, ca, "h", "write_file", map[string]any{"path": "acked", "content": "acknowledged, not pushed\n"})

	_, err = ca.MoveSession(ctx, "h", "daemon-b")
	if crash != "" && sender {
		require.Error(t, err, "the sender died in the move")
		a.restart()
		ca = a.client()
	} else {
		require.NoError(t, err)
		if crash != "" {
			_, err = tryRead(ctx, cb, "h", "acked")
			require.Error(t, err, "the receiver died taking the session up")
			b.restart()
			cb = b.client()
		}
	}

	// Exactly one daemon serves it, with every acknowledged change.
	ownerC, otherC := ca, cb
	if owner == "b" {
		ownerC, otherC = cb, ca
	}
	for range 2 {
		txt, err := tryRead(ctx, ownerC, "h", "acked")
		require.NoError(t, err, "the owner (%s) serves the session", owner)
		require.Equal(t, "acknowledged, not pushed\n", txt)
		_, err = tryRead(ctx, otherC, "h", "acked")
		require.Error(t, err, "the other daemon does not")
		require.Contains(t, []string{api.CodeFenced, api.CodeNotFound}, apiCode(err), "%v", err)
		// The owner goes on writing and pushing; the other stays out.
		require.NoError(t, tryWrite(ctx, ownerC, "h", "after", "written after the hand-off\n"))
		pushHead(t, ctx, ownerC, "h")
		require.Error(t, tryWrite(ctx, otherC, "h", "after", "must be refused\n"))
	}
}

// TestFleetViewAndRefs: a second daemon lists the first's pushed
// snapshots (with the daemon that pushed them) and resolves their short
// IDs; refs are shared, moved by compare-and-swap under concurrent movers
// on two daemons (none lost), forked from (API and CLI), and keep their
// snapshot from deletion; the daemons list each other; a poisoned owner
// record in the bucket does not stop a session from being claimed and
// pushed.
func TestFleetViewAndRefs(t *testing.T) {
	srv := startS3(t)
	url := srv.URL("vfsd-fleet", "view")
	a := startFleetDaemon(t, url, "daemon-a")
	b := startFleetDaemon(t, url, "daemon-b")
	ca, cb := a.client(), b.client()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	_, err := ca.CreateSession(ctx, api.CreateSessionRequest{ID: "v"})
	require.NoError(t, err)
	tool(t, ca, "v", "write_file", map[string]any{"path": "README", "content": "from A\n"})
	snap := pushHead(t, ctx, ca, "v")

	list, err := cb.Snapshots(ctx, "")
	require.NoError(t, err)
	var found *api.Snapshot
	for i := range list {
		if list[i].ID == snap.ID {
			found = &list[i]
		}
	}
	require.NotNil(t, found, "B lists A's pushed snapshot")
	require.Equal(t, "daemon-a", found.Daemon)
	require.True(t, found.Remote)
	require.Equal(t, "v", found.Session)
	local, err := cb.SnapshotsOf(ctx, "", true)
	require.NoError(t, err)
	require.Empty(t, local, "--local lists B's own only")
	short := snap.ID[:8]
	got, err := cb.Snapshot(ctx, short)
	require.NoError(t, err, "B resolves A's short ID")
	require.Equal(t, snap.ID, got.ID)
	_, err = cb.ForkSnapshot(ctx, short, api.CreateSessionRequest{ID: "v-fork"})
	require.NoError(t, err)
	require.Equal(t, "from A\n", readText(t, cb, "v-fork", "README"))

	// Refs.
	r, err := ca.SetRef(ctx, "team/main", api.RefRequest{Snapshot: short})
	require.NoError(t, err)
	require.Equal(t, snap.ID, r.Snapshot)
	refs, err := cb.Refs(ctx)
	require.NoError(t, err)
	require.Len(t, refs.Refs, 1)
	require.Equal(t, "team/main", refs.Refs[0].Name)
	_, err = cb.CreateSession(ctx, api.CreateSessionRequest{ID: "v-ref", FromRef: "team/main"})
	require.NoError(t, err)
	require.Equal(t, "from A\n", readText(t, cb, "v-ref", "README"))
	out, errOut, code := b.cli(ctx, nil, "snapshot", "fork", "--from-ref", "team/main", "--id", "v-cli")
	require.Zero(t, code, "%s%s", out, errOut)
	out, _, code = b.cli(ctx, nil, "ref", "list")
	require.Zero(t, code)
	require.Contains(t, out, "team/main")
	out, _, code = b.cli(ctx, nil, "daemon", "list")
	require.Zero(t, code)
	require.Contains(t, out, "daemon-a")
	require.Contains(t, out, "daemon-b (this one)")

	// Hand-off from the CLI.
	_, err = ca.CreateSession(ctx, api.CreateSessionRequest{ID: "mv"})
	require.NoError(t, err)
	tool(t, ca, "mv", "write_file", map[string]any{"path": "f", "content": "moved by the CLI\n"})
	// A daemon the fleet does not know (a typo) is refused before
	// anything is frozen: the session stays A's and answers.
	_, errOut, code = a.cli(ctx, nil, "session", "move", "mv", "--to", "daemon-bb")
	require.NotZero(t, code)
	require.Contains(t, errOut, "no daemon named daemon-bb in the fleet")
	require.Equal(t, "moved by the CLI\n", readText(t, ca, "mv", "f"))
	out, errOut, code = a.cli(ctx, nil, "session", "move", "mv", "--to", "daemon-b")
	require.Zero(t, code, "%s%s", out, errOut)
	require.Contains(t, out, "moved session mv to daemon-b")
	require.Equal(t, "moved by the CLI\n", readText(t, cb, "mv", "f"))
	_, errOut, code = a.cli(ctx, nil, "tool", "mv", "read_file", "--params", `{"path":"f"}`)
	require.NotZero(t, code)
	require.Contains(t, errOut, "daemon-b")

	// A ref that follows a session's head.
	_, err = ca.CreateSession(ctx, api.CreateSessionRequest{ID: "follow", KeepRef: "follow/head"})
	require.NoError(t, err)
	tool(t, ca, "follow", "write_file", map[string]any{"path": "f", "content": "1"})
	head := pushHead(t, ctx, ca, "follow")
	fr, err := cb.Ref(ctx, "follow/head")
	require.NoError(t, err)
	require.Equal(t, head.ID, fr.Snapshot, "the ref follows the head")

	// Concurrent movers on both daemons: every move is applied.
	snap2 := pushHead(t, ctx, ca, "v")
	var wg sync.WaitGroup
	for m := range 4 {
		c := []*client.Client{ca, cb}[m%2]
		wg.Go(func() {
			for i := range 5 {
				target := []string{snap.ID, snap2.ID}[(m+i)%2]
				if _, err := c.SetRef(ctx, "team/main", api.RefRequest{Snapshot: target}); err != nil {
					t.Errorf("mover %d: %v", m, err)
				}
			}
		})
	}
	wg.Wait()
	r, err = ca.Ref(ctx, "team/main")
	require.NoError(t, err)
	require.EqualValues(t, 1+20, r.Seq, "no move lost")
	_, err = cb.SetRef(ctx, "team/main", api.RefRequest{Snapshot: snap.ID, Expect: strings.Repeat("0", 64)})
	require.Equal(t, api.CodeConflict, apiCode(err), "a conditional move on a stale target is refused")

	// A snapshot a ref points at is not deleted; once the ref is gone,
	// it is.
	_, err = ca.SetRef(ctx, "keep", api.RefRequest{Snapshot: snap.ID})
	require.NoError(t, err)
	_, err = ca.SetRef(ctx, "team/main", api.RefRequest{Snapshot: snap2.ID})
	require.NoError(t, err)
	_, err = ca.DeleteSnapshot(ctx, snap.ID)
	require.Equal(t, api.CodeConflict, apiCode(err), "%v", err)
	require.Contains(t, err.Error(), "ref keep")
	require.NoError(t, ca.DeleteRef(ctx, "keep"))
	_, err = ca.Ref(ctx, "keep")
	require.Equal(t, api.CodeNotFound, apiCode(err))

	// A hostile tenant's garbage under an owner key and the index.
	cfg, err := s3store.ParseURL(url)
	require.NoError(t, err)
	st, err := s3store.Open(ctx, cfg)
	require.NoError(t, err)
	require.NoError(t, st.Coord().RawPut(ctx, "sessions/poisoned", []byte("{not json")))
	require.NoError(t, st.Coord().RawPut(ctx, "snaps/zzzz/garbage", nil))
	require.NoError(t, st.Coord().RawPut(ctx, "refs/bad", []byte(strings.Repeat("x", 70_000))))
	_, err = ca.CreateSession(ctx, api.CreateSessionRequest{ID: "poisoned"})
	require.NoError(t, err, "a poisoned owner record does not stop a claim")
	tool(t, ca, "poisoned", "write_file", map[string]any{"path": "x", "content": "y"})
	pushHead(t, ctx, ca, "poisoned")
	_, err = cb.Snapshots(ctx, "")
	require.NoError(t, err)
	refs, err = cb.Refs(ctx)
	require.NoError(t, err)
	require.Len(t, refs.Refs, 2, "team/main and follow/head; the unreadable ref is skipped")
}

// TestFleetClaimLater: a session created while the remote is down is
// created unclaimed, and claimed once the remote is back.
func TestFleetClaimLater(t *testing.T) {
	srv := startS3(t)
	url := srv.URL("vfsd-fleet", "later")
	a := startFleetDaemon(t, url, "daemon-a")
	ca := a.client()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv.Stop()
	_, err := ca.CreateSession(ctx, api.CreateSessionRequest{ID: "offline"})
	require.NoError(t, err, "local work does not wait for the remote")
	tool(t, ca, "offline", "write_file", map[string]any{"path": "f", "content": "x"})
	s, err := ca.Session(ctx, "offline")
	require.NoError(t, err)
	require.Zero(t, s.Owner.Epoch, "not claimed yet")
	require.NoError(t, srv.Restart(ctx))
	require.Eventually(t, func() bool {
		s, err := ca.Session(ctx, "offline")
		return err == nil && s.Owner.Epoch == 1 && !s.Owner.Fenced
	}, 30*time.Second, 50*time.Millisecond, "claimed once the remote answers")
	pushHead(t, ctx, ca, "offline")
}

// TestFleetHandBack: a session moved from A to B and back to A. A still
// holds its old, fenced copy when the session comes back: the hand-back
// must replace it with B's head (B's changes in, A's answers no longer
// fenced), fence B, and survive A's restart; the epoch only grows.
func TestFleetHandBack(t *testing.T) {
	srv := startS3(t)
	url := srv.URL("vfsd-fleet", "handback")
	a := startFleetDaemon(t, url, "daemon-a")
	b := startFleetDaemon(t, url, "daemon-b")
	ca, cb := a.client(), b.client()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	_, err := ca.CreateSession(ctx, api.CreateSessionRequest{ID: "hb", Label: "the hand-back test", Profile: "openai",
		PolicyObject: json.RawMessage(`{"base":"default","deny_hidden":true,"checkpoints":true}`),
		Quota:        &api.Quota{MaxSnapshots: 40}})
	require.NoError(t, err)
	tool(t, ca, "hb", "write_file", map[string]any{"path": "a.txt", "content": "A's\n"})
	rep, err := ca.MoveSession(ctx, "hb", "daemon-b")
	require.NoError(t, err)
	require.EqualValues(t, 2, rep.Epoch)
	require.Equal(t, "A's\n", readText(t, cb, "hb", "a.txt"))
	// The session's settings travel with it: the receiver enforces the
	// same policy (a hidden path refused), profile, quota and label.
	sb, err := cb.Session(ctx, "hb")
	require.NoError(t, err)
	require.Equal(t, "openai", sb.Profile)
	require.Equal(t, "the hand-back test", sb.Label)
	require.NotNil(t, sb.Quota)
	require.EqualValues(t, 40, sb.Quota.MaxSnapshots)
	require.Contains(t, string(sb.EffectivePolicy), `"deny_hidden":true`)
	hidden, _ := json.Marshal(map[string]any{"path": ".secret", "content": "x"})
	r, err := cb.CallTool(ctx, "hb", "write_file", hidden)
	require.NoError(t, err)
	require.NotEqual(t, "ok", r.Status, "the policy holds on the receiver: %s", r.JSON)
	tool(t, cb, "hb", "write_file", map[string]any{"path": "b.txt", "content": "B's\n"})
	tool(t, cb, "hb", "write_file", map[string]any{"path": "a.txt", "content": "A's, edited on B\n"})
	_, err = tryRead(ctx, ca, "hb", "a.txt")
	require.Equal(t, api.CodeFenced, apiCode(err), "A is fenced while B owns it: %v", err)

	back, err := cb.MoveSession(ctx, "hb", "daemon-a")
	require.NoError(t, err, "B hands it back")
	require.EqualValues(t, 3, back.Epoch)
	require.Equal(t, "A's, edited on B\n", readText(t, ca, "hb", "a.txt"), "A answers again, from B's head")
	require.Equal(t, "B's\n", readText(t, ca, "hb", "b.txt"))
	tool(t, ca, "hb", "write_file", map[string]any{"path": "c.txt", "content": "A's again\n"})
	_, err = tryRead(ctx, cb, "hb", "a.txt")
	require.Equal(t, api.CodeFenced, apiCode(err), "B is fenced now: %v", err)
	s, err := ca.Session(ctx, "hb")
	require.NoError(t, err)
	require.NotNil(t, s.Owner)
	require.Equal(t, "daemon-a", s.Owner.Daemon)
	require.EqualValues(t, 3, s.Owner.Epoch)

	// A restarted keeps it, with the change made after the hand-back.
	a.restart()
	ca = a.client()
	require.Equal(t, "A's again\n", readText(t, ca, "hb", "c.txt"))
	require.Equal(t, "A's, edited on B\n", readText(t, ca, "hb", "a.txt"))
	tool(t, ca, "hb", "write_file", map[string]any{"path": "d.txt", "content": "after the restart\n"})

	// And once more there and back, through the CLI.
	out, errOut, code := a.cli(ctx, nil, "session", "move", "hb", "--to", "daemon-b")
	require.Zero(t, code, "%s%s", out, errOut)
	require.Equal(t, "after the restart\n", readText(t, cb, "hb", "d.txt"))
	out, errOut, code = b.cli(ctx, nil, "session", "move", "hb", "--to", "daemon-a")
	require.Zero(t, code, "%s%s", out, errOut)
	require.Equal(t, "after the restart\n", readText(t, ca, "hb", "d.txt"))
	s, err = ca.Session(ctx, "hb")
	require.NoError(t, err)
	require.EqualValues(t, 5, s.Owner.Epoch)

	// Moved to B once more, and B dies: A, holding a fenced copy, takes it
	// back once B's lease has ended — the copy replaced by the head.
	tool(t, ca, "hb", "write_file", map[string]any{"path": "e.txt", "content": "before B died\n"})
	_, err = ca.MoveSession(ctx, "hb", "daemon-b")
	require.NoError(t, err)
	require.Equal(t, "before B died\n", readText(t, cb, "hb", "e.txt"))
	b.kill9()
	var taken *api.Session
	require.Eventually(t, func() bool {
		taken, err = ca.TakeSession(ctx, "hb")
		return err == nil
	}, 30*time.Second, 200*time.Millisecond, "A takes it back once B's lease ends: %v", err)
	require.Equal(t, "daemon-a", taken.Owner.Daemon)
	require.EqualValues(t, 7, taken.Owner.Epoch)
	require.Equal(t, "before B died\n", readText(t, ca, "hb", "e.txt"))
}
