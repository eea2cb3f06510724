//go:build linux

package tests

// A mount is hostile: whoever has it (an agent's program) may rename,
// exchange and replace anything in it, with symlinks to anywhere on the
// host, at any moment, while tools change the session. The daemon runs as
// root; nothing it does for the session may reach a host file outside it
// (the mirror of a tool's change into the overlay's merged directory), and
// nothing outside the session may enter it (the overlay's ingest of the
// upper directory). The session's quota holds whichever way changes come
// in, and an over-quota change or a name the session cannot hold leaves
// the session usable.
//
// The attacks through the daemon are races, run for a bounded time; those
// whose window can be hit on purpose from inside the mount (an inotify
// event of the daemon's own write) are hit on purpose. The same attacks on
// the overlay package alone, with the windows closed by hand, are in
// mount/overlay/attack_test.go.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
	"github.com/vfsd/vfsd/mount/mounttest"
	"github.com/vfsd/vfsd/mount/overlay"
)

// requireRootOverlay skips unless the daemon can mount the overlay
// backend here.
func requireRootOverlay(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the overlay backend needs root (CI runs as root)")
	}
	if err := overlay.Available(); err != nil {
		t.Skipf("overlay backend unavailable: %v", err)
	}
}

// hostileSession starts a daemon, creates session id (with quota q, if
// set) holding seed (path: content, written with write_file), and mounts
// it at a new directory with backend. The daemon listens on loopback too,
// so it has an admin token file. It returns the daemon, a client and
// the mount directory; cleanup unmounts.
func hostileSession(t *testing.T, ctx context.Context, id, backend string, q *api.Quota, seed map[string]string) (*daemonProc, *client.Client, string) {
	t.Helper()
	dataDir, socket := newDaemonDirs(t)
	// Listening on loopback makes the daemon write its admin token file,
	// one of the secrets the attacks aim at.
	p := startDaemon(t, dataDir, socket, "--listen", "127.0.0.1:0")
	c := p.client()
	_, err := c.CreateSession(ctx, api.CreateSessionRequest{ID: id, TTL: "1h", Quota: q})
	require.NoError(t, err)
	for path, content := range seed {
		mustCall(t, ctx, c, id, "write_file", map[string]any{"path": path, "content": content})
	}
	mnt := t.TempDir()
	t.Cleanup(func() {
		uctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = c.Unmount(uctx, id, mnt)
		_ = syscall.Unmount(mnt, syscall.MNT_DETACH)
	})
	fm, err := c.Mount(ctx, id, api.MountRequest{Dir: mnt, Backend: backend})
	require.NoError(t, err)
	if backend == api.BackendOverlay { // a FUSE mount may leave its (default) backend unsaid
		require.Equal(t, backend, fm.Backend)
	}
	return p, c, mnt
}

// seedD is a session directory d with files a, b and c, named like the
// victim's.
var seedD = map[string]string{"d/a": "session d/a\n", "d/b": "session d/b\n", "d/c": "session d/c\n", "top.txt": "top\n"}

// bigPatchFile is an "*** Add File" section of about size bytes.
func bigPatchFile(path string, size int) string {
	var b strings.Builder
	b.WriteString("*** Add File: " + path + "\n")
	line := "+" + strings.Repeat("0123456789abcdef", 4) + "\n"
	for b.Len() < size {
		b.WriteString(line)
	}
	return b.String()
}

