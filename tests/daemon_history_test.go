package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
)

// histWrite writes a file in a session through the write_file tool.
func histWrite(t *testing.T, c *client.Client, session, path, content string) {
	t.Helper()
	params, _ := json.Marshal(map[string]string{"path": path, "inline_text": content})
	r, err := c.CallTool(context.Background(), session, "write_file", params)
	require.NoError(t, err)
	require.True(t, r.OK(), "%s", r.JSON)
}

// histRead reads a session file through the daemon's read_file tool;
// missing files read as "".
func histRead(t *testing.T, c *client.Client, session, path string) (string, bool) {
	t.Helper()
	params, _ := json.Marshal(map[string]string{"path": path})
	r, err := c.CallTool(context.Background(), session, "read_file", params)
	require.NoError(t, err)
	if !r.OK() {
		return "", false
	}
	var out struct {
		Content string `json:"inline_text"`
	}
	require.NoError(t, json.Unmarshal(r.JSON, &out), "%s", r.JSON)
	return out.Content, true
}

// TestDaemonLogAndRewind drives log and rewind through the CLI of a real
// daemon: the log lists the calls with their paths and diffs; rewinding to
// a call, a position, a snapshot and a time puts the session back, and a
// rewind is itself undone by rewinding to where it started.
func TestDaemonLogAndRewind(t *testing.T) {
	dataDir, socket := newDaemonDirs(t)
	p := startDaemon(t, dataDir, socket)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := p.client()
	_, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "h"})
	require.NoError(t, err)
	run := func(wantCode int, args ...string) string {
		t.Helper()
		out, errOut, code := p.cli(ctx, nil, args...)
		require.Equal(t, wantCode, code, "vfsd %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), out, errOut)
		return out + errOut
	}

	histWrite(t, c, "h", "a.txt", "one\n") // call 1
	histWrite(t, c, "h", "b.txt", "bee\n") // call 2
	histWrite(t, c, "h", "a.txt", "two\n") // call 3
	_, _ = histRead(t, c, "h", "a.txt")    // call 4, changes nothing
	time.Sleep(20 * time.Millisecond)      // a moment between the calls
	between := time.Now()
	time.Sleep(20 * time.Millisecond)
	histWrite(t, c, "h", "c.txt", "sea\n") // call 5

	out := run(0, "log", "h")
	for _, want := range []string{"call 1 write_file", "call 3 write_file", "call 4 read_file", "a.txt", "b.txt"} {
		require.Contains(t, out, want)
	}
	out = run(0, "log", "h", "-p")
	require.Contains(t, out, "-one\n+two\n", "call 3's diff")
	require.Contains(t, out, "+bee\n", "call 2's diff")

	var l api.Log
	require.NoError(t, json.Unmarshal([]byte(run(0, "log", "h", "--json")), &l))
	require.Len(t, l.Entries, 5)
	require.Equal(t, []string{"b.txt"}, l.Entries[1].Paths)
	require.Empty(t, l.Entries[3].Paths, "a read changes nothing")
	pagedLog, err := c.Log(ctx, "h", client.LogOptions{Offset: 1, Limit: 2})
	require.NoError(t, err)
	require.Len(t, pagedLog.Entries, 2)
	require.Equal(t, uint64(2), pagedLog.Entries[0].Call)
	require.Equal(t, 3, pagedLog.Next)

	// Back to just before call 2: b.txt was never written, a.txt is "one".
	out = run(0, "session", "rewind", "h", "--to", "2")
	require.Contains(t, out, "undo: vfsd session rewind h --to @")
	undo := strings.TrimSpace(out[strings.Index(out, "--to @")+len("--to "):])
	got, _ := histRead(t, c, "h", "a.txt")
	require.Equal(t, "one\n", got)
	_, ok := histRead(t, c, "h", "b.txt")
	require.False(t, ok)

	// Rewinding the rewind.
	run(0, "session", "rewind", "h", "--to", undo)
	got, _ = histRead(t, c, "h", "a.txt")
	require.Equal(t, "two\n", got)
	got, _ = histRead(t, c, "h", "c.txt")
	require.Equal(t, "sea\n", got)

	// The state at a time: after call 4, before call 5.
	run(0, "session", "rewind", "h", "--to", between.UTC().Format(time.RFC3339Nano))
	_, ok = histRead(t, c, "h", "c.txt")
	require.False(t, ok)
	got, _ = histRead(t, c, "h", "b.txt")
	require.Equal(t, "bee\n", got)

	// A snapshot of the session: rewound to exactly, from the history.
	snap, err := c.CreateSnapshot(ctx, "h", "mark")
	require.NoError(t, err)
	histWrite(t, c, "h", "a.txt", "after the snapshot\n")
	out = run(0, "session", "rewind", "h", "--to", snap.ID[:12])
	require.Contains(t, out, "rewound session h")
	got, _ = histRead(t, c, "h", "a.txt")
	require.Equal(t, "two\n", got)

	// The log shows the rewinds and the snapshot, and survives a restart
	// with the same positions.
	require.NoError(t, json.Unmarshal([]byte(run(0, "log", "h", "--json")), &l))
	var rewinds int
	for _, e := range l.Entries {
		if e.Kind == api.LogSession && e.Tool == "rewind" {
			rewinds++
		}
	}
	require.Equal(t, 4, rewinds)
	p.stop()
	p = startDaemon(t, dataDir, socket)
	c = p.client()
	var l2 api.Log
	out2, _, code := p.cli(ctx, nil, "log", "h", "--json")
	require.Equal(t, 0, code)
	require.NoError(t, json.Unmarshal([]byte(out2), &l2))
	require.Equal(t, len(l.Entries), len(l2.Entries))
	require.Equal(t, l.Seq, l2.Seq)
	_, errOut, code := p.cli(ctx, nil, "session", "rewind", "h", "--to", "1")
	require.Equal(t, 0, code, errOut)
	_, ok = histRead(t, c, "h", "a.txt")
	require.False(t, ok, "before call 1, after a restart")

	_, errOut, code = p.cli(ctx, nil, "session", "rewind", "h", "--to", "999")
	require.NotEqual(t, 0, code)
	require.Contains(t, errOut, "no call 999")
}

