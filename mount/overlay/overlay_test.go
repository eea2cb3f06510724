//go:build linux

package overlay_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/internal/mountinfo"
	"github.com/vfsd/vfsd/mount/overlay"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// requireOverlay skips unless this process can mount the overlay backend.
func requireOverlay(t testing.TB) {
	t.Helper()
	if err := overlay.Available(); err != nil {
		t.Skipf("overlay backend unavailable: %v", err)
	}
}

// env is a repository with one session.
type env struct {
	repo *snapshot.Repo
	s    *vfs.Session
	root string
}

func newEnv(t testing.TB) *env {
	t.Helper()
	ctx := context.Background()
	root := t.TempDir()
	repo, err := snapshot.OpenLocalRepo(ctx, filepath.Join(root, "repo"), snapshot.RepoOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { repo.Close() })
	s, err := repo.NewSession(ctx, snapshot.SessionOptions{ID: "s1"})
	require.NoError(t, err)
	return &env{repo: repo, s: s, root: root}
}

func (e *env) opts() overlay.Options {
	return overlay.Options{StateDir: filepath.Join(e.root, "state"), MetaCache: filepath.Join(e.root, "meta")}
}

func (e *env) mount(t testing.TB) *overlay.Mount {
	t.Helper()
	dir := filepath.Join(e.root, "mnt")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	m, err := overlay.New(context.Background(), e.repo, e.s, dir, e.opts())
	require.NoError(t, err)
	t.Cleanup(func() { m.Unmount() })
	return m
}

func (e *env) write(t testing.TB, p, content string) {
	t.Helper()
	_, err := e.s.WriteFile(context.Background(), vfs.MustPath(p), strings.NewReader(content), vfs.WriteOptions{CreateParents: true})
	require.NoError(t, err)
}

// state describes a tree as seen through the filesystem: kind, mode,
// owner, size, content or target, mtime and user xattrs per path.
func fsState(t testing.TB, dir string) string {
	t.Helper()
	var lines []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		rel, _ := filepath.Rel(dir, p)
		var st unix.Stat_t
		require.NoError(t, unix.Lstat(p, &st))
		line := fmt.Sprintf("%s %o %d:%d mtime=%d", rel, st.Mode, st.Uid, st.Gid, unix.TimespecToNsec(st.Mtim))
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			line += fmt.Sprintf(" %q", b)
		case unix.S_IFLNK:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case unix.S_IFDIR:
			line = fmt.Sprintf("%s %o %d:%d", rel, st.Mode, st.Uid, st.Gid) // directory times move with tools' mirroring
		}
		sz, _ := unix.Llistxattr(p, nil)
		if sz > 0 {
			buf := make([]byte, sz)
			n, _ := unix.Llistxattr(p, buf)
			names := strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00")
			sort.Strings(names)
			for _, name := range names {
				if name == "" {
					continue
				}
				v := make([]byte, 256)
				k, _ := unix.Lgetxattr(p, name, v)
				line += fmt.Sprintf(" %s=%q", name, v[:max(k, 0)])
			}
		}
		lines = append(lines, line)
		return nil
	}))
	return strings.Join(lines, "\n")
}

// sessionState materializes the session and describes it like fsState.
func sessionState(t testing.TB, e *env) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "m")
	_, err := e.repo.Materialize(context.Background(), snapshot.Source{Session: e.s}, dir)
	require.NoError(t, err)
	return fsState(t, dir)
}

func requireSame(t *testing.T, e *env, m *overlay.Mount) {
	t.Helper()
	require.NoError(t, m.Sync(context.Background()))
	require.Equal(t, fsState(t, m.Dir()), sessionState(t, e))
}

