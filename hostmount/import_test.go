package hostmount

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

func TestImportOptions(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(e *env)
		mounts func(e *env) []Mount
		want   map[string]string
		skips  map[string]string // host path relative to root → reason
	}{
		{
			name: "a folder lands under its base name, symlinks as symlinks",
			setup: func(e *env) {
				e.write("proj/a.txt", "a")
				e.write("proj/sub/b.go", "package b")
				require.NoError(t, os.MkdirAll(filepath.Join(e.root, "proj/empty"), 0o755))
				e.symlink("a.txt", "proj/link")
			},
			mounts: func(e *env) []Mount { return []Mount{{HostPath: filepath.Join(e.root, "proj")}} },
			want: map[string]string{"": "dir", "proj": "dir", "proj/a.txt": "a", "proj/empty": "dir", "proj/link": "-> a.txt",
				"proj/sub": "dir", "proj/sub/b.go": "package b"},
		},
		{
			name:   "mount_path / puts the folder at the session root",
			setup:  func(e *env) { e.write("proj/a.txt", "a") },
			mounts: func(e *env) []Mount { return []Mount{{HostPath: filepath.Join(e.root, "proj"), MountPath: "/"}} },
			want:   map[string]string{"": "dir", "a.txt": "a"},
		},
		{
			name:   "a nested mount_path creates its parents",
			setup:  func(e *env) { e.write("proj/a.txt", "a") },
			mounts: func(e *env) []Mount { return []Mount{{HostPath: filepath.Join(e.root, "proj"), MountPath: "x/y"}} },
			want:   map[string]string{"": "dir", "x": "dir", "x/y": "dir", "x/y/a.txt": "a"},
		},
		{
			name:  "a single file",
			setup: func(e *env) { e.write("notes.md", "hi") },
			mounts: func(e *env) []Mount {
				return []Mount{{HostPath: filepath.Join(e.root, "notes.md"), MountPath: "docs/notes.md"}}
			},
			want: map[string]string{"": "dir", "docs": "dir", "docs/notes.md": "hi"},
		},
		{
			name: "include keeps matching files and the directories leading to them",
			setup: func(e *env) {
				e.write("p/main.go", "m")
				e.write("p/README.md", "r")
				e.write("p/pkg/x/x.go", "x")
				e.write("p/docs/guide.md", "g")
			},
			mounts: func(e *env) []Mount {
				return []Mount{{HostPath: filepath.Join(e.root, "p"), MountPath: "/", Include: []string{"**/*.go"}}}
			},
			want: map[string]string{"": "dir", "main.go": "m", "pkg": "dir", "pkg/x": "dir", "pkg/x/x.go": "x"},
		},
		{
			name: "exclude wins over include and keeps the walk out of directories",
			setup: func(e *env) {
				e.write("p/a.go", "a")
				e.write("p/gen/b.go", "b")
				e.write("p/skip/c.go", "c")
				e.special("p/skip/fifo")
			},
			mounts: func(e *env) []Mount {
				return []Mount{{HostPath: filepath.Join(e.root, "p"), MountPath: "/", Include: []string{"**/*.go"},
					Exclude: []string{"gen/*.go", "skip/**"}}}
			},
			want: map[string]string{"": "dir", "a.go": "a"}, // no fifo reported: skip/ was never entered
		},
		{
			name: "default excludes",
			setup: func(e *env) {
				e.write("p/src/a.js", "a")
				e.write("p/.git/HEAD", "ref")
				e.write("p/node_modules/x/index.js", "x")
				e.write("p/src/__pycache__/m.pyc", "c")
				e.write("p/build/out.bin", "o")
			},
			mounts: func(e *env) []Mount {
				return []Mount{{HostPath: filepath.Join(e.root, "p"), MountPath: "/", DefaultExcludes: true}}
			},
			want: map[string]string{"": "dir", "src": "dir", "src/a.js": "a"},
		},
		{
			name: "gitignore files at every level",
			setup: func(e *env) {
				e.write("p/.gitignore", "*.log\n/tmp/\n!keep.log\n")
				e.write("p/a.log", "x")
				e.write("p/keep.log", "k")
				e.write("p/tmp/t", "t")
				e.write("p/sub/tmp/t", "t2")
				e.write("p/sub/.gitignore", "secret*\n")
				e.write("p/sub/secret.txt", "s")
				e.write("p/sub/ok.txt", "ok")
			},
			mounts: func(e *env) []Mount {
				return []Mount{{HostPath: filepath.Join(e.root, "p"), MountPath: "/", Gitignore: true}}
			},
			want: map[string]string{"": "dir", ".gitignore": "*.log\n/tmp/\n!keep.log\n", "keep.log": "k", "sub": "dir",
				"sub/.gitignore": "secret*\n", "sub/ok.txt": "ok", "sub/tmp": "dir", "sub/tmp/t": "t2"},
		},
		{
			name: "followed symlinks import their targets inside the root, and skip the rest",
			setup: func(e *env) {
				e.write("p/real/f.txt", "f")
				e.write("other/o.txt", "o")
				e.symlink("real", "p/dirlink")
				e.symlink("../other/o.txt", "p/filelink")
				e.symlink(filepath.Join(e.outside, "secret"), "p/escape")
				e.symlink("../../root_evil/secret", "p/escape2")
				e.symlink("nowhere", "p/dangling")
			},
			mounts: func(e *env) []Mount {
				return []Mount{{HostPath: filepath.Join(e.root, "p"), MountPath: "/", FollowSymlinks: true}}
			},
			want:  map[string]string{"": "dir", "dirlink": "dir", "dirlink/f.txt": "f", "filelink": "o", "real": "dir", "real/f.txt": "f"},
			skips: map[string]string{"p/escape": SkipOutside, "p/escape2": SkipOutside, "p/dangling": SkipDangling},
		},
		{
			name: "later mounts overwrite earlier entries, directories merge",
			setup: func(e *env) {
				e.write("one/shared/a", "one-a")
				e.write("one/shared/b", "one-b")
				e.write("one/clash", "file in one")
				e.write("two/shared/b", "two-b")
				e.write("two/shared/c", "two-c")
				e.write("two/clash/inside", "dir in two")
			},
			mounts: func(e *env) []Mount {
				return []Mount{
					{HostPath: filepath.Join(e.root, "one"), MountPath: "/"},
					{HostPath: filepath.Join(e.root, "two"), MountPath: "/"},
				}
			},
			want: map[string]string{"": "dir", "clash": "dir", "clash/inside": "dir in two", "shared": "dir",
				"shared/a": "one-a", "shared/b": "two-b", "shared/c": "two-c"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			tt.setup(e)
			got, rep := e.load(tt.mounts(e)...)
			require.Equal(t, tt.want, got)
			wantSkips := map[string]string{}
			for rel, reason := range tt.skips {
				wantSkips[filepath.Join(e.root, rel)] = reason
			}
			require.Equal(t, wantSkips, skipsOf(rep))
			require.Positive(t, rep.TotalMs)
		})
	}
}

