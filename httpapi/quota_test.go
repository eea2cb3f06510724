package httpapi_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
)

// TestQuotaThroughTools: the daemon gives every session a quota, enforced
// in the engine, so an agent's tools are refused with too_large and the
// session stays as it was; a session token cannot raise it.
func TestQuotaThroughTools(t *testing.T) {
	cfg := newConfig(t)
	cfg.MaxSessionBytes = 1000
	cfg.MaxSessionFiles = 5
	cfg.Listen = "127.0.0.1:0"
	s := start(t, cfg)
	ctx := context.Background()
	c := s.c
	created, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "q"})
	require.NoError(t, err)
	require.Equal(t, &api.Quota{MaxBytes: 1000, MaxFiles: 5, MaxSnapshots: 1000}, created.Session.Quota)

	call(t, c, "q", "write_file", `{"path":"a.txt","inline_text":"x`+strings.Repeat("a", 599)+`"}`, "ok")
	before, err := c.Session(ctx, "q")
	require.NoError(t, err)
	r := call(t, c, "q", "write_file", `{"path":"b.txt","inline_text":"`+strings.Repeat("b", 600)+`"}`, "too_large")
	require.Contains(t, r["summary_text"], "quota")
	patch := "*** Begin Patch\n*** Add File: p.txt\n+" + strings.Repeat("p", 600) + "\n*** End Patch\n"
	r = call(t, c, "q", "apply_patch", fmt.Sprintf(`{"patch":%q}`, patch), "too_large")
	require.Contains(t, r["summary_text"], "quota")
	r = call(t, c, "q", "edit_file", `{"path":"a.txt","old_string":"x","new_string":"`+strings.Repeat("e", 500)+`"}`, "too_large")
	require.Contains(t, r["summary_text"], "quota")
	for i := range 4 {
		call(t, c, "q", "mkdir", fmt.Sprintf(`{"path":"d%d"}`, i), "ok")
	}
	r = call(t, c, "q", "mkdir", `{"path":"d9"}`, "too_large")
	require.Contains(t, r["summary_text"], "quota")
	after, err := c.Session(ctx, "q")
	require.NoError(t, err)
	require.Equal(t, before.Bytes, after.Bytes, "refused changes changed nothing")
	require.EqualValues(t, 1, after.Files)

	// A quota per session: the admin may raise it, a session token not.
	big, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "big", Quota: &api.Quota{MaxBytes: 5000}})
	require.NoError(t, err)
	require.EqualValues(t, 5000, big.Session.Quota.MaxBytes)
	call(t, c, "big", "write_file", `{"path":"a.txt","inline_text":"`+strings.Repeat("a", 3000)+`"}`, "ok")
	sc := s.tcpClient(big.Token)
	_, err = sc.ForkSession(ctx, "big", api.CreateSessionRequest{Quota: &api.Quota{MaxBytes: -1}})
	requireCode(t, err, api.CodeForbidden)
	require.Contains(t, err.Error(), "quota")
	fork, err := sc.ForkSession(ctx, "big", api.CreateSessionRequest{})
	require.NoError(t, err)
	require.EqualValues(t, 5000, fork.Session.Quota.MaxBytes, "a fork inherits its origin's quota")
	_, err = c.CreateSession(ctx, api.CreateSessionRequest{Quota: &api.Quota{MaxFiles: -7}})
	requireCode(t, err, api.CodeInvalidInput)
}