func TestMountShowsSessionAndIngestsChanges(t *testing.T) {
	requireOverlay(t)
	e := newEnv(t)
	e.write(t, "a.txt", "alpha")
	e.write(t, "d/b.txt", "bravo")
	e.write(t, "d/sub/c.txt", "charlie")
	e.write(t, "gone/x", "x")
	_, err := e.s.Link(context.Background(), "a.txt", "a-link")
	require.NoError(t, err)
	_, err = e.s.SetXattr(context.Background(), "a.txt", "user.tag", []byte("v1"), 0)
	require.NoError(t, err)
	m := e.mount(t)
	dir := m.Dir()
	require.False(t, m.Meta().Cached)

	b, err := os.ReadFile(filepath.Join(dir, "d/sub/c.txt"))
	require.NoError(t, err)
	require.Equal(t, "charlie", string(b))
	requireSame(t, e, m)

	// The kernel's changes: content, metadata only, renames of a file and
	// a directory, deletions, new nodes of every kind.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "d/b.txt"), []byte("bravo2"), 0o644))
	require.NoError(t, os.Chmod(filepath.Join(dir, "a.txt"), 0o600))
	require.NoError(t, unix.Setxattr(filepath.Join(dir, "a.txt"), "user.tag", []byte("v2"), 0))
	require.NoError(t, os.Rename(filepath.Join(dir, "d"), filepath.Join(dir, "e")))
	require.NoError(t, os.Rename(filepath.Join(dir, "e/sub/c.txt"), filepath.Join(dir, "c-moved.txt")))
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "gone")))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "new"), 0o750))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "new/n.txt"), []byte("november"), 0o640))
	require.NoError(t, os.Symlink("../a.txt", filepath.Join(dir, "new/ln")))
	require.NoError(t, unix.Mkfifo(filepath.Join(dir, "new/fifo"), 0o600))
	require.NoError(t, os.Link(filepath.Join(dir, "new/n.txt"), filepath.Join(dir, "new/n2.txt")))
	require.NoError(t, os.Chown(filepath.Join(dir, "new/n.txt"), 1234, 5678))
	ts := time.Unix(1_600_000_000, 123456789)
	require.NoError(t, os.Chtimes(filepath.Join(dir, "c-moved.txt"), ts, ts))
	requireSame(t, e, m)

	n, err := e.s.Stat(context.Background(), "new/n2.txt")
	require.NoError(t, err)
	require.EqualValues(t, 2, n.Nlink, "a hard link made in the mount is one in the session")
	require.EqualValues(t, 1234, n.Uid)

	// Nothing changed since: nothing to do.
	rep, err := m.Ingest(context.Background())
	require.NoError(t, err)
	require.Zero(t, rep.Changes, "%+v", rep)

	// Changes to ingested paths, and deletion of what was created.
	require.NoError(t, os.Remove(filepath.Join(dir, "new/n2.txt")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "new/n.txt"), []byte("n2"), 0o640))
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "e")))
	requireSame(t, e, m)
}

func TestToolChangesAppearInTheMount(t *testing.T) {
	requireOverlay(t)
	e := newEnv(t)
	e.write(t, "a.txt", "alpha")
	e.write(t, "d/b.txt", "bravo")
	m := e.mount(t)
	ctx := context.Background()
	e.write(t, "a.txt", "alpha2")
	e.write(t, "x/y/z.txt", "zulu")
	require.NoError(t, e.s.Rename(ctx, "d", "d2", vfs.RenameOptions{}))
	require.NoError(t, e.s.Remove(ctx, "d2/b.txt", vfs.RemoveOptions{}))
	_, err := e.s.Chmod(ctx, "a.txt", 0o604)
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(m.Dir(), "a.txt"))
	require.NoError(t, err)
	require.Equal(t, "alpha2", string(b))
	requireSame(t, e, m)
	rep, err := m.Ingest(ctx)
	require.NoError(t, err)
	require.Zero(t, rep.Changes, "the mirrored changes are the session's already: %+v", rep)
	require.Zero(t, m.MirrorFailures())
}

func TestRestoreMountsTheRestoredState(t *testing.T) {
	requireOverlay(t)
	e := newEnv(t)
	ctx := context.Background()
	e.write(t, "a.txt", "one")
	snap, err := e.repo.Snapshot(ctx, e.s, "one")
	require.NoError(t, err)
	m := e.mount(t)
	require.NoError(t, os.WriteFile(filepath.Join(m.Dir(), "a.txt"), []byte("two"), 0o644))
	require.NoError(t, m.Sync(ctx))
	require.NoError(t, e.repo.Restore(ctx, e.s, snap.ID))
	b, err := os.ReadFile(filepath.Join(m.Dir(), "a.txt"))
	require.NoError(t, err)
	require.Equal(t, "one", string(b))
	requireSame(t, e, m)
}

func TestSecondMountOfSameStateReusesMetadataLayer(t *testing.T) {
	requireOverlay(t)
	e := newEnv(t)
	e.write(t, "a.txt", "alpha")
	m := e.mount(t)
	require.NoError(t, m.Unmount())
	m2 := e.mount(t)
	require.True(t, m2.Meta().Cached, "%+v", m2.Meta())
}