func TestImportModesTimesAndIdentity(t *testing.T) {
	e := newEnv(t)
	e.write("p/x.sh", "#!/bin/sh\n")
	require.NoError(t, os.Chmod(filepath.Join(e.root, "p/x.sh"), 0o751))
	mt := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	require.NoError(t, os.Chtimes(filepath.Join(e.root, "p/x.sh"), mt, mt))
	snap, rep, err := e.im.Import(ctx, e.repo, []Mount{{HostPath: filepath.Join(e.root, "p")}}, nil)
	require.NoError(t, err)
	n, ok, _ := snap.Tree.Lookup("p/x.sh")
	require.True(t, ok)
	want := os.FileMode(0o751)
	if runtime.GOOS == "windows" {
		want = 0o666 // what Go makes of a file that is not read-only
	}
	require.Equal(t, want, n.Mode)
	require.Equal(t, mt, n.UpdatedAt())
	require.Equal(t, vfs.EncodingUTF8, n.Encoding)
	require.Equal(t, uint64(1), n.Version)
	require.Equal(t, snap.ID, rep.Snapshot)
	require.Equal(t, []MountReport{{HostPath: filepath.Join(e.root, "p"), MountPath: "/p", Files: 1, Bytes: 10}}, rep.Mounts)
}

func TestImportRejects(t *testing.T) {
	e := newEnv(t)
	e.write("p/a", "a")
	links := canSymlink(t)
	if links {
		e.symlink(e.outside, "evil-link")
		e.symlink("p", "good-link")
	}
	tests := []struct {
		name  string
		mount Mount
		code  vfs.Code
		msg   string
	}{
		{"outside every root", Mount{HostPath: e.dir}, vfs.CodeForbidden, "outside the allowed roots"},
		{"the root's parent through the root", Mount{HostPath: e.root + string(filepath.Separator) + ".."}, vfs.CodeInvalid, `".."`},
		{"prefix trick", Mount{HostPath: e.outside}, vfs.CodeForbidden, "outside the allowed roots"},
		{"dot-dot", Mount{HostPath: e.root + "/p/../../root_evil"}, vfs.CodeInvalid, `".."`},
		{"dot-dot inside", Mount{HostPath: e.root + "/p/.."}, vfs.CodeInvalid, `".."`},
		{"relative", Mount{HostPath: "p"}, vfs.CodeInvalid, "absolute"},
		{"missing", Mount{HostPath: e.root + "/nope"}, vfs.CodeNotFound, "does not exist"},
		{"bad glob", Mount{HostPath: e.root + "/p", Include: []string{"[unclosed"}}, vfs.CodeInvalidPattern, "include_glob"},
		{"climbing glob", Mount{HostPath: e.root + "/p", Exclude: []string{"../**"}}, vfs.CodeInvalidPattern, `".."`},
		{"absolute glob", Mount{HostPath: e.root + "/p", Include: []string{"/etc/**"}}, vfs.CodeInvalidPattern, "leading /"},
		{"bad mount path", Mount{HostPath: e.root + "/p", MountPath: "../up"}, vfs.CodeInvalidPath, "mount_path"},
		{"negative cap", Mount{HostPath: e.root + "/p", MaxBytes: -1}, vfs.CodeInvalid, "max_bytes"},
	}
	if links {
		tests = append(tests, struct {
			name  string
			mount Mount
			code  vfs.Code
			msg   string
		}{"symlink out of the root", Mount{HostPath: e.root + "/evil-link"}, vfs.CodeForbidden, "outside"})
	}
	before, err := e.repo.List(ctx)
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := e.im.Import(ctx, e.repo, []Mount{tt.mount}, nil)
			require.Error(t, err)
			require.Equal(t, tt.code, vfs.CodeOf(err), "%v", err)
			require.Contains(t, err.Error(), tt.msg)
		})
	}
	mounts := 0
	if links {
		_, _, err = e.im.Import(ctx, e.repo, []Mount{{HostPath: e.root + "/good-link"}}, nil)
		require.NoError(t, err, "a host path through a symlink that stays inside the root is fine")
		mounts++
	}

	// Invalid patterns are refused before any I/O: even on a missing path.
	_, _, err = e.im.Import(ctx, e.repo, []Mount{{HostPath: "/no/such/place", Include: []string{"[x"}}}, nil)
	require.Equal(t, vfs.CodeInvalidPattern, vfs.CodeOf(err))

	after, err := e.repo.List(ctx)
	require.NoError(t, err)
	require.Len(t, after, len(before)+mounts, "only the successful import recorded a snapshot")
}

