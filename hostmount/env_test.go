package hostmount

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

var ctx = context.Background()

// env is a host root with an importer and a repository.
type env struct {
	t       *testing.T
	dir     string // holds root/ and outside/
	root    string // the allow-listed root
	outside string // a sibling the importer must never read
	store   *snapshot.MemoryStore
	repo    *snapshot.Repo
	im      *Importer
}

func newEnv(t *testing.T, opts ...func(*Options)) *env {
	t.Helper()
	dir := t.TempDir()
	e := &env{t: t, dir: dir, root: filepath.Join(dir, "root"), outside: filepath.Join(dir, "root_evil")}
	require.NoError(t, os.MkdirAll(e.root, 0o755))
	require.NoError(t, os.MkdirAll(e.outside, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(e.outside, "secret"), []byte("TOP SECRET"), 0o644))
	e.store = snapshot.NewMemory()
	var err error
	e.repo, err = snapshot.OpenRepo(ctx, e.store, filepath.Join(dir, "sessions"), snapshot.RepoOptions{})
	require.NoError(t, err)
	o := Options{Roots: []string{e.root}, CacheFile: filepath.Join(dir, "import.cache")}
	for _, f := range opts {
		f(&o)
	}
	e.im, err = New(o)
	require.NoError(t, err)
	t.Cleanup(func() { e.im.Close(); e.repo.Close() })
	return e
}

// write creates a host file (and its parents) under the root.
func (e *env) write(rel, content string) {
	p := filepath.Join(e.root, rel)
	require.NoError(e.t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(e.t, os.WriteFile(p, []byte(content), 0o644))
}

// symlink creates a host symlink under the root; where the system cannot
// (Wine, Windows without the privilege), the test is skipped.
func (e *env) symlink(target, rel string) {
	e.t.Helper()
	if !canSymlink(e.t) {
		e.t.Skip("this system cannot create symlinks (Wine 8, or Windows without the privilege): the symlink cases run on Linux and macOS")
	}
	p := filepath.Join(e.root, rel)
	require.NoError(e.t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(e.t, os.Symlink(target, p))
}

// canSymlink reports whether this system creates symlinks that Lstat then
// sees (Wine 8's CreateSymbolicLink reports success and creates nothing).
func canSymlink(t *testing.T) bool {
	symlinkOnce.Do(func() {
		dir, err := os.MkdirTemp("", "vfsd-symlink-probe")
		if err != nil {
			return
		}
		defer os.RemoveAll(dir)
		p := filepath.Join(dir, "l")
		if os.Symlink("target", p) != nil {
			return
		}
		fi, err := os.Lstat(p)
		symlinksWork = err == nil && fi.Mode()&os.ModeSymlink != 0
	})
	return symlinksWork
}

var (
	symlinkOnce  sync.Once
	symlinksWork bool
)

// host is the host path of rel (slash-separated) under the root.
func (e *env) host(rel string) string { return filepath.Join(e.root, filepath.FromSlash(rel)) }

// load imports mounts and returns the result as path → description.
func (e *env) load(mounts ...Mount) (map[string]string, *Report) {
	e.t.Helper()
	snap, rep, err := e.im.Import(ctx, e.repo, mounts, nil)
	require.NoError(e.t, err)
	return e.describe(snap.Tree), rep
}

// describe renders a tree as path → "dir", "-> target" or the content.
func (e *env) describe(t vfs.Tree) map[string]string {
	out := map[string]string{}
	_ = t.Walk(vfs.Root, func(p vfs.Path, n vfs.Node) error {
		switch n.Kind {
		case vfs.KindDir:
			out[string(p)] = "dir"
		case vfs.KindSymlink:
			out[string(p)] = "-> " + n.Target
		case vfs.KindFifo, vfs.KindSocket, vfs.KindCharDev, vfs.KindBlockDev:
			out[string(p)] = n.Kind.String()
		default:
			b, err := e.store.Open(ctx, snapshot.Blobs, n.Blob)
			require.NoError(e.t, err)
			buf := make([]byte, b.Size())
			_, _ = b.ReadAt(buf, 0)
			b.Close()
			out[string(p)] = string(buf)
		}
		return nil
	})
	return out
}

func skipsOf(rep *Report) map[string]string {
	out := map[string]string{}
	for _, s := range rep.Skipped {
		out[s.HostPath] = s.Reason
	}
	return out
}

// requireNotStored checks that no blob holds content.
func requireNotStored(t *testing.T, e *env, content string) {
	t.Helper()
	_, err := e.store.Stat(ctx, snapshot.Blobs, vfs.HashOf([]byte(content)))
	require.ErrorIs(t, err, vfs.ErrNotFound, "content from outside the root was imported")
}

func requireContent(t *testing.T, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, want, string(b))
}