// TestSnapshotQuotaAndLabel: a session cannot pile up snapshots or store
// huge labels; deleting its own snapshots makes room again.
func TestSnapshotQuotaAndLabel(t *testing.T) {
	cfg := newConfig(t)
	cfg.MaxSnapshots = 2
	cfg.MaxLabelBytes = 16
	cfg.Listen = "127.0.0.1:0"
	s := start(t, cfg)
	ctx := context.Background()
	c := s.c
	created, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "s"})
	require.NoError(t, err)
	sc := s.tcpClient(created.Token)

	_, err = sc.CreateSnapshot(ctx, "s", strings.Repeat("l", 17))
	requireCode(t, err, api.CodeTooLarge)
	first, err := sc.CreateSnapshot(ctx, "s", "one")
	require.NoError(t, err)
	_, err = sc.CreateSnapshot(ctx, "s", "two")
	require.NoError(t, err)
	_, err = sc.CreateSnapshot(ctx, "s", "three")
	requireCode(t, err, api.CodeTooLarge)
	list, err := c.Snapshots(ctx, "s")
	require.NoError(t, err)
	require.Len(t, list, 2)

	// A session deletes its own snapshots, not others' (which its token
	// does not even see), nor through another session's route.
	other, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "other"})
	require.NoError(t, err)
	theirs, err := c.CreateSnapshot(ctx, other.Session.ID, "theirs")
	require.NoError(t, err)
	_, err = sc.DeleteSessionSnapshot(ctx, "s", theirs.ID)
	requireCode(t, err, api.CodeNotFound)
	_, err = c.DeleteSessionSnapshot(ctx, "s", theirs.ID)
	requireCode(t, err, api.CodeForbidden)
	del, err := sc.DeleteSessionSnapshot(ctx, "s", first.ID[:10])
	require.NoError(t, err)
	require.Equal(t, []string{first.ID}, del.Deleted)
	_, err = sc.CreateSnapshot(ctx, "s", "three")
	require.NoError(t, err)
	_, err = sc.DeleteSnapshot(ctx, theirs.ID)
	requireCode(t, err, api.CodeForbidden) // the global route is the admin's
}

// countingReader produces zeros and counts what was read of it.
type countingReader struct{ n atomic.Int64 }

func (r *countingReader) Read(p []byte) (int, error) {
	clear(p)
	r.n.Add(int64(len(p)))
	return len(p), nil
}

// TestBlobUploadTooLarge: an upload announced as larger than the limit is
// refused with too_large before the daemon reads it (it used to read, and
// store, up to the limit first: a gigabyte by default).
func TestBlobUploadTooLarge(t *testing.T) {
	cfg := newConfig(t)
	cfg.MaxBlobBytes = 256 << 20
	s := start(t, cfg)
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", cfg.Socket)
	}}, Timeout: time.Minute}
	body := &countingReader{}
	req, err := http.NewRequest(http.MethodPost, "http://vfsd/v1/blobs", io.LimitReader(body, 10<<30))
	require.NoError(t, err)
	req.ContentLength = 10 << 30
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	b, _ := io.ReadAll(resp.Body)
	require.Contains(t, string(b), `"too_large"`)
	require.Less(t, body.n.Load(), int64(32<<20), "the daemon read %d bytes of the body", body.n.Load())
	_ = s
}

