//go:build linux

package overlay_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/mount/overlay"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// victim is a host directory outside the session, the mount and the data
// directory, with a canary file: what an attacker with the mount aims at.
type victim struct {
	dir, canary string
}

func newCanary(t *testing.T) victim {
	t.Helper()
	dir := t.TempDir()
	canary := filepath.Join(dir, "canary")
	require.NoError(t, os.WriteFile(canary, []byte("host secret 7f3a"), 0o600))
	return victim{dir: dir, canary: canary}
}

// requireUntouched fails unless the victim directory holds exactly its
// canary, unchanged.
func (v victim) requireUntouched(t *testing.T) {
	t.Helper()
	ents, err := os.ReadDir(v.dir)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	require.Equal(t, []string{"canary"}, names, "the host directory outside the session was changed")
	b, err := os.ReadFile(v.canary)
	require.NoError(t, err)
	require.Equal(t, "host secret 7f3a", string(b))
	fi, err := os.Stat(v.canary)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}

// TestMirrorDoesNotFollowSwappedSymlink is finding 1 of the third security
// review: a process with the mount replaces a session directory with a
// symlink to a host directory; a tool's change under that directory must
// not reach the host (it did: the mirror wrote, chmodded, removed and
// renamed by joined path, as root).
func TestMirrorDoesNotFollowSwappedSymlink(t *testing.T) {
	requireOverlay(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		op   func(s *vfs.Session) error
	}{
		{"write", func(s *vfs.Session) error {
			_, err := s.WriteFile(ctx, "d/new", strings.NewReader("tool's"), vfs.WriteOptions{})
			return err
		}},
		{"overwrite", func(s *vfs.Session) error {
			_, err := s.WriteFile(ctx, "d/canary", strings.NewReader("tool's"), vfs.WriteOptions{})
			return err
		}},
		{"chmod", func(s *vfs.Session) error { _, err := s.Chmod(ctx, "d/canary", 0o777); return err }},
		{"remove", func(s *vfs.Session) error { return s.Remove(ctx, "d/canary", vfs.RemoveOptions{}) }},
		{"rename", func(s *vfs.Session) error { return s.Rename(ctx, "d/canary", "moved", vfs.RenameOptions{}) }},
		{"mkdir", func(s *vfs.Session) error { _, err := s.Mkdir(ctx, "d/sub", vfs.MkdirOptions{}); return err }},
		{"symlink", func(s *vfs.Session) error { _, err := s.Symlink(ctx, "/etc/passwd", "d/l"); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.write(t, "d/canary", "session's")
			m := e.mount(t)
			v := newCanary(t)
			merged := filepath.Join(m.Dir(), "d")
			require.NoError(t, os.Rename(merged, filepath.Join(m.Dir(), "away")))
			require.NoError(t, os.Symlink(v.dir, merged))

			// The tool's change goes to the session (no ingest between):
			// its mirror must fail rather than follow the symlink.
			require.NoError(t, tc.op(e.s))
			v.requireUntouched(t)
			require.NotZero(t, m.MirrorFailures(), "the mirror reports what it could not apply")
		})
	}
}

// TestIngestDoesNotFollowExchangedSymlink is finding 2: while ingest reads
// the upper directory, a process exchanges a file (or a directory) with a
// symlink to a host file (or directory); the host's content must not enter
// the session (it did: entries were opened and listed by path).
func TestIngestDoesNotFollowExchangedSymlink(t *testing.T) {
	requireOverlay(t)
	const secret = "host secret 7f3a"
	for _, tc := range []struct {
		name   string
		stage  string // when the attack runs (see SetAfterRead)
		setup  func(t *testing.T, mnt string, v victim)
		attack func(mnt string, v victim) error
		link   string // the session path that is a symlink in the end
	}{
		{"file exchanged after listing", "read", func(t *testing.T, mnt string, v victim) {
			// As large as the secret: the listed size is what ingest reads.
			require.NoError(t, os.WriteFile(filepath.Join(mnt, "f"), []byte(strings.Repeat("m", len(secret))), 0o644))
			require.NoError(t, os.Symlink(v.canary, filepath.Join(mnt, "l")))
		}, func(mnt string, v victim) error {
			return unix.Renameat2(unix.AT_FDCWD, filepath.Join(mnt, "f"), unix.AT_FDCWD, filepath.Join(mnt, "l"), unix.RENAME_EXCHANGE)
		}, "f"},
		{"directory replaced before descending", "listed", func(t *testing.T, mnt string, v victim) {
			require.NoError(t, os.Mkdir(filepath.Join(mnt, "dd"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(mnt, "dd", "x"), []byte("in dd"), 0o644))
		}, func(mnt string, v victim) error {
			if err := os.Rename(filepath.Join(mnt, "dd"), filepath.Join(mnt, "moved")); err != nil {
				return err
			}
			return os.Symlink(v.dir, filepath.Join(mnt, "dd"))
		}, "dd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t)
			m := e.mount(t)
			v := newCanary(t)
			tc.setup(t, m.Dir(), v)
			attacked := false
			defer overlay.SetAfterRead(func(stage string) {
				if stage == tc.stage && !attacked {
					attacked = true
					require.NoError(t, tc.attack(m.Dir(), v))
				}
			})()
			_, _ = m.Ingest(ctx)
			require.True(t, attacked)
			requireNoSecret(t, e.s, secret)
			// The next ingest, with nothing racing, brings the mount's
			// state over: the symlink as a symlink.
			_, err := m.Ingest(ctx)
			require.NoError(t, err)
			requireNoSecret(t, e.s, secret)
			n, ok, err := e.s.Tree().Lookup(vfs.MustPath(tc.link))
			require.NoError(t, err)
			require.True(t, ok && n.IsSymlink(), "%s is now the symlink, kept as one", tc.link)
			v.requireUntouched(t)
		})
	}
}