func TestMaxBytesFailsWholeImport(t *testing.T) {
	e := newEnv(t)
	e.write("p/a", strings.Repeat("a", 600))
	e.write("p/b", strings.Repeat("b", 600))
	e.write("q/c", "c")
	_, _, err := e.im.Import(ctx, e.repo, []Mount{
		{HostPath: e.root + "/q"},
		{HostPath: e.root + "/p", MaxBytes: 1000},
	}, nil)
	require.Equal(t, vfs.CodeTooLarge, vfs.CodeOf(err))
	require.Contains(t, err.Error(), "holds 1200 bytes")
	require.Contains(t, err.Error(), "cap of 1000")
	blobs := 0
	require.NoError(t, e.store.List(ctx, snapshot.Blobs, func(vfs.Hash, int64) error { blobs++; return nil }))
	require.Equal(t, 1, blobs, "nothing but the empty blob was stored")
	snaps, err := e.repo.List(ctx)
	require.NoError(t, err)
	require.Empty(t, snaps)

	_, rep, err := e.im.Import(ctx, e.repo, []Mount{{HostPath: e.root + "/p", MaxBytes: 1200}}, nil)
	require.NoError(t, err, "a cap equal to the total is fine")
	require.Equal(t, int64(1200), rep.Bytes)
}

func TestASCIIOnly(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.ASCIIOnly = true })
	e.write("p/plain.txt", "p")
	e.write("p/naïve.txt", "n")
	got, rep := e.load(Mount{HostPath: e.root + "/p", MountPath: "/"})
	require.Equal(t, map[string]string{"": "dir", "plain.txt": "p"}, got)
	require.Equal(t, map[string]string{e.host("p/naïve.txt"): SkipNotASCII}, skipsOf(rep))
}

