package search

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/vfstest"
)

var ctx = context.Background()

func p(s string) vfs.Path {
	if s == "" || s == "/" {
		return vfs.Root
	}
	return vfs.MustPath(s)
}

// localSession starts a session over a local store, so that LocalPath
// works and the rg engine reads blobs in place.
func localSession(t testing.TB) *vfs.Session { return localSessionPolicy(t, nil) }

// localSessionPolicy is localSession under a session policy.
func localSessionPolicy(t testing.TB, policy vfs.Policy) *vfs.Session {
	t.Helper()
	dir := t.TempDir()
	store, err := snapshot.OpenLocal(filepath.Join(dir, "store"))
	require.NoError(t, err)
	opts := snapshot.RepoOptions{}
	if policy != nil {
		opts.Policy = func(string) vfs.Policy { return policy }
	}
	repo, err := snapshot.OpenRepo(ctx, store, filepath.Join(dir, "sessions"), opts)
	require.NoError(t, err)
	t.Cleanup(func() { repo.Close(); store.Close() })
	s, err := repo.NewSession(ctx, snapshot.SessionOptions{ID: "search"})
	require.NoError(t, err)
	return s
}

// memSession starts a session over an in-memory store: no file has a local
// path, so the rg engine falls back to reading natively.
func memSession(t testing.TB) *vfs.Session {
	s, _ := vfstest.NewSession(t)
	return s
}

// Content prefixes that write a file in a special way; the prefix is not
// part of the content.
const (
	viaHandle = "\x00handle:" // written through a handle: encoding unknown
	asSymlink = "\x00link:"   // a symlink to the rest
)

// fill writes files (path → content) into s in path order; a path ending in
// "/" is an empty directory.
func fill(t testing.TB, s *vfs.Session, files map[string]string) {
	t.Helper()
	paths := make([]string, 0, len(files))
	for k := range files {
		paths = append(paths, k)
	}
	sort.Strings(paths)
	for _, k := range paths {
		content := files[k]
		switch {
		case strings.HasSuffix(k, "/"):
			_, err := s.Mkdir(ctx, p(strings.TrimSuffix(k, "/")), vfs.MkdirOptions{Parents: true})
			require.NoError(t, err)
		case strings.HasPrefix(content, viaHandle):
			mkParents(t, s, k)
			h, err := s.OpenFile(ctx, p(k), os.O_RDWR|os.O_CREATE, 0o644)
			require.NoError(t, err)
			data := strings.TrimPrefix(content, viaHandle)
			if data != "" {
				_, err = h.WriteAt([]byte(data), 0)
				require.NoError(t, err)
			}
			require.NoError(t, h.Close())
		case strings.HasPrefix(content, asSymlink):
			mkParents(t, s, k)
			_, err := s.Symlink(ctx, strings.TrimPrefix(content, asSymlink), p(k))
			require.NoError(t, err)
		default:
			_, err := s.WriteFile(ctx, p(k), strings.NewReader(content), vfs.WriteOptions{CreateParents: true})
			require.NoError(t, err)
		}
	}
}

func mkParents(t testing.TB, s *vfs.Session, k string) {
	t.Helper()
	if dir := p(k).Parent(); dir != vfs.Root {
		_, err := s.Mkdir(ctx, dir, vfs.MkdirOptions{Parents: true})
		require.NoError(t, err)
	}
}

// haveRG reports whether rg is on PATH; tests of the rg engine skip without.
func haveRG(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("rg"); err != nil {
		t.Skip("ripgrep (rg) is not on PATH")
	}
}

// engines are the engines a test runs, rg only when installed.
func engines() []Engine {
	if _, err := exec.LookPath("rg"); err != nil {
		return []Engine{EngineNative}
	}
	return []Engine{EngineNative, EngineRG}
}

// lines renders content matches as "path:line:text" (":" for a match, "-"
// for a context line), as rg prints them.
func lines(res *GrepResult) []string {
	out := []string{}
	for _, m := range res.Matches {
		sep := ":"
		if m.Context {
			sep = "-"
		}
		out = append(out, string(m.Path)+sep+strconv.Itoa(m.Line)+sep+m.Text)
	}
	return out
}

// files renders file results as "path" or "path:count".
func files(res *GrepResult) []string {
	out := []string{}
	for _, f := range res.Files {
		if f.Count > 0 {
			out = append(out, string(f.Path)+":"+strconv.Itoa(f.Count))
		} else {
			out = append(out, string(f.Path))
		}
	}
	return out
}
