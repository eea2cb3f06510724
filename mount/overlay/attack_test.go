//go:build linux

package overlay_test

// Attacks on the overlay backend by a program with the mount. The daemon
// runs as root and works on two host paths a mount user can change under
// it: the merged directory (the mirror applies a tool's change there) and
// the upper directory (ingest reads it). Neither may ever reach a host file
// outside them through a symlink the mount user swapped in, and nothing
// outside them may ever enter the session.
//
// These tests drive the Mount directly, so the races are closed by hand
// (no tool call's ingest runs between the swap and the mirror; the swap is
// timed on an inotify event of the ingest's own). tests/hostile_mount_test.go
// runs the same attacks through the daemon, as races.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/internal/mountinfo"
	"github.com/vfsd/vfsd/mount/mounttest"
	"github.com/vfsd/vfsd/vfs"
)

// newVictim makes a host directory outside the mount and the repository
// that the attacks aim at: files named like the session's (a, b, c),
// a subdirectory, odd modes, and old times (a change to any is seen).
func newVictim(t testing.TB) string {
	t.Helper()
	v := filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.MkdirAll(filepath.Join(v, "sub"), 0o700))
	for _, name := range []string{"a", "b", "c", "sub/inner"} {
		require.NoError(t, os.WriteFile(filepath.Join(v, name), []byte("canary "+name+"\n"), 0o640))
	}
	old := time.Unix(1_500_000_000, 0)
	for _, name := range []string{"a", "b", "c", "sub/inner", "sub", "."} {
		require.NoError(t, os.Chtimes(filepath.Join(v, name), old, old))
	}
	require.NoError(t, os.Chmod(v, 0o711))
	return v
}

// newSecret writes a host file (mode 0600) with random content no session
// holds, and returns its path and content.
func newSecret(t testing.TB) (string, string) {
	t.Helper()
	b := make([]byte, 16)
	_, err := rand.Read(b)
	require.NoError(t, err)
	secret := "vfsd-host-secret-" + hex.EncodeToString(b) + "\n"
	p := filepath.Join(t.TempDir(), "secret.txt")
	require.NoError(t, os.WriteFile(p, []byte(secret), 0o600))
	return p, secret
}

// requireSessionClean fails if the session holds the secret in any file,
// symlink target or name, or an entry named like one of names.
func requireSessionClean(t testing.TB, e *env, secret string, names ...string) {
	t.Helper()
	ctx := context.Background()
	secret = strings.TrimSpace(secret)
	var found []string
	require.NoError(t, e.s.Tree().Walk(vfs.Root, func(p vfs.Path, n vfs.Node) error {
		for _, name := range names {
			if name == filepath.Base(string(p)) {
				found = append(found, fmt.Sprintf("%s (named like an entry of the host directory)", p))
			}
		}
		if strings.Contains(string(p)+n.Target, secret) {
			found = append(found, fmt.Sprintf("%s (named after the secret)", p))
		}
		if n.IsFile() {
			b, _, err := e.s.ReadFile(ctx, p)
			require.NoError(t, err)
			if strings.Contains(string(b), secret) {
				found = append(found, fmt.Sprintf("%s (holds the host's secret file)", p))
			}
		}
		return nil
	}))
	require.Empty(t, found, "host content entered the session")
}

// upperDir is the upper directory of the overlay mounted at dir, from
// /proc/self/mountinfo.
func upperDir(t testing.TB, dir string) string {
	t.Helper()
	ms, err := mountinfo.Read()
	require.NoError(t, err)
	for _, m := range ms {
		if m.FSType != "overlay" || m.MountPoint != dir {
			continue
		}
		if v := m.SuperOption("upperdir"); len(v) > 0 {
			return v[0]
		}
	}
	t.Fatalf("no overlay with an upper directory is mounted at %s", dir)
	return ""
}

// onInotify watches dir for mask and calls fn (once) when an event for
// name arrives; it returns a channel closed after fn ran and a stop
// function.
func onInotify(t testing.TB, dir string, mask uint32, name string, fn func()) (<-chan struct{}, func()) {
	t.Helper()
	return mounttest.WatchDir(t, dir, mask, func(got string) bool { return got != name }, func(string) { fn() })
}

// exchange swaps two names with renameat2(RENAME_EXCHANGE).
func exchange(a, b string) error {
	return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
}