func TestSymlinkLoops(t *testing.T) {
	e := newEnv(t)
	e.write("p/f", "f")
	e.symlink("b", "p/a")
	e.symlink("a", "p/b")
	e.symlink("..", "p/up")
	e.symlink(".", "p/self")

	got, _ := e.load(Mount{HostPath: e.root + "/p", MountPath: "/"})
	require.Equal(t, map[string]string{"": "dir", "a": "-> b", "b": "-> a", "f": "f", "self": "-> .", "up": "-> .."}, got,
		"not following, loops are just symlinks")

	got, rep := e.load(Mount{HostPath: e.root + "/p", MountPath: "/", FollowSymlinks: true})
	require.Equal(t, map[string]string{"": "dir", "f": "f", "up": "dir"}, got,
		"following, a cycle is cut where it closes: up/p is the mount itself")
	require.Equal(t, map[string]string{
		e.host("p/a"): SkipLoop, e.host("p/b"): SkipLoop, e.host("p/self"): SkipLoop, e.host("p/up/p"): SkipLoop,
	}, skipsOf(rep))
}

// TestDirectorySwappedForSymlinkDuringScan replaces a directory with a
// symlink to outside the root between the moment the scan lists it and the
// moment it opens it: the open refuses the symlink.
func TestDirectorySwappedForSymlinkDuringScan(t *testing.T) {
	e := newEnv(t)
	e.write("p/victim/ok", "ok")
	e.write("p/keep", "k")
	e.symlink(e.outside, "probe") // skips where symlinks cannot be made
	victim := e.host("p/victim")
	testHookBeforeOpenDir = func(hostPath string) {
		if hostPath == victim {
			require.NoError(t, os.Rename(victim, victim+".moved"))
			require.NoError(t, os.Symlink(e.outside, victim))
		}
	}
	defer func() { testHookBeforeOpenDir = nil }()
	got, rep := e.load(Mount{HostPath: e.root + "/p", MountPath: "/"})
	require.Equal(t, map[string]string{"": "dir", "keep": "k"}, got)
	require.Equal(t, map[string]string{victim: SkipChanged}, skipsOf(rep))
	requireNotStored(t, e, "TOP SECRET")
}

// TestFileSwappedForSymlinkBeforeRead does the same to a file between the
// scan and the read.
func TestFileSwappedForSymlinkBeforeRead(t *testing.T) {
	e := newEnv(t)
	e.write("p/victim", "innocent")
	e.symlink(e.outside, "probe") // skips where symlinks cannot be made
	victim := e.host("p/victim")
	testHookBeforeOpenFile = func(hostPath string) {
		if hostPath == victim {
			require.NoError(t, os.Remove(victim))
			require.NoError(t, os.Symlink(e.outside+"/secret", victim))
		}
	}
	defer func() { testHookBeforeOpenFile = nil }()
	got, rep := e.load(Mount{HostPath: e.root + "/p", MountPath: "/"})
	require.Equal(t, map[string]string{"": "dir"}, got)
	require.Equal(t, map[string]string{victim: SkipChanged}, skipsOf(rep))
	requireNotStored(t, e, "TOP SECRET")
}

// TestRaceSwappingDirectories flips a directory between a real one and a
// symlink to outside the root while imports run: whatever each import
// sees, nothing from outside is ever read.
func TestRaceSwappingDirectories(t *testing.T) {
	e := newEnv(t)
	for i := range 50 {
		e.write(filepath.Join("p/flip", "f"+string(rune('a'+i%26))+string(rune('a'+i/26))), "inside")
	}
	e.symlink(e.outside, "probe") // skips where symlinks cannot be made
	flip := e.host("p/flip")
	require.NoError(t, os.Rename(flip, flip+".real"))
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			os.Remove(flip)
			if i%2 == 0 {
				os.Symlink(e.outside, flip)
			} else {
				os.Symlink(flip+".real", flip)
			}
		}
	}()
	for range 30 {
		for _, follow := range []bool{false, true} {
			_, _, err := e.im.Import(ctx, e.repo, []Mount{{HostPath: e.root + "/p", FollowSymlinks: follow}}, nil)
			require.NoError(t, err)
		}
	}
	close(stop)
	<-done
	requireNotStored(t, e, "TOP SECRET")
}