func TestTakeOverAfterCrash(t *testing.T) {
	requireOverlay(t)
	e := newEnv(t)
	e.write(t, "a.txt", "alpha")
	m := e.mount(t)
	require.NoError(t, os.WriteFile(filepath.Join(m.Dir(), "new.txt"), []byte("acknowledged"), 0o644))
	// The daemon dies: the kernel keeps the overlay mounted. A new process
	// (here: a new Mount with the same state directory) takes it over.
	m.Abandon()
	m2, err := overlay.New(context.Background(), e.repo, e.s, m.Dir(), e.opts())
	require.NoError(t, err)
	defer m2.Unmount()
	data, _, err := e.s.ReadFile(context.Background(), "new.txt")
	require.NoError(t, err)
	require.Equal(t, "acknowledged", string(data))
	// Unmounted meanwhile (a reboot): mounted again from the upper dir.
	require.NoError(t, m2.Detach())
	require.NoError(t, os.WriteFile(filepath.Join(e.root, "state/upper/late.txt"), []byte("late"), 0o644))
	m3, err := overlay.New(context.Background(), e.repo, e.s, m.Dir(), e.opts())
	require.NoError(t, err)
	defer m3.Unmount()
	data, _, err = e.s.ReadFile(context.Background(), "late.txt")
	require.NoError(t, err)
	require.Equal(t, "late", string(data))
	requireSame(t, e, m3)
	var st syscall.Statfs_t
	require.NoError(t, syscall.Statfs(m3.Dir(), &st))
	require.EqualValues(t, 0x794c7630, st.Type, "an overlayfs")
}

// TestReleaseKeepsTheMount: Release (a node plugin's daemon shutting down
// under running containers) ingests what was written, leaves the kernel
// serving the overlay, and a new Mount with the same state directory takes
// it over without mounting a second overlay, ingesting what was written
// while no daemon ran.
func TestReleaseKeepsTheMount(t *testing.T) {
	requireOverlay(t)
	e := newEnv(t)
	e.write(t, "a.txt", "alpha")
	m := e.mount(t)
	require.NoError(t, os.WriteFile(filepath.Join(m.Dir(), "before.txt"), []byte("before release"), 0o644))
	require.NoError(t, m.Release())
	require.NoError(t, m.Release(), "a second release does nothing")
	require.NoError(t, m.Unmount(), "unmount after release does nothing")
	data, _, err := e.s.ReadFile(context.Background(), "before.txt")
	require.NoError(t, err, "release ingested what was written")
	require.Equal(t, "before release", string(data))

	var st syscall.Statfs_t
	require.NoError(t, syscall.Statfs(m.Dir(), &st))
	require.EqualValues(t, 0x794c7630, st.Type, "the kernel still serves the overlay")
	require.NoError(t, os.WriteFile(filepath.Join(m.Dir(), "during.txt"), []byte("no daemon"), 0o644))

	m2, err := overlay.New(context.Background(), e.repo, e.s, m.Dir(), e.opts())
	require.NoError(t, err)
	defer m2.Unmount()
	data, _, err = e.s.ReadFile(context.Background(), "during.txt")
	require.NoError(t, err, "the new mount ingested what was written while released")
	require.Equal(t, "no daemon", string(data))
	ms, err := mountinfo.Read()
	require.NoError(t, err)
	n := 0
	for _, mi := range ms {
		if mi.MountPoint == m.Dir() {
			n++
		}
	}
	require.Equal(t, 1, n, "taken over, not mounted again on top")
	requireSame(t, e, m2)
}

// TestTakeOverWithEscapedPaths: mountinfo writes a space in a path as
// \040; a mount whose directory, upper directory and metadata layer have
// spaces in their paths is still found mounted (taken over, not mounted a
// second time) and its layer still counts as in use.
func TestTakeOverWithEscapedPaths(t *testing.T) {
	requireOverlay(t)
	e := newEnv(t)
	e.write(t, "a.txt", "alpha")
	root := filepath.Join(e.root, "with space")
	opts := overlay.Options{StateDir: filepath.Join(root, "state dir"), MetaCache: filepath.Join(root, "meta cache")}
	dir := filepath.Join(root, "mnt dir")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	m, err := overlay.New(context.Background(), e.repo, e.s, dir, opts)
	require.NoError(t, err)
	require.True(t, overlay.MountedLowers()[m.Meta().Dir], "the layer is seen mounted")
	m.Abandon()
	m2, err := overlay.New(context.Background(), e.repo, e.s, dir, opts)
	require.NoError(t, err)
	defer m2.Unmount()
	ms, err := mountinfo.Read()
	require.NoError(t, err)
	n := 0
	for _, mi := range ms {
		if mi.MountPoint == dir {
			n++
		}
	}
	require.Equal(t, 1, n, "the mount was taken over, not mounted again on top")
}