// TestDaemonLogAndRewindWithFUSEMount: changes programs make through a FUSE
// mount are log entries of their own (one per run), and a rewind shows in
// the mount at once.
func TestDaemonLogAndRewindWithFUSEMount(t *testing.T) {
	if !fuseAvailable() {
		t.Skip("needs /dev/fuse and root (CI has them)")
	}
	dataDir, socket := newDaemonDirs(t)
	p := startDaemon(t, dataDir, socket)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := p.client()
	_, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "m"})
	require.NoError(t, err)
	mnt := t.TempDir()
	_, err = c.Mount(ctx, "m", api.MountRequest{Dir: mnt})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Unmount(context.Background(), "m", mnt) })

	histWrite(t, c, "m", "tool.txt", "by a tool\n") // call 1
	require.NoError(t, os.WriteFile(filepath.Join(mnt, "prog.txt"), []byte("by a program\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(mnt, "out/dir"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(mnt, "out/dir/x"), []byte("x\n"), 0o644))
	histWrite(t, c, "m", "tool2.txt", "again\n") // call 2

	l, err := c.LogAll(ctx, "m", true)
	require.NoError(t, err)
	var kinds []string
	var mountEntry api.LogEntry
	for _, e := range l.Entries {
		kinds = append(kinds, e.Kind)
		if e.Kind == api.LogMount {
			mountEntry = e
		}
	}
	require.Equal(t, []string{api.LogCall, api.LogMount, api.LogCall}, kinds, "the mount's run of changes is one entry between the calls")
	require.Equal(t, "fuse:"+mnt, mountEntry.Source)
	require.Contains(t, mountEntry.Paths, "prog.txt")
	require.Contains(t, mountEntry.Paths, "out/dir/x")
	require.Contains(t, mountEntry.Diff, "+by a program")

	// Back to before the mount's changes: the mount shows it at once.
	_, err = c.Rewind(ctx, "m", api.RewindRequest{Seq: &mountEntry.SeqBefore})
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(mnt, "prog.txt"))
	require.True(t, errors.Is(err, fs.ErrNotExist), "%v", err)
	b, err := os.ReadFile(filepath.Join(mnt, "tool.txt"))
	require.NoError(t, err)
	require.Equal(t, "by a tool\n", string(b))

	// And forward again: the program's content is back, from the history.
	_, err = c.Rewind(ctx, "m", api.RewindRequest{Seq: &mountEntry.Seq})
	require.NoError(t, err)
	b, err = os.ReadFile(filepath.Join(mnt, "prog.txt"))
	require.NoError(t, err)
	require.Equal(t, "by a program\n", string(b))
	_, err = os.Stat(filepath.Join(mnt, "tool2.txt"))
	require.True(t, errors.Is(err, fs.ErrNotExist))
}

// TestDaemonRebase: a session staged from a host folder, the host changed
// meanwhile. Apply refuses what both changed and points to rebase; rebase
// keeps the session's changes, takes the host's, merges what both changed
// (markers where the same lines changed); after fixing the markers, apply
// goes through.
func TestDaemonRebase(t *testing.T) {
	root := t.TempDir()
	proj := filepath.Join(root, "proj")
	require.NoError(t, os.MkdirAll(proj, 0o755))
	hostWrite := func(name, content string) {
		require.NoError(t, os.WriteFile(filepath.Join(proj, name), []byte(content), 0o644))
	}
	hostRead := func(name string) string {
		b, err := os.ReadFile(filepath.Join(proj, name))
		require.NoError(t, err)
		return string(b)
	}
	lines := func(ls ...string) string { return strings.Join(ls, "\n") + "\n" }
	hostWrite("merge.txt", lines("a", "b", "c", "d", "e", "f", "g"))
	hostWrite("conflict.txt", lines("one", "two", "three"))
	hostWrite("session-only.txt", "base\n")
	hostWrite("host-only.txt", "base\n")
	hostWrite("same.txt", "base\n")

	dataDir, socket := newDaemonDirs(t)
	p := startDaemon(t, dataDir, socket, "--allow-root", root)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := p.client()
	_, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: "r", Mounts: []api.Mount{{HostPath: proj, MountPath: "/"}}})
	require.NoError(t, err)

	histWrite(t, c, "r", "merge.txt", lines("A", "b", "c", "d", "e", "f", "g"))
	histWrite(t, c, "r", "conflict.txt", lines("one", "TWO by the session", "three"))
	histWrite(t, c, "r", "session-only.txt", "session\n")
	histWrite(t, c, "r", "same.txt", "agreed\n")
	histWrite(t, c, "r", "new-in-session.txt", "new\n")

	hostWrite("merge.txt", lines("a", "b", "c", "d", "e", "f", "G"))
	hostWrite("conflict.txt", lines("one", "two by the host", "three"))
	hostWrite("host-only.txt", "host\n")
	hostWrite("same.txt", "agreed\n")
	hostWrite("new-on-host.txt", "hello\n")

	// Apply refuses what both changed and says to rebase (not reset).
	out, errOut, code := p.cli(ctx, nil, "apply", "r", "--dry-run")
	require.Equal(t, 1, code, out+errOut)
	require.Contains(t, errOut, "vfsd session rebase r")
	require.NotContains(t, out, "same.txt: ", "the host has the session's content: no conflict")

	// A dry run changes nothing.
	out, errOut, code = p.cli(ctx, nil, "session", "rebase", "r", "--dry-run", "--json")
	require.Equal(t, 0, code, errOut)
	var dry api.RebaseReport
	require.NoError(t, json.Unmarshal([]byte(out), &dry))
	require.True(t, dry.DryRun)
	got, _ := histRead(t, c, "r", "host-only.txt")
	require.Equal(t, "base\n", got)

	out, errOut, code = p.cli(ctx, nil, "session", "rebase", "r")
	require.Equal(t, 1, code, "conflicts exit 1\n%s%s", out, errOut)
	require.Contains(t, out, "conflict             conflict.txt")
	require.Contains(t, out, "merged               merge.txt")
	require.Contains(t, out, "taken from the host  host-only.txt")
	require.Contains(t, errOut, "undo the rebase with vfsd session rewind r --to @")

	got, _ = histRead(t, c, "r", "merge.txt")
	require.Equal(t, lines("A", "b", "c", "d", "e", "f", "G"), got, "both sides' edits")
	got, _ = histRead(t, c, "r", "conflict.txt")
	require.Equal(t, lines("one", "<<<<<<< session", "TWO by the session", "=======", "two by the host", ">>>>>>> host", "three"), got)
	got, _ = histRead(t, c, "r", "host-only.txt")
	require.Equal(t, "host\n", got)
	got, _ = histRead(t, c, "r", "new-on-host.txt")
	require.Equal(t, "hello\n", got)
	got, _ = histRead(t, c, "r", "session-only.txt")
	require.Equal(t, "session\n", got)

	// While the markers are there, apply refuses, naming the file and
	// the way out; a dry run lists it; the host is untouched.
	out, errOut, code = p.cli(ctx, nil, "apply", "r")
	require.Equal(t, 1, code, out+errOut)
	require.Contains(t, errOut, "conflict.txt")
	require.Contains(t, errOut, "--allow-conflicts")
	require.Equal(t, lines("one", "two by the host", "three"), hostRead("conflict.txt"))
	out, errOut, code = p.cli(ctx, nil, "apply", "r", "--dry-run")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "unresolved: conflict.txt still holds")

	// The person resolves the conflict in the session; apply goes through.
	histWrite(t, c, "r", "conflict.txt", lines("one", "two, agreed", "three"))
	out, errOut, code = p.cli(ctx, nil, "apply", "r")
	require.Equal(t, 0, code, out+errOut)
	require.Equal(t, lines("A", "b", "c", "d", "e", "f", "G"), hostRead("merge.txt"))
	require.Equal(t, lines("one", "two, agreed", "three"), hostRead("conflict.txt"))
	require.Equal(t, "session\n", hostRead("session-only.txt"))
	require.Equal(t, "host\n", hostRead("host-only.txt"), "the host's own change stays")
	require.Equal(t, "hello\n", hostRead("new-on-host.txt"))
	require.Equal(t, "new\n", hostRead("new-in-session.txt"))

	// A clean rebase: exit 0, nothing to fix.
	hostWrite("host-only.txt", "host, later\n")
	histWrite(t, c, "r", "session-only.txt", "session, later\n")
	out, errOut, code = p.cli(ctx, nil, "session", "rebase", "r", "--json")
	require.Equal(t, 0, code, errOut)
	var rep api.RebaseReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Empty(t, rep.Conflicts)
	require.Equal(t, []string{"host-only.txt"}, rep.Taken)
	require.Equal(t, 1, rep.KeptCount)

	// Rewinding to before the rebase brings its import back: the state
	// then was based on it, so apply does not undo the host's change (with
	// the rebase's import it would write the old content back).
	rw, err := c.Rewind(ctx, "r", api.RewindRequest{Seq: &rep.SeqBefore})
	require.NoError(t, err)
	require.Equal(t, rep.PreviousImport, rw.ImportSnapshot)
	ar, err := c.Apply(ctx, "r", false)
	require.NoError(t, err)
	require.Empty(t, ar.Conflicts, fmt.Sprint(ar))
	for _, ch := range ar.Applied {
		require.NotEqual(t, "/host-only.txt", ch.Path, fmt.Sprint(ar))
	}
	require.Equal(t, "host, later\n", hostRead("host-only.txt"))
	require.Equal(t, "session, later\n", hostRead("session-only.txt"))
}