func TestHostChangesDoNotLeakIntoSession(t *testing.T) {
	e := newEnv(t)
	e.write("p/f", "as imported")
	s, _, err := e.im.Stage(ctx, e.repo, snapshot.SessionOptions{}, []Mount{{HostPath: e.root + "/p", MountPath: "/"}}, nil)
	require.NoError(t, err)
	e.write("p/f", "changed on the host")
	e.write("p/new", "new on the host")
	b, _, err := s.ReadFile(ctx, vfs.MustPath("f"))
	require.NoError(t, err)
	require.Equal(t, "as imported", string(b))
	_, err = s.Stat(ctx, vfs.MustPath("new"))
	require.ErrorIs(t, err, vfs.ErrNotFound)

	// Restaging (what a session reset does) imports the host again.
	_, err = s.WriteFile(ctx, vfs.MustPath("agent"), strings.NewReader("work"), vfs.WriteOptions{})
	require.NoError(t, err)
	rep, err := e.im.Restage(ctx, e.repo, s, []Mount{{HostPath: e.root + "/p", MountPath: "/"}}, nil)
	require.NoError(t, err)
	require.Equal(t, int64(2), rep.Files)
	b, _, err = s.ReadFile(ctx, vfs.MustPath("f"))
	require.NoError(t, err)
	require.Equal(t, "changed on the host", string(b))
	_, err = s.Stat(ctx, vfs.MustPath("agent"))
	require.ErrorIs(t, err, vfs.ErrNotFound)
	require.NoError(t, s.Reset(ctx))
	b, _, err = s.ReadFile(ctx, vfs.MustPath("new"))
	require.NoError(t, err)
	require.Equal(t, "new on the host", string(b), "Reset returns to the latest import")
}

func TestCacheMakesReimportAStatWalk(t *testing.T) {
	e := newEnv(t)
	for i := range 20 {
		e.write(filepath.Join("p", "f"+string(rune('a'+i))), strings.Repeat("x", i))
	}
	m := []Mount{{HostPath: e.root + "/p"}}
	_, rep, err := e.im.Import(ctx, e.repo, m, nil)
	require.NoError(t, err)
	require.Zero(t, rep.Cached)
	_, rep, err = e.im.Import(ctx, e.repo, m, nil)
	require.NoError(t, err)
	require.Equal(t, rep.Files, rep.Cached, "an unchanged tree is not read again")

	// A changed file is read again, even with its size and mtime restored.
	p := e.host("p/fc")
	fi, err := os.Stat(p)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, []byte("yy"), 0o644))
	require.NoError(t, os.Chtimes(p, fi.ModTime(), fi.ModTime()))
	snap, rep, err := e.im.Import(ctx, e.repo, m, nil)
	require.NoError(t, err)
	require.Equal(t, rep.Files-1, rep.Cached)
	require.Equal(t, "yy", e.describe(snap.Tree)["p/fc"])

	// The cache survives the importer; a blob collected since is re-read.
	require.NoError(t, e.im.Close())
	im2, err := New(Options{Roots: []string{e.root}, CacheFile: filepath.Join(e.dir, "import.cache")})
	require.NoError(t, err)
	defer im2.Close()
	_, rep, err = im2.Import(ctx, e.repo, m, nil)
	require.NoError(t, err)
	require.Equal(t, rep.Files, rep.Cached)
	require.NoError(t, e.store.Delete(ctx, snapshot.Blobs, vfs.HashOf([]byte("xxx"))))
	snap, rep, err = im2.Import(ctx, e.repo, m, nil)
	require.NoError(t, err)
	require.Equal(t, rep.Files-1, rep.Cached)
	require.Equal(t, "xxx", e.describe(snap.Tree)["p/fd"])
}

func TestProgress(t *testing.T) {
	e := newEnv(t)
	for i := range 30 {
		e.write(filepath.Join("p", "f"+string(rune('A'+i))), "12345")
	}
	var got []Progress
	_, _, err := e.im.Import(ctx, e.repo, []Mount{{HostPath: e.root + "/p"}}, func(p Progress) { got = append(got, p) })
	require.NoError(t, err)
	require.NotEmpty(t, got)
	last := got[len(got)-1]
	require.Equal(t, Progress{Phase: "import", Files: 30, FilesTotal: 30, Bytes: 150, BytesTotal: 150}, last)
	phases := map[string]bool{}
	for _, p := range got {
		phases[p.Phase] = true
	}
	require.True(t, phases["scan"] && phases["import"])
}