// TestAttackMirrorFollowsSwappedDirSymlink: a program with the mount
// replaces the merged directory d with a symlink to a host directory, and
// no ingest runs before a tool's change under d is mirrored (the window
// between a tool call's ingest and its mirror, closed here by hand). The
// mirror must not write, chmod, chown, delete, rename or create anything in
// the host directory.
func TestAttackMirrorFollowsSwappedDirSymlink(t *testing.T) {
	requireOverlay(t)
	ctx := context.Background()
	type op func(t *testing.T, s *vfs.Session)
	write := func(p, content string) op {
		return func(t *testing.T, s *vfs.Session) {
			_, err := s.WriteFile(ctx, vfs.MustPath(p), strings.NewReader(content), vfs.WriteOptions{CreateParents: true})
			require.NoError(t, err)
		}
	}
	cases := []struct {
		name string
		op   op
	}{
		{"write a new file", write("d/x", "written by a tool\n")},
		{"overwrite a file", write("d/a", "overwritten by a tool\n")},
		{"chmod", func(t *testing.T, s *vfs.Session) {
			_, err := s.Chmod(ctx, "d/a", 0o777)
			require.NoError(t, err)
		}},
		{"delete a file", func(t *testing.T, s *vfs.Session) {
			require.NoError(t, s.Remove(ctx, "d/b", vfs.RemoveOptions{}))
		}},
		{"delete a directory recursively", func(t *testing.T, s *vfs.Session) {
			require.NoError(t, s.Remove(ctx, "d/sub", vfs.RemoveOptions{Recursive: true}))
		}},
		{"rename within", func(t *testing.T, s *vfs.Session) {
			require.NoError(t, s.Rename(ctx, "d/c", "d/c2", vfs.RenameOptions{}))
		}},
		{"rename out", func(t *testing.T, s *vfs.Session) {
			require.NoError(t, s.Rename(ctx, "d/c", "c-out", vfs.RenameOptions{}))
		}},
		{"rename in", func(t *testing.T, s *vfs.Session) {
			require.NoError(t, s.Rename(ctx, "top", "d/top", vfs.RenameOptions{}))
		}},
		{"mkdir", func(t *testing.T, s *vfs.Session) {
			_, err := s.Mkdir(ctx, "d/newdir", vfs.MkdirOptions{})
			require.NoError(t, err)
		}},
		{"symlink", func(t *testing.T, s *vfs.Session) {
			_, err := s.Symlink(ctx, "a", "d/ln")
			require.NoError(t, err)
		}},
		{"patch batch", func(t *testing.T, s *vfs.Session) {
			// apply_patch's shape: one batch, a large file first.
			b := s.NewBatch()
			defer b.Discard()
			require.NoError(t, b.Write(ctx, "big.txt", strings.NewReader(strings.Repeat("x", 1<<20)), vfs.WriteOptions{CreateParents: true}))
			require.NoError(t, b.Write(ctx, "d/a", strings.NewReader("patched\n"), vfs.WriteOptions{CreateParents: true}))
			require.NoError(t, b.Write(ctx, "d/new", strings.NewReader("added\n"), vfs.WriteOptions{CreateParents: true}))
			require.NoError(t, b.Remove("d/b", vfs.RemoveOptions{Kind: vfs.KindFile}))
			_, err := b.Commit(ctx)
			require.NoError(t, err)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			for _, p := range []string{"d/a", "d/b", "d/c", "d/sub/inner", "top"} {
				e.write(t, p, "session "+p+"\n")
			}
			m := e.mount(t)
			victim := newVictim(t)
			before := mounttest.HostState(t, victim)
			d := filepath.Join(m.Dir(), "d")
			require.NoError(t, os.Rename(d, d+".away"))
			require.NoError(t, os.Symlink(victim, d))

			tc.op(t, e.s) // a tool's change: mirrored at once, no ingest first

			require.Equal(t, before, mounttest.HostState(t, victim),
				"the mirror followed the symlink the mount user put at d and changed the host directory %s", victim)
		})
	}
}

// TestAttackMirrorFollowsSwappedFileSymlink: the same with the file itself
// replaced by a symlink to a host file (a rename onto the path, atomically):
// the mirror's write, chmod, chown and times must not reach the host file.
func TestAttackMirrorFollowsSwappedFileSymlink(t *testing.T) {
	requireOverlay(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		op   func(t *testing.T, s *vfs.Session)
	}{
		{"overwrite", func(t *testing.T, s *vfs.Session) {
			_, err := s.WriteFile(ctx, "f", strings.NewReader("overwritten\n"), vfs.WriteOptions{})
			require.NoError(t, err)
		}},
		{"chmod", func(t *testing.T, s *vfs.Session) {
			_, err := s.Chmod(ctx, "f", 0o666)
			require.NoError(t, err)
		}},
		{"chown", func(t *testing.T, s *vfs.Session) {
			_, err := s.Chown(ctx, "f", 4321, 4321)
			require.NoError(t, err)
		}},
		{"utimes", func(t *testing.T, s *vfs.Session) {
			now := time.Now()
			_, err := s.Utimens(ctx, "f", vfs.At(now), vfs.At(now))
			require.NoError(t, err)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.write(t, "f", "session f\n")
			m := e.mount(t)
			victim := newVictim(t)
			before := mounttest.HostState(t, victim)
			f := filepath.Join(m.Dir(), "f")
			require.NoError(t, os.Symlink(filepath.Join(victim, "a"), f+".tmp"))
			require.NoError(t, os.Rename(f+".tmp", f))

			tc.op(t, e.s)

			require.Equal(t, before, mounttest.HostState(t, victim),
				"the mirror followed the symlink the mount user put at f and changed the host file %s/a", victim)
		})
	}
}