func TestReadOnlyMount(t *testing.T) {
	requireOverlay(t)
	e := newEnv(t)
	e.write(t, "a.txt", "alpha")
	opts := e.opts()
	opts.ReadOnly = true
	dir := filepath.Join(e.root, "ro")
	require.NoError(t, os.Mkdir(dir, 0o755))
	m, err := overlay.New(context.Background(), e.repo, e.s, dir, opts)
	require.NoError(t, err)
	defer m.Unmount()
	b, err := os.ReadFile(filepath.Join(dir, "a.txt"))
	require.NoError(t, err)
	require.Equal(t, "alpha", string(b))
	require.ErrorIs(t, os.WriteFile(filepath.Join(dir, "b.txt"), nil, 0o644), syscall.EROFS)
	require.NoError(t, m.Sync(context.Background()))
}

// TestIngestAfterIngest changes the mount between ingests in the ways that
// the incremental reconciliation of directories (only the names whose
// upper listing changed) must follow, and checks after each that the
// session is exactly what the mount shows.
func TestIngestAfterIngest(t *testing.T) {
	requireOverlay(t)
	e := newEnv(t)
	for _, p := range []string{"d/a", "d/b", "d/c", "d2/x", "d2/y", "d3/k/l", "d3/m", "top"} {
		e.write(t, p, "base "+p)
	}
	m := e.mount(t)
	ctx := context.Background()
	at := func(p string) string { return filepath.Join(m.Dir(), p) }
	steps := []struct {
		name string
		do   func(t *testing.T)
	}{
		{"create a temporary file", func(t *testing.T) {
			require.NoError(t, os.WriteFile(at("d/tmp"), []byte("t"), 0o644))
		}},
		{"remove it (no whiteout)", func(t *testing.T) { require.NoError(t, os.Remove(at("d/tmp"))) }},
		{"remove a base file (whiteout)", func(t *testing.T) { require.NoError(t, os.Remove(at("d/b"))) }},
		{"create it again", func(t *testing.T) {
			require.NoError(t, os.WriteFile(at("d/b"), []byte("b again"), 0o600))
		}},
		{"rename a file within a directory", func(t *testing.T) { require.NoError(t, os.Rename(at("d/c"), at("d/c2"))) }},
		{"replace a base directory", func(t *testing.T) {
			require.NoError(t, os.RemoveAll(at("d2")))
			require.NoError(t, os.Mkdir(at("d2"), 0o755))
			require.NoError(t, os.WriteFile(at("d2/z"), []byte("z"), 0o644))
		}},
		{"tool changes, then the kernel's", func(t *testing.T) {
			e.write(t, "d/tool", "from a tool")
			require.NoError(t, e.s.Remove(ctx, "d/a", vfs.RemoveOptions{}))
			require.NoError(t, m.Sync(ctx))
			require.NoError(t, os.Remove(at("d/tool")))
			require.NoError(t, os.WriteFile(at("d/a"), []byte("a from the mount"), 0o644))
		}},
		{"rename a base directory", func(t *testing.T) { require.NoError(t, os.Rename(at("d3"), at("d4"))) }},
		{"change inside the renamed directory", func(t *testing.T) {
			require.NoError(t, os.Remove(at("d4/m")))
			require.NoError(t, os.WriteFile(at("d4/k/new"), []byte("n"), 0o644))
		}},
		{"rename it back", func(t *testing.T) { require.NoError(t, os.Rename(at("d4"), at("d3"))) }},
		{"nested new directories", func(t *testing.T) {
			require.NoError(t, os.MkdirAll(at("n/o/p"), 0o755))
			require.NoError(t, os.WriteFile(at("n/o/p/q"), []byte("q"), 0o644))
		}},
		{"remove them", func(t *testing.T) { require.NoError(t, os.RemoveAll(at("n"))) }},
		{"remove a directory of the base and create a file in its place", func(t *testing.T) {
			require.NoError(t, os.RemoveAll(at("d2")))
			require.NoError(t, os.WriteFile(at("d2"), []byte("now a file"), 0o644))
		}},
		{"nothing", func(t *testing.T) {}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			st.do(t)
			requireSame(t, e, m)
		})
	}
	require.Zero(t, m.MirrorFailures())
}