// TestProgressInsideALargeFile checks that the byte count moves while a
// large file is copied, not only once it is done (a 3 GiB file used to
// show nothing for its whole copy).
func TestProgressInsideALargeFile(t *testing.T) {
	e := newEnv(t)
	const size = 8 << 20
	e.write("big/f", strings.Repeat("x", size))
	saved := progressEvery
	progressEvery = 0 // every read reports
	t.Cleanup(func() { progressEvery = saved })
	var got []Progress
	_, _, err := e.im.Import(ctx, e.repo, []Mount{{HostPath: e.root + "/big"}}, func(p Progress) { got = append(got, p) })
	require.NoError(t, err)
	var inside int
	for _, p := range got {
		if p.Phase == "import" && p.Files == 0 && p.Bytes > 0 && p.Bytes < size {
			inside++
		}
		require.LessOrEqual(t, p.Bytes, int64(size), "no byte is counted twice")
	}
	require.Greater(t, inside, 1, "the byte count moves while the file is copied: %v", got)
	require.Equal(t, Progress{Phase: "import", Files: 1, FilesTotal: 1, Bytes: size, BytesTotal: size}, got[len(got)-1])
}

func TestRootConfiguredThroughSymlink(t *testing.T) {
	if !canSymlink(t) {
		t.Skip("this system cannot create symlinks")
	}
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "data/root/p"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "data/root/p/f"), []byte("f"), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(dir, "data"), filepath.Join(dir, "srv")))
	repo, err := snapshot.OpenRepo(ctx, snapshot.NewMemory(), filepath.Join(dir, "sessions"), snapshot.RepoOptions{})
	require.NoError(t, err)
	defer repo.Close()
	im, err := New(Options{Roots: []string{filepath.Join(dir, "srv/root")}})
	require.NoError(t, err)
	defer im.Close()
	for _, hp := range []string{filepath.Join(dir, "srv/root/p"), filepath.Join(dir, "data/root/p")} {
		snap, _, err := im.Import(ctx, repo, []Mount{{HostPath: hp}}, nil)
		require.NoError(t, err, "the root may be named as configured or by its real path")
		_, ok, _ := snap.Tree.Lookup("p/f")
		require.True(t, ok)
	}
	_, _, err = im.Import(ctx, repo, []Mount{{HostPath: filepath.Join(dir, "srv")}}, nil)
	require.Equal(t, vfs.CodeForbidden, vfs.CodeOf(err))
}

// TestDirectorySwappedForAnotherDuringScan swaps a directory for another
// one (no symlink: this runs everywhere) between the moment the scan lists
// it and the moment it opens it: the open notices it is not the directory
// listed, and neither is imported.
func TestDirectorySwappedForAnotherDuringScan(t *testing.T) {
	e := newEnv(t)
	e.write("p/victim/ok", "ok")
	e.write("p/keep", "k")
	e.write("elsewhere/private", "NOT IN THE MOUNT")
	victim := e.host("p/victim")
	testHookBeforeOpenDir = func(hostPath string) {
		if hostPath == victim {
			require.NoError(t, os.Rename(victim, victim+".moved"))
			require.NoError(t, os.Rename(e.host("elsewhere"), victim))
		}
	}
	defer func() { testHookBeforeOpenDir = nil }()
	got, rep := e.load(Mount{HostPath: e.host("p"), MountPath: "/"})
	require.Equal(t, map[string]string{"": "dir", "keep": "k"}, got)
	require.Equal(t, map[string]string{victim: SkipChanged}, skipsOf(rep))
	requireNotStored(t, e, "NOT IN THE MOUNT")
}

// TestFileReplacedBeforeRead replaces a file with another between the
// scan and the read: the read notices it is not the file scanned.
func TestFileReplacedBeforeRead(t *testing.T) {
	e := newEnv(t)
	e.write("p/victim", "innocent")
	e.write("p/keep", "k")
	victim := e.host("p/victim")
	testHookBeforeOpenFile = func(hostPath string) {
		if hostPath == victim {
			require.NoError(t, os.Rename(victim, victim+".moved"))
			require.NoError(t, os.WriteFile(victim, []byte("SWAPPED IN"), 0o644))
		}
	}
	defer func() { testHookBeforeOpenFile = nil }()
	got, rep := e.load(Mount{HostPath: e.host("p"), MountPath: "/"})
	require.Equal(t, map[string]string{"": "dir", "keep": "k"}, got)
	require.Equal(t, map[string]string{victim: SkipChanged}, skipsOf(rep))
	requireNotStored(t, e, "SWAPPED IN")
}