// TestAttackIngestFollowsExchangedFile: ingest lstat()s the upper file f,
// and a program exchanges f with a symlink to a host file before ingest
// opens f to store its content. The exchange is timed on the ingest's
// opening a large file that sorts before f (so after f was lstat'ed and
// before it is opened); a loop variant races it without the timing. The
// host file must never enter the session.
func TestAttackIngestFollowsExchangedFile(t *testing.T) {
	requireOverlay(t)
	t.Run("timed", func(t *testing.T) {
		e := newEnv(t)
		m := e.mount(t)
		dir := m.Dir()
		secretPath, secret := newSecret(t)
		// f is as long as the secret: ingest reads the size it lstat'ed.
		require.NoError(t, os.WriteFile(filepath.Join(dir, "a-big"), bytes.Repeat([]byte("0123456789abcdef"), 2<<20), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), bytes.Repeat([]byte("x"), len(secret)), 0o644))
		// The symlink sorts first, so the ingest has taken it in (as a
		// symlink) before the exchange.
		require.NoError(t, os.Symlink(secretPath, filepath.Join(dir, "0link")))

		var exErr error
		done, stop := onInotify(t, upperDir(t, dir), unix.IN_OPEN, "a-big", func() {
			exErr = exchange(filepath.Join(dir, "f"), filepath.Join(dir, "0link"))
		})
		defer stop()
		_, ingErr := m.Ingest(context.Background())
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("the ingest never opened the upper a-big: the trigger of this test no longer fits the ingest; see its comment")
		}
		require.NoError(t, exErr)
		t.Logf("ingest: %v", ingErr)
		requireSessionClean(t, e, secret)
	})
	t.Run("loop", func(t *testing.T) {
		e := newEnv(t)
		m := e.mount(t)
		dir := m.Dir()
		secretPath, secret := newSecret(t)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), bytes.Repeat([]byte("x"), len(secret)), 0o644))
		require.NoError(t, os.Symlink(secretPath, filepath.Join(dir, "l")))
		stop := make(chan struct{})
		looped := make(chan int)
		go func() {
			n := 0
			for {
				select {
				case <-stop:
					looped <- n
					return
				default:
				}
				if exchange(filepath.Join(dir, "f"), filepath.Join(dir, "l")) == nil {
					n++
				}
			}
		}()
		deadline := time.Now().Add(3 * time.Second)
		ingests, failed := 0, 0
		for time.Now().Before(deadline) {
			if _, err := m.Ingest(context.Background()); err != nil {
				failed++ // the exchange may make an ingest fail; only what it lets in matters
			}
			ingests++
			b, _, err := e.s.ReadFile(context.Background(), "f")
			if err == nil && strings.Contains(string(b), strings.TrimSpace(secret)) {
				break
			}
		}
		close(stop)
		t.Logf("%d ingests (%d failed) against %d exchanges", ingests, failed, <-looped)
		requireSessionClean(t, e, secret)
	})
}

// TestAttackIngestFollowsExchangedDir: ingest lstat()s the upper directory
// dd, then lists it by path. A program exchanges dd with a symlink to a host
// directory in between (timed on the ingest's opening of the directory
// listed before dd, whose many entries leave time), so ingest lists the
// host directory and takes its files in. Neither their names nor their
// content may enter the session.
func TestAttackIngestFollowsExchangedDir(t *testing.T) {
	requireOverlay(t)
	e := newEnv(t)
	m := e.mount(t)
	dir := m.Dir()
	secretPath, secret := newSecret(t)
	hostDir := filepath.Dir(secretPath)
	require.NoError(t, os.Mkdir(filepath.Join(dir, "a-dir"), 0o755))
	for i := range 1500 {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "a-dir", fmt.Sprintf("e%04d", i)), nil, 0o644))
	}
	require.NoError(t, os.Mkdir(filepath.Join(dir, "dd"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dd", "own"), []byte("own\n"), 0o644))
	// The symlink is in a directory read after dd: when ingest gets there
	// it finds the directory exchanged in, consistently.
	require.NoError(t, os.Mkdir(filepath.Join(dir, "z"), 0o755))
	require.NoError(t, os.Symlink(hostDir, filepath.Join(dir, "z", "ld")))
	before := mounttest.HostState(t, hostDir)

	var exErr error
	done, stop := onInotify(t, upperDir(t, dir), unix.IN_OPEN, "a-dir", func() {
		exErr = exchange(filepath.Join(dir, "dd"), filepath.Join(dir, "z", "ld"))
	})
	defer stop()
	_, ingErr := m.Ingest(context.Background())
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the ingest never opened the upper a-dir: the trigger of this test no longer fits the ingest; see its comment")
	}
	require.NoError(t, exErr)
	t.Logf("ingest: %v", ingErr)
	requireSessionClean(t, e, secret, filepath.Base(secretPath))
	require.Equal(t, before, mounttest.HostState(t, hostDir), "the ingest changed the host directory")
}