// TestMetaLayerKeepsEveryMode mounts files whose metadata the layer's
// build sets in different ways (default owner or not, modes the umask
// would cut, set-ID bits that chown clears, empty files, xattrs) and
// checks that the mount shows them as the session has them.
func TestMetaLayerKeepsEveryMode(t *testing.T) {
	requireOverlay(t)
	e := newEnv(t)
	ctx := context.Background()
	files := []struct {
		path     string
		content  string
		mode     os.FileMode
		uid, gid uint32
		xattr    string
	}{
		{path: "plain", content: "p", mode: 0o644},
		{path: "private", content: "p", mode: 0o600},
		{path: "open", content: "o", mode: 0o777},
		{path: "none", content: "n", mode: 0},
		{path: "empty", mode: 0o640},
		{path: "setuid", content: "s", mode: 0o4755 | os.ModeSetuid, uid: 1234, gid: 5678},
		{path: "setgid", content: "s", mode: 0o2750 | os.ModeSetgid, gid: 42},
		{path: "sticky", content: "s", mode: 0o1777 | os.ModeSticky},
		{path: "owned", content: "x", mode: 0o644, uid: 7, gid: 7, xattr: "user.k"},
		{path: "d/deep", content: "d", mode: 0o444, uid: 1, gid: 2},
	}
	for _, f := range files {
		e.write(t, f.path, f.content)
		if f.uid != 0 || f.gid != 0 {
			_, err := e.s.Chown(ctx, vfs.MustPath(f.path), f.uid, f.gid)
			require.NoError(t, err)
		}
		_, err := e.s.Chmod(ctx, vfs.MustPath(f.path), f.mode)
		require.NoError(t, err)
		if f.xattr != "" {
			_, err := e.s.SetXattr(ctx, vfs.MustPath(f.path), f.xattr, []byte("v"), 0)
			require.NoError(t, err)
		}
	}
	m := e.mount(t)
	require.False(t, m.Meta().Cached)
	for _, f := range files {
		var st unix.Stat_t
		require.NoError(t, unix.Lstat(filepath.Join(m.Dir(), f.path), &st))
		n, err := e.s.Stat(ctx, vfs.MustPath(f.path))
		require.NoError(t, err)
		require.Equal(t, n.UnixMode(), st.Mode, f.path)
		require.Equal(t, []uint32{n.Uid, n.Gid}, []uint32{st.Uid, st.Gid}, f.path)
		require.Equal(t, n.Mtime, unix.TimespecToNsec(st.Mtim), f.path)
	}
	requireSame(t, e, m)
}

// TestMetaCacheCollectsUnusedLayers builds layers of three states, mounts
// one, and checks that collecting keeps the mounted layer and the most
// recently used others, up to the bound.
func TestMetaCacheCollectsUnusedLayers(t *testing.T) {
	requireOverlay(t)
	defer overlay.SetLayerGrace(0)()
	e := newEnv(t)
	ctx := context.Background()
	opts := e.opts()
	e.write(t, "a.txt", "one")
	m := e.mount(t) // holds the layer of state one
	live := m.Meta().Dir
	require.True(t, overlay.MountedLowers()[live], "the mounted layer is in mountinfo")
	var built []string
	for i, content := range []string{"two", "three"} {
		e.write(t, "a.txt", content)
		snap, err := e.repo.Snapshot(ctx, e.s, content)
		require.NoError(t, err)
		rep, err := overlay.BuildMeta(ctx, snap, opts.MetaCache, e.s.DefaultOwner())
		require.NoError(t, err)
		past := time.Now().Add(time.Duration(i-10) * time.Hour) // two is older than three
		require.NoError(t, os.Chtimes(rep.Dir, past, past))
		built = append(built, rep.Dir)
	}
	rep, err := overlay.CollectMeta(opts.MetaCache, 1)
	require.NoError(t, err)
	require.Equal(t, []string{built[0]}, rep.Removed, "the older unused layer goes")
	require.Equal(t, 2, rep.Kept)
	require.DirExists(t, live)
	require.DirExists(t, built[1])
	b, err := os.ReadFile(filepath.Join(m.Dir(), "a.txt"))
	require.NoError(t, err)
	require.Equal(t, "three", string(b), "the mount still works (the tool's writes went through)")

	require.NoError(t, m.Unmount())
	rep, err = overlay.CollectMeta(opts.MetaCache, 1)
	require.NoError(t, err)
	require.Equal(t, []string{built[1]}, rep.Removed, "unmounted, the layer used last stays")
	require.DirExists(t, live)
	rep, err = overlay.CollectMeta(opts.MetaCache, -1)
	require.NoError(t, err)
	require.Empty(t, rep.Removed)
}