// requireNoSecret fails if any file of the session holds secret.
func requireNoSecret(t *testing.T, s *vfs.Session, secret string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, s.Tree().Walk(vfs.Root, func(p vfs.Path, n vfs.Node) error {
		if !n.IsFile() {
			return nil
		}
		r, err := s.Open(ctx, p)
		require.NoError(t, err)
		defer r.Close()
		b := make([]byte, r.Size())
		_, err = r.ReadAt(b, 0)
		if r.Size() > 0 {
			require.NoError(t, err)
		}
		require.NotContains(t, string(b), secret, "host content entered the session at %s", p)
		return nil
	}))
}

// newQuotaEnv is newEnv with a session quota.
func newQuotaEnv(t *testing.T, q vfs.Quota) *env {
	t.Helper()
	ctx := context.Background()
	root := t.TempDir()
	repo, err := snapshot.OpenLocalRepo(ctx, filepath.Join(root, "repo"), snapshot.RepoOptions{
		Quota: func(string) vfs.Quota { return q }})
	require.NoError(t, err)
	t.Cleanup(func() { repo.Close() })
	s, err := repo.NewSession(ctx, snapshot.SessionOptions{ID: "s1"})
	require.NoError(t, err)
	return &env{repo: repo, s: s, root: root}
}

// TestIngestKeepsQuota is finding 6: what programs write through the
// overlay is held to the session's quota like a tool's write; what does
// not fit is undone in the mount and reported once, with the tool's code,
// and the session stays usable.
func TestIngestKeepsQuota(t *testing.T) {
	requireOverlay(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		q     vfs.Quota
		write func(t *testing.T, dir string)
	}{
		{"entries", vfs.Quota{MaxNodes: 20}, func(t *testing.T, dir string) {
			for i := range 60 {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "f"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+string(rune('a'+i/26))), []byte("x"), 0o644))
			}
		}},
		{"entries in one directory past the memory budget", vfs.Quota{MaxNodes: 10}, func(t *testing.T, dir string) {
			require.NoError(t, os.Mkdir(filepath.Join(dir, "many"), 0o755))
			for i := range 3000 {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "many", "n"+strings.Repeat("0", 4)+itoa(i)), nil, 0o644))
			}
		}},
		{"bytes", vfs.Quota{MaxBytes: 64 << 10}, func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "small"), []byte("fits"), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "big"), make([]byte, 1<<20), 0o644))
			// An existing file grown past the quota gets its old content back.
			require.NoError(t, os.WriteFile(filepath.Join(dir, "keep"), make([]byte, 2<<20), 0o644))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newQuotaEnv(t, tc.q)
			e.write(t, "keep", "kept content")
			m := e.mount(t)
			tc.write(t, m.Dir())

			rep, err := m.Ingest(ctx)
			require.Error(t, err)
			require.Equal(t, vfs.CodeTooLarge, vfs.CodeOf(err), "%v", err)
			require.Contains(t, err.Error(), "quota")
			require.NotZero(t, rep.Refused)
			// The growth is refused as a whole, as a tool batch over the
			// quota is: the session holds what it held.
			require.Equal(t, 1, e.s.Tree().Len()-1, "only keep")
			if tc.q.MaxNodes > 0 {
				require.LessOrEqual(t, int64(e.s.Tree().Len()-1), tc.q.MaxNodes)
			}
			if tc.q.MaxBytes > 0 {
				require.LessOrEqual(t, e.s.Tree().Bytes(), tc.q.MaxBytes)
				b, err := os.ReadFile(filepath.Join(m.Dir(), "keep"))
				require.NoError(t, err)
				require.Equal(t, "kept content", string(b), "the file grown past the quota has the session's content again")
			}
			// The mount and the session agree again: the next ingest is
			// clean, and a tool's change goes through and shows.
			rep, err = m.Ingest(ctx)
			require.NoError(t, err)
			require.Zero(t, rep.Refused)
			require.NoError(t, e.s.Remove(ctx, "keep", vfs.RemoveOptions{}))
			e.write(t, "after", "ok")
			b, err := os.ReadFile(filepath.Join(m.Dir(), "after"))
			require.NoError(t, err)
			require.Equal(t, "ok", string(b))
			_, err = m.Ingest(ctx)
			require.NoError(t, err)
		})
	}
}

func itoa(i int) string { return fmtInt(i) }

func fmtInt(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

// TestIngestRefusesNamesNoPathCanHold: a name that is not UTF-8 is removed
// from the mount and reported; it never enters the session mangled, and
// the rest of the ingest goes through.
func TestIngestRefusesNamesNoPathCanHold(t *testing.T) {
	requireOverlay(t)
	ctx := context.Background()
	e := newEnv(t)
	m := e.mount(t)
	bad := filepath.Join(m.Dir(), "\xff\xfe.txt")
	require.NoError(t, os.WriteFile(bad, []byte("x"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(m.Dir(), "good.txt"), []byte("y"), 0o644))
	_, err := m.Ingest(ctx)
	require.Error(t, err)
	require.Equal(t, vfs.CodeInvalidPath, vfs.CodeOf(err), "%v", err)
	require.Contains(t, err.Error(), `"\xff\xfe.txt"`)
	_, err = os.Lstat(bad)
	require.ErrorIs(t, err, os.ErrNotExist, "removed from the mount")
	var names []string
	require.NoError(t, e.s.Tree().ChildrenErr(vfs.Root, func(name string, _ vfs.Node) bool {
		names = append(names, name)
		return true
	}))
	require.Equal(t, []string{"good.txt"}, names)
	_, err = m.Ingest(ctx)
	require.NoError(t, err)
}