// TestClosedSessionsLeaveNothing is issue 11's finding: every vfsd run left
// an import snapshot nothing could delete, and a data dir with no session
// stayed at 3.3 GB after GC. A stage, run, diff, close cycle and a GC now
// bring the data dir back to its empty size; an import shared with a fork
// goes with the last session that needs it; snapshots taken of a session
// stay until deleted (or purged).
func TestClosedSessionsLeaveNothing(t *testing.T) {
	host := t.TempDir()
	for i := range 8 {
		require.NoError(t, os.WriteFile(filepath.Join(host, fmt.Sprintf("f%d.bin", i)), []byte(strings.Repeat(fmt.Sprint(i), 256<<10)), 0o644))
	}
	cfg := newConfig(t)
	cfg.AllowRoots = []string{host}
	s := start(t, cfg)
	ctx := context.Background()
	c := s.c
	empty := du(t, cfg.DataDir)
	gcNow := func() {
		t.Helper()
		_, err := c.GC(ctx)
		require.NoError(t, err)
	}
	nearEmpty := func(msg string) {
		t.Helper()
		grown := du(t, cfg.DataDir) - empty
		require.Less(t, grown, int64(64<<10), "%s: the data dir is %d bytes over its empty size", msg, grown)
	}

	// What vfsd run does: stage, write through the session, diff, close.
	run, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "run", Mounts: []api.Mount{{HostPath: host, MountPath: "/"}}})
	require.NoError(t, err)
	imp := run.Session.ImportSnapshot
	call(t, c, "run", "write_file", `{"path":"new.txt","inline_text":"`+strings.Repeat("n", 100<<10)+`"}`, "ok")
	_, err = c.SessionDiffText(ctx, "run", client.DiffQuery{From: "import", To: "live"})
	require.NoError(t, err)
	require.Greater(t, du(t, cfg.DataDir)-empty, int64(2<<20))
	require.NoError(t, c.CloseSession(ctx, "run"))
	_, err = c.Snapshot(ctx, imp)
	requireCode(t, err, api.CodeNotFound)
	gcNow()
	nearEmpty("after a vfsd run cycle")

	// An import shared with a fork stays while the fork needs it.
	a, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "a", Mounts: []api.Mount{{HostPath: host, MountPath: "/"}}})
	require.NoError(t, err)
	_, err = c.ForkSession(ctx, "a", api.CreateSessionRequest{ID: "f"})
	require.NoError(t, err)
	_, err = c.DeleteSnapshot(ctx, a.Session.ImportSnapshot)
	requireCode(t, err, api.CodeConflict)
	require.Contains(t, err.Error(), "session a")
	require.NoError(t, c.CloseSession(ctx, "a"))
	_, err = c.Snapshot(ctx, a.Session.ImportSnapshot)
	require.NoError(t, err, "the fork still needs the import (apply, diff from import)")
	call(t, c, "f", "read_file", `{"path":"f1.bin","max_bytes":10}`, "ok")
	kept, err := c.CreateSnapshot(ctx, "f", "kept")
	require.NoError(t, err)
	require.NoError(t, c.CloseSession(ctx, "f"))
	_, err = c.Snapshot(ctx, a.Session.ImportSnapshot)
	requireCode(t, err, api.CodeNotFound)
	// A snapshot taken of a session stays after it closes, until deleted.
	_, err = c.Snapshot(ctx, kept.ID)
	require.NoError(t, err)
	gcNow()
	require.Greater(t, du(t, cfg.DataDir)-empty, int64(1<<20), "the kept snapshot holds its content")
	del, err := c.DeleteSnapshot(ctx, kept.ID[:12])
	require.NoError(t, err)
	require.Equal(t, []string{kept.ID}, del.Deleted)
	gcNow()
	nearEmpty("after deleting the last snapshot")

	// Closing with purge drops the session's own snapshots too.
	_, err = c.CreateSession(ctx, api.CreateSessionRequest{ID: "p", Mounts: []api.Mount{{HostPath: host, MountPath: "/"}}})
	require.NoError(t, err)
	call(t, c, "p", "write_file", `{"path":"x.txt","inline_text":"x"}`, "ok")
	_, err = c.CreateSnapshot(ctx, "p", "mine")
	require.NoError(t, err)
	require.NoError(t, c.CloseSessionPurge(ctx, "p"))
	list, err := c.Snapshots(ctx, "")
	require.NoError(t, err)
	require.Empty(t, list)
	gcNow()
	nearEmpty("after a purge")
}