// TestHostileOverlayMirrorSwapDuringPatch (finding 1, on purpose): a
// program in the mount watches the merged directory with inotify; when the
// daemon starts mirroring an apply_patch whose first file is large (the
// call's ingest is over by then), it replaces directory d by a symlink to a
// host directory. The rest of the patch — an update, an addition, a
// deletion and a move under d — must not reach the host directory.
func TestHostileOverlayMirrorSwapDuringPatch(t *testing.T) {
	requireRootOverlay(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, c, mnt := hostileSession(t, ctx, "mp", api.BackendOverlay, nil, seedD)
	victim, _ := victimTree(t)
	before := mounttest.HostState(t, victim)

	d := filepath.Join(mnt, "d")
	var swapErr error
	var trigger string
	fired, stop := mounttest.WatchDir(t, mnt, unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_OPEN|unix.IN_MODIFY,
		func(name string) bool { return name == "d" || name == "d.away" },
		func(name string) {
			trigger = name
			if swapErr = os.Rename(d, d+".away"); swapErr == nil {
				swapErr = os.Symlink(victim, d)
			}
		})
	defer stop()
	patch := "*** Begin Patch\n" + bigPatchFile("big.txt", 4<<20) +
		"*** Update File: d/a\n@@\n-session d/a\n+patched d/a\n" +
		"*** Add File: d/new.txt\n+added under d\n" +
		"*** Delete File: d/b\n" +
		"*** Update File: d/c\n*** Move to: d/c2\n@@\n-session d/c\n+moved d/c\n" +
		"*** End Patch\n"
	a := call(ctx, c, "mp", "apply_patch", map[string]any{"patch": patch})
	select {
	case <-fired:
	case <-time.After(10 * time.Second):
		t.Fatalf("the daemon never touched the merged directory's root while mirroring the patch (%s): this test's trigger no longer fits the mirror", a)
	}
	require.NoError(t, swapErr)
	t.Logf("swapped d for a symlink on the merged directory's event for %q; apply_patch: %.200s", trigger, a.body)
	require.Equal(t, before, mounttest.HostState(t, victim),
		"mirroring apply_patch followed the symlink the mount's user swapped in for d and changed the host directory %s", victim)
}

// TestHostileOverlayMirrorSwapRace (finding 1, as a race): a program in
// the mount swaps directory d for a symlink to a host directory and back
// in a loop while tools change files under d — write_file, edit_file,
// apply_patch with a large first file, delete_file, rename. Tool calls may
// fail (the directory is a symlink at times); the host directory must not
// change.
func TestHostileOverlayMirrorSwapRace(t *testing.T) {
	requireRootOverlay(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, c, mnt := hostileSession(t, ctx, "mr", api.BackendOverlay, nil, seedD)
	victim, _ := victimTree(t)
	before := mounttest.HostState(t, victim)

	const runFor = 8 * time.Second
	h := startHostile(t, ctx, hostileConfig{Mode: "swapdir", Mount: mnt, Dirs: []string{"d"}, Targets: []string{victim},
		Until: time.Now().Add(runFor + 30*time.Second).UnixNano()})
	deadline := time.Now().Add(runFor)
	calls, oks := 0, map[string]int{}
	note := func(a toolAnswer) {
		calls++
		if a.ok() {
			oks[a.tool]++
		}
	}
	for round := 0; time.Now().Before(deadline) && mounttest.HostState(t, victim) == before; round++ {
		note(call(ctx, c, "mr", "write_file", map[string]any{"path": "d/x", "content": fmt.Sprintf("x %d\n", round)}))
		note(call(ctx, c, "mr", "write_file", map[string]any{"path": "d/a", "content": "line one\nline two\n"}))
		note(call(ctx, c, "mr", "edit_file", map[string]any{"path": "d/a", "old_string": "line", "new_string": "LINE", "replace_all": true}))
		note(call(ctx, c, "mr", "write_file", map[string]any{"path": "d/b", "content": "b again\n"}))
		note(call(ctx, c, "mr", "apply_patch", map[string]any{"patch": "*** Begin Patch\n" + bigPatchFile(fmt.Sprintf("big-%d.txt", round%4), 512<<10) +
			fmt.Sprintf("*** Add File: d/p%d.txt\n+patched in\n", round) + "*** Delete File: d/b\n*** End Patch\n"}))
		note(call(ctx, c, "mr", "write_file", map[string]any{"path": "d/b", "content": "b again\n"}))
		note(call(ctx, c, "mr", "delete_file", map[string]any{"path": "d/b"}))
		note(call(ctx, c, "mr", "rename", map[string]any{"from": "d/c", "to": "d/c2", "overwrite": true}))
		note(call(ctx, c, "mr", "rename", map[string]any{"from": "d/c2", "to": "d/c", "overwrite": true}))
		note(call(ctx, c, "mr", "delete_file", map[string]any{"path": fmt.Sprintf("d/p%d.txt", round)}))
	}
	rep := h.stop(t)
	t.Logf("%d tool calls (succeeded: %v); the mount's program: %v", calls, oks, rep)
	require.Equal(t, before, mounttest.HostState(t, victim),
		"a tool's change mirrored into the merged directory followed the symlink the mount's user swapped in for d and changed the host directory %s", victim)
}

// TestHostileOverlayIngestExchangeRace (finding 2): a program in the mount
// exchanges (RENAME_EXCHANGE, in a loop) a regular file f with a symlink to
// a host secret file, a file g with a symlink to the daemon's admin token
// file, and a directory dd with a symlink to a host directory holding a
// secret, while tool calls read them (each call ingests the upper
// directory first). Neither the secret nor the token may appear in any
// tool's answer or in the session.
func TestHostileOverlayIngestExchangeRace(t *testing.T) {
	requireRootOverlay(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p, c, mnt := hostileSession(t, ctx, "ie", api.BackendOverlay, nil, map[string]string{"top.txt": "top\n"})
	victim, secret := victimTree(t)
	before := mounttest.HostState(t, victim)
	tokenPath := filepath.Join(p.dataDir, "token")
	token, err := os.ReadFile(tokenPath)
	require.NoError(t, err)
	secrets := map[string]string{"the host's secret file": secret, "the daemon's admin token": p.adminToken()}

	// The files are as long as what they are exchanged with: ingest reads
	// as many bytes as it lstat()ed.
	in := func(name string) string { return filepath.Join(mnt, name) }
	require.NoError(t, os.WriteFile(in("f"), []byte(strings.Repeat("f", len(secret)+1)), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(victim, "secret.txt"), in("l")))
	require.NoError(t, os.WriteFile(in("g"), []byte(strings.Repeat("g", len(token))), 0o644))
	require.NoError(t, os.Symlink(tokenPath, in("l2")))
	require.NoError(t, os.Mkdir(in("dd"), 0o755))
	require.NoError(t, os.WriteFile(in("dd/own"), []byte("own\n"), 0o644))
	require.NoError(t, os.Symlink(victim, in("ld")))
	mustCall(t, ctx, c, "ie", "list_directory", map[string]any{"path": ""}) // ingested once, quietly

	const maxCalls, runFor = 2000, 8 * time.Second
	h := startHostile(t, ctx, hostileConfig{Mode: "exchange", Mount: mnt,
		Pairs: [][2]string{{"f", "l"}, {"g", "l2"}, {"dd", "ld"}}, Until: time.Now().Add(runFor + 30*time.Second).UnixNano()})
	var answers []toolAnswer
	leaked := func() bool {
		for _, a := range answers {
			for _, s := range secrets {
				if strings.Contains(a.body, s) {
					return true
				}
			}
		}
		return false
	}
	deadline := time.Now().Add(runFor)
	for len(answers) < maxCalls && time.Now().Before(deadline) && !leaked() {
		answers = append(answers,
			call(ctx, c, "ie", "read_file", map[string]any{"path": "f"}),
			call(ctx, c, "ie", "read_file", map[string]any{"path": "g"}),
			call(ctx, c, "ie", "list_directory", map[string]any{"path": "dd"}),
			call(ctx, c, "ie", "read_file", map[string]any{"path": "dd/secret.txt"}))
	}
	rep := h.stop(t)
	failed := 0
	for _, a := range answers {
		if !a.ok() {
			failed++
		}
	}
	t.Logf("%d tool calls (%d failed, allowed); the mount's program: %v", len(answers), failed, rep)
	requireNoSecretInAnswers(t, answers, secrets)
	requireNoSecretInSession(t, ctx, c, "ie", secrets)
	require.Equal(t, before, mounttest.HostState(t, victim))
}

// quotaCode reports whether a failure's code is the session quota's:
// too_large (the engine's and the tools' code for a quota) or a code of
// its own.
func quotaCode(code string) bool { return code == "too_large" || code == "quota_exceeded" }

// TestHostileOverlayQuota (finding 6): a program writes far past the
// session's quota (1 MiB, 100 files) through the overlay mount. The
// session must never hold more than its quota; whoever triggers the ingest
// is told, with the quota's error code; and the session stays usable: the
// tool calls after that work.
func TestHostileOverlayQuota(t *testing.T) {
	requireRootOverlay(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const maxBytes, maxFiles = 1 << 20, 100
	_, c, mnt := hostileSession(t, ctx, "q", api.BackendOverlay, &api.Quota{MaxBytes: maxBytes, MaxFiles: maxFiles},
		map[string]string{"keep.txt": "kept\n"})

	// The mount may refuse the writes itself (EDQUOT, ENOSPC): the quota
	// then holds at the mount, and no ingest has anything to refuse.
	var refused []error
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(mnt, name), b, 0o644); err != nil {
			require.True(t, errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EFBIG), "%v", err)
			refused = append(refused, err)
		}
	}
	write("huge.bin", make([]byte, 8<<20))
	require.NoError(t, os.Mkdir(filepath.Join(mnt, "many"), 0o755))
	for i := range 300 {
		write(fmt.Sprintf("many/f%03d", i), []byte("x\n"))
	}

	within := func(when string) {
		t.Helper()
		v, err := c.Session(ctx, "q")
		require.NoError(t, err)
		require.LessOrEqual(t, v.Bytes, int64(maxBytes), "%s: the session holds %d bytes, over its quota of %d", when, v.Bytes, maxBytes)
		require.LessOrEqual(t, v.Files, int64(maxFiles), "%s: the session holds %d files, over its quota of %d", when, v.Files, maxFiles)
	}
	// The first call ingests: the change does not fit, and the caller is
	// told so with the quota's code.
	first := call(ctx, c, "q", "list_directory", map[string]any{"path": ""})
	t.Logf("the call that ingested: %.400s", first)
	within("after the ingest")
	if len(refused) == 0 {
		assert.False(t, first.ok(), "the call that ingested an over-quota change reported nothing: %s", first)
		assert.True(t, quotaCode(first.code), "the call that ingested an over-quota change failed with %q, not the quota's code: %s", first.code, first)
	} else {
		t.Logf("the mount refused %d writes itself, first: %v", len(refused), refused[0])
	}

	// The session stays usable: the over-quota change was refused (or
	// rolled back) once and for all.
	for i := range 3 {
		mustCall(t, ctx, c, "q", "write_file", map[string]any{"path": fmt.Sprintf("after-%d.txt", i), "content": "still usable\n"})
		a := mustCall(t, ctx, c, "q", "read_file", map[string]any{"path": "keep.txt"})
		require.Contains(t, a.body, "kept")
	}
	snapCtx, snapCancel := context.WithTimeout(ctx, 30*time.Second)
	defer snapCancel()
	_, err := c.CreateSnapshot(snapCtx, "q", "after the quota")
	require.NoError(t, err, "a snapshot of the session after the refused change")
	within("at the end")
}

// TestHostileOverlayNonUTF8Name: a program creates a file and a directory
// whose names are not UTF-8 in the mount, beside an ordinary file. The
// session never holds the names (nor a mangled form of them); the ordinary
// file is ingested, and tool calls keep working (the first may report the
// refused names, as invalid_path or invalid_input).
func TestHostileOverlayNonUTF8Name(t *testing.T) {
	requireRootOverlay(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, c, mnt := hostileSession(t, ctx, "u", api.BackendOverlay, nil, map[string]string{"keep.txt": "kept\n"})
	require.NoError(t, os.WriteFile(filepath.Join(mnt, "\xff\xfe.txt"), []byte("bad name\n"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(mnt, "dir\xc3"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(mnt, "ok.txt"), []byte("fine\n"), 0o644))

	var answers []toolAnswer
	for range 3 {
		answers = append(answers, call(ctx, c, "u", "read_file", map[string]any{"path": "ok.txt"}))
	}
	for i, a := range answers {
		if i == 0 && !a.ok() && (a.code == "invalid_path" || a.code == "invalid_input") {
			// The ingest that met the names may say so, once.
			t.Logf("the call that ingested the names: %s", a)
			continue
		}
		require.True(t, a.ok(), "call %d after a non-UTF-8 name appeared in the mount: %s", i+1, a)
		require.Contains(t, a.body, "fine")
	}
	var names []string
	for _, e := range sessionEntries(t, ctx, c, "u") {
		names = append(names, e.Path)
	}
	for _, name := range names {
		assert.True(t, utf8.ValidString(name), "the session holds a name that is not UTF-8: %q (all: %q)", name, names)
		assert.NotContains(t, name, "\ufffd", "the session holds a mangled name: %q (all: %q)", name, names)
	}
	require.ElementsMatch(t, []string{"keep.txt", "ok.txt"}, names, "the session's names: %q", names)
	// And still: the next calls work, the bad names still in the mount.
	mustCall(t, ctx, c, "u", "write_file", map[string]any{"path": "after.txt", "content": "after\n"})
	mustCall(t, ctx, c, "u", "read_file", map[string]any{"path": "ok.txt"})
}

// TestHostileMount is the hostile-mount stress test, on both backends: a
// separate process with the mount renames, exchanges (RENAME_EXCHANGE) and
// swaps in symlinks to host directories and files (a victim tree holding
// a secret, the daemon's admin token) under every directory, while tools
// write, edit, patch, delete, rename and read the session. Tool calls may
// fail; no host file outside the session may change, and the secret and
// the token may appear in no tool's answer nor anywhere in the session.
// It runs VFSD_HOSTILE_SECONDS (15 by default) per backend.
func TestHostileMount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the mounts need root (CI runs as root)")
	}
	dur := hostileSeconds(t)
	t.Run("overlay", func(t *testing.T) {
		if err := overlay.Available(); err != nil {
			t.Skipf("overlay backend unavailable: %v", err)
		}
		hostileMount(t, api.BackendOverlay, dur)
	})
	t.Run("fuse", func(t *testing.T) {
		if !fuseAvailable() {
			t.Skip("the FUSE backend needs /dev/fuse and root")
		}
		hostileMount(t, api.BackendFUSE, dur)
	})
}

func hostileMount(t *testing.T, backend string, dur time.Duration) {
	// A watchdog: whatever hangs, the test ends with every goroutine's
	// stack instead of waiting for go test's timeout.
	watchdog := time.AfterFunc(dur+4*time.Minute, func() {
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		panic(fmt.Sprintf("TestHostileMount/%s is stuck %v after it started; goroutines:\n%s", backend, dur+4*time.Minute, buf[:n]))
	})
	defer watchdog.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), dur+3*time.Minute)
	defer cancel()

	seed := map[string]string{"a": "seed a\n", "b": "seed b\n"}
	var paths []string
	for i := range 4 {
		for j := range 4 {
			paths = append(paths, fmt.Sprintf("d%d/f%d", i, j))
		}
		paths = append(paths, fmt.Sprintf("d%d/sub/g0", i), fmt.Sprintf("d%d/sub/deeper/h0", i))
	}
	for _, p := range paths {
		seed[p] = "seed " + p + "\n"
	}
	p, c, mnt := hostileSession(t, ctx, "h", backend, nil, seed)
	victim, secret := victimTree(t)
	tokenPath := filepath.Join(p.dataDir, "token")
	hostBefore := mounttest.HostState(t, victim)
	tokenBefore := mounttest.HostState(t, tokenPath)
	secrets := map[string]string{"the host's secret file": secret, "the daemon's admin token": p.adminToken()}

	h := startHostile(t, ctx, hostileConfig{Mode: "chaos", Mount: mnt,
		Targets: []string{victim, filepath.Join(victim, "sub"), filepath.Join(victim, "secret.txt"), filepath.Join(victim, "a"), tokenPath},
		Until:   time.Now().Add(dur + 30*time.Second).UnixNano()})

	deadline := time.Now().Add(dur)
	var (
		mu       sync.Mutex
		leaks    []toolAnswer
		calls    int
		statuses = map[string]int{}
		firstOf  = map[string]string{} // the first failure of each status
	)
	dirs := []string{"", "d0", "d1", "d2", "d3", "d0/sub", "d1/sub", "d2/sub/deeper", "d3/sub/deeper"}
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(w)))
			pick := func(s []string) string { return s[rng.IntN(len(s))] }
			for n := 0; time.Now().Before(deadline) && ctx.Err() == nil; n++ {
				path := pick(paths)
				var a toolAnswer
				switch rng.IntN(11) {
				case 0, 1:
					a = call(ctx, c, "h", "write_file", map[string]any{"path": path, "content": fmt.Sprintf("written %d by worker %d\n", n, w)})
				case 2:
					a = call(ctx, c, "h", "edit_file", map[string]any{"path": path, "old_string": "\n", "new_string": " edited\n", "replace_all": true})
				case 3:
					patch := "*** Begin Patch\n" + bigPatchFile(fmt.Sprintf("%s/big-%d", pick(dirs[1:]), rng.IntN(3)), 128<<10) +
						fmt.Sprintf("*** Add File: %s/p-%d-%d\n+patched\n", pick(dirs[1:]), w, rng.IntN(4))
					if rng.IntN(2) == 0 {
						patch += "*** Delete File: " + pick(paths) + "\n"
					} else {
						patch += "*** Update File: " + path + "\n*** Move to: " + pick(paths) + "\n@@\n-seed " + path + "\n+moved\n"
					}
					a = call(ctx, c, "h", "apply_patch", map[string]any{"patch": patch + "*** End Patch\n"})
				case 4:
					a = call(ctx, c, "h", "delete_file", map[string]any{"path": path})
				case 5:
					a = call(ctx, c, "h", "rename", map[string]any{"from": path, "to": pick(paths), "overwrite": true})
				case 6:
					// A directory moved to one of a few places at the top
					// (never deeper: the tree stays bounded).
					a = call(ctx, c, "h", "rename", map[string]any{"from": pick(dirs[1:]), "to": fmt.Sprintf("moved-%d", rng.IntN(3))})
				case 7:
					a = call(ctx, c, "h", "list_directory", map[string]any{"path": pick(dirs), "depth": 3})
				case 8:
					// Clears a symlink the mount's program left where a
					// directory was (or an empty directory), so that the
					// tools work on directories again.
					a = call(ctx, c, "h", "delete_file", map[string]any{"path": pick(dirs[1:])})
				default:
					a = call(ctx, c, "h", "read_file", map[string]any{"path": path})
				}
				mu.Lock()
				calls++
				st := a.status
				if a.err != nil {
					st = "transport error"
				}
				statuses[a.tool+":"+st]++
				if _, seen := firstOf[st]; !seen && !a.ok() {
					firstOf[st] = a.String()
				}
				for _, s := range secrets {
					if strings.Contains(a.body, s) {
						leaks = append(leaks, a)
						break
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	rep := h.stop(t)
	t.Logf("%s: %d tool calls in %v: %v", backend, calls, dur, statuses)
	t.Logf("%s: the mount's program: %v", backend, rep)
	for st, a := range firstOf {
		t.Logf("%s: first %s: %.400s", backend, st, a)
	}
	select {
	case <-p.exited:
		t.Fatalf("the daemon died under the hostile mount: %v\n%s", p.waitErr, p.logText())
	default:
	}
	require.Greater(t, calls, 0)

	// The host outside the session is as it was.
	// (assert, not require: what came into the session is checked too.)
	assert.Equal(t, hostBefore, mounttest.HostState(t, victim), "%s: a host directory outside the session changed", backend)
	assert.Equal(t, tokenBefore, mounttest.HostState(t, tokenPath), "%s: the daemon's token file changed", backend)
	// Nothing foreign came in: not in an answer, not in the session.
	requireNoSecretInAnswers(t, leaks, secrets)
	requireNoSecretInSession(t, ctx, c, "h", secrets)
	hostAfter := mounttest.HostState(t, victim)
	if backend == api.BackendOverlay {
		// Unmount takes in the last changes: they are clean too.
		uctx, ucancel := context.WithTimeout(ctx, time.Minute)
		defer ucancel()
		if err := c.Unmount(uctx, "h", mnt); err != nil {
			t.Logf("unmount: %v", err)
		}
		requireNoSecretInSession(t, ctx, c, "h", secrets)
		require.Equal(t, hostAfter, mounttest.HostState(t, victim), "%s: a host directory outside the session changed at unmount", backend)
	}
	require.NotContains(t, p.logText(), "panic:", "the daemon's log")
}