// TestForkQuotaOnlyShrinks is finding 7 of security round 3: a quota
// field 0 meant "the daemon's default" on a session token's fork too, so
// a session under 1 MiB, 50 files and 2 snapshots forked itself with
// quota {0, 0, 0} into one of 16 GiB, 1,000,000 files and 1,000
// snapshots. 0 (or a field left out) now means "inherit": a fork's
// origin's quota, a new session's the daemon's default; through a session
// token a quota can only shrink, and -1 (no limit) is the admin's.
func TestForkQuotaOnlyShrinks(t *testing.T) {
	s, admin := tcpServer(t)
	ctx := context.Background()
	const mib = 1 << 20
	small := api.Quota{MaxBytes: mib, MaxFiles: 50, MaxSnapshots: 2}
	o, err := admin.CreateSession(ctx, api.CreateSessionRequest{ID: "small", Quota: &small})
	require.NoError(t, err)
	require.Equal(t, small, *o.Session.Quota)
	sc := s.tcpClient(o.Token)

	forks := []struct {
		name  string
		asked *api.Quota
		want  api.Quota // the fork's effective quota; zero: forbidden
	}{
		{"left out", nil, small},
		{"all zero", &api.Quota{}, small},
		{"bytes zero, fewer files", &api.Quota{MaxBytes: 0, MaxFiles: 10}, api.Quota{MaxBytes: mib, MaxFiles: 10, MaxSnapshots: 2}},
		{"smaller", &api.Quota{MaxBytes: mib / 2, MaxFiles: 50, MaxSnapshots: 1}, api.Quota{MaxBytes: mib / 2, MaxFiles: 50, MaxSnapshots: 1}},
		{"more bytes", &api.Quota{MaxBytes: 2 * mib}, api.Quota{}},
		{"more snapshots", &api.Quota{MaxSnapshots: 3}, api.Quota{}},
		{"no byte limit", &api.Quota{MaxBytes: -1}, api.Quota{}},
		{"no snapshot limit", &api.Quota{MaxSnapshots: -1}, api.Quota{}},
	}
	for _, tc := range forks {
		t.Run(tc.name, func(t *testing.T) {
			f, err := sc.ForkSession(ctx, "small", api.CreateSessionRequest{Quota: tc.asked})
			if tc.want == (api.Quota{}) {
				if err == nil {
					t.Fatalf("a session token's fork got quota %+v from %+v (asked %+v)", *f.Session.Quota, small, *tc.asked)
				}
				requireCode(t, err, api.CodeForbidden)
				require.Contains(t, err.Error(), "quota")
				require.Contains(t, err.Error(), "ask the admin")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, *f.Session.Quota, "a session token's fork: its quota only shrinks")
			// ... and so does a fork of that fork.
			ff, err := s.tcpClient(f.Token).ForkSession(ctx, f.Session.ID, api.CreateSessionRequest{Quota: &api.Quota{}})
			require.NoError(t, err)
			require.Equal(t, tc.want, *ff.Session.Quota)
		})
	}

	// The fork's quota holds: its third snapshot is refused.
	f, err := sc.ForkSession(ctx, "small", api.CreateSessionRequest{Quota: &api.Quota{}})
	require.NoError(t, err)
	fc := s.tcpClient(f.Token)
	for range 2 {
		_, err = fc.CreateSnapshot(ctx, f.Session.ID, "")
		require.NoError(t, err)
	}
	_, err = fc.CreateSnapshot(ctx, f.Session.ID, "")
	requireCode(t, err, api.CodeTooLarge)

	// 0 means the same for the admin: inherit on a fork, the daemon's
	// default on a new session; the admin may raise a quota or lift it.
	af, err := admin.ForkSession(ctx, "small", api.CreateSessionRequest{Quota: &api.Quota{MaxFiles: 100}})
	require.NoError(t, err)
	require.Equal(t, api.Quota{MaxBytes: mib, MaxFiles: 100, MaxSnapshots: 2}, *af.Session.Quota)
	af, err = admin.ForkSession(ctx, "small", api.CreateSessionRequest{Quota: &api.Quota{MaxBytes: -1}})
	require.NoError(t, err)
	require.Equal(t, api.Quota{MaxBytes: 0, MaxFiles: 50, MaxSnapshots: 2}, *af.Session.Quota, "-1: no limit (0 in the effective quota)")
	n, err := admin.CreateSession(ctx, api.CreateSessionRequest{Quota: &api.Quota{MaxFiles: 7}})
	require.NoError(t, err)
	require.Equal(t, api.Quota{MaxBytes: 16 << 30, MaxFiles: 7, MaxSnapshots: 1000}, *n.Session.Quota)
}
