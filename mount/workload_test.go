//go:build linux

package mount_test

import (
	"crypto/sha256"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/mount"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// goSrcDirs are the parts of the Go source tree the tar workload extracts:
// about 1,300 files and 14 MB, with testdata of every kind.
var goSrcDirs = []string{"net", "go", "encoding", "archive", "compress"}

// listing describes a tree for comparison: path, type and permission bits
// of every entry (diff -r compares content, not modes).
func listing(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		mode := fi.Mode()
		if mode.IsDir() {
			lines = append(lines, rel+" "+mode.String())
		} else {
			lines = append(lines, rel+" "+mode.String()+" "+strconv.FormatInt(fi.Size(), 10))
		}
		return nil
	}))
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestWorkloadTarExtract extracts a tarball of part of the Go source tree
// (plus symlinks, an empty directory, odd modes) into the mount and
// compares the result with the original: diff -r, modes, and the session's
// own view.
func TestWorkloadTarExtract(t *testing.T) {
	requireTool(t, "tar")
	requireTool(t, "diff")
	goroot := strings.TrimSpace(run(t, "", nil, "go", "env", "GOROOT"))

	// The original: the Go dirs, plus a directory of special cases.
	orig := t.TempDir()
	extra := filepath.Join(orig, "extra")
	require.NoError(t, os.MkdirAll(filepath.Join(extra, "empty"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(extra, "private"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(extra, "run.sh"), []byte("#!/bin/sh\necho ok\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(extra, "private/secret"), []byte("s3cret\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(extra, "zero"), nil, 0o644))
	require.NoError(t, os.Symlink("run.sh", filepath.Join(extra, "link")))
	require.NoError(t, os.Symlink("../net/http", filepath.Join(extra, "dirlink")))
	require.NoError(t, os.Symlink("does/not/exist", filepath.Join(extra, "dangling")))
	tarball := filepath.Join(t.TempDir(), "src.tar")
	args := []string{"-cf", tarball, "-C", filepath.Join(goroot, "src")}
	args = append(args, goSrcDirs...)
	args = append(args, "-C", orig, "extra")
	run(t, "", nil, "tar", args...)
	for _, d := range goSrcDirs {
		require.NoError(t, os.Symlink(filepath.Join(goroot, "src", d), filepath.Join(orig, d)))
	}

	e, m := mounted(t, nil, mount.Options{})
	dir := m.Dir()
	run(t, dir, nil, "tar", "-xpf", tarball)

	for _, d := range append(goSrcDirs, "extra") {
		src, err := filepath.EvalSymlinks(filepath.Join(orig, d))
		require.NoError(t, err)
		run(t, "", nil, "diff", "-r", "--no-dereference", src, filepath.Join(dir, d))
		require.Equal(t, listing(t, src), listing(t, filepath.Join(dir, d)), "%s: modes and sizes", d)
	}

	// The session holds the same files.
	info := e.S.Info()
	var files int
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files++
		}
		return err
	}))
	require.Equal(t, files, int(info.Files))
	want, err := os.ReadFile(filepath.Join(goroot, "src/net/http/server.go"))
	require.NoError(t, err)
	require.Equal(t, string(want), e.Read("net/http/server.go"))
	n, err := e.S.Stat(ctx, vfs.MustPath("extra/run.sh"))
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o755), n.Mode)
	target, err := e.S.Readlink(ctx, vfs.MustPath("extra/dirlink"))
	require.NoError(t, err)
	require.Equal(t, "../net/http", target)

	// And survives a snapshot and a fresh mount of a fork of it.
	snap, err := e.Repo.Snapshot(ctx, e.S, "extracted")
	require.NoError(t, err)
	fork, err := e.Repo.NewSession(ctx, snapshot.SessionOptions{Base: snap.ID})
	require.NoError(t, err)
	dir2 := t.TempDir()
	m2, err := mount.New(fork, dir2, mount.Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, m2.Unmount()) }()
	run(t, "", nil, "diff", "-r", "--no-dereference", dir, dir2)
}

// TestWorkloadGit runs git in the mount: init, add, commit, status, log;
// then a tool edit shows up in git status and diff, and git checkout
// undoes it for the session too.
func TestWorkloadGit(t *testing.T) {
	requireTool(t, "git")
	files := map[string]string{
		"README.md":        "# demo\n",
		"src/main.go":      "package main\n\nfunc main() {}\n",
		"src/lib/lib.go":   "package lib\n",
		"docs/guide.txt":   strings.Repeat("guide line\n", 200),
		"scripts/build.sh": "#!/bin/sh\nexit 0\n",
	}
	e, m := mounted(t, files, mount.Options{})
	dir := m.Dir()
	home := t.TempDir()
	env := []string{"HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_AUTHOR_DATE=2026-01-02T03:04:05Z",
		"GIT_COMMITTER_DATE=2026-01-02T03:04:05Z"}
	git := func(args ...string) string {
		t.Helper()
		return run(t, dir, env, "git", args...)
	}
	require.NoError(t, os.Chmod(filepath.Join(dir, "scripts/build.sh"), 0o755))

	git("init", "-q", "-b", "main")
	git("add", "-A")
	git("commit", "-q", "-m", "initial")
	require.Empty(t, git("status", "--porcelain"))
	log := strings.Split(strings.TrimSpace(git("log", "--oneline")), "\n")
	require.Len(t, log, 1)
	require.Contains(t, log[0], "initial")
	require.Equal(t, "100755", strings.Fields(git("ls-files", "-s", "scripts/build.sh"))[0])
	git("fsck", "--strict", "--no-progress")

	// A tool edit is seen by git's stat cache at once.
	callOK(t, e, "edit_file", map[string]any{"path": "src/main.go", "old_string": "func main() {}", "new_string": "func main() { println(1) }"})
	require.Equal(t, " M src/main.go\n", git("status", "--porcelain"))
	require.Contains(t, git("diff"), "+func main() { println(1) }")
	git("commit", "-q", "-am", "edit")
	callOK(t, e, "write_file", map[string]any{"path": "README.md", "inline_text": "# changed\n"})
	git("checkout", "--", "README.md")
	require.Equal(t, "# demo\n", e.Read("README.md"))
	require.Empty(t, git("status", "--porcelain"))
	require.Len(t, strings.Split(strings.TrimSpace(git("log", "--oneline")), "\n"), 2)

	// Objects written through the mount are in the session.
	head := strings.TrimSpace(git("rev-parse", "HEAD"))
	_, err := e.S.Stat(ctx, vfs.MustPath(".git/objects/"+head[:2]+"/"+head[2:]))
	require.NoError(t, err)
}

// TestWorkloadGoBuild writes a small module (no dependencies) into the
// mount, builds it there and runs the binary from the mount.
func TestWorkloadGoBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the Go runtime from a cold cache (~6s)")
	}
	e, m := mounted(t, map[string]string{
		"go.mod": "module example.com/hello\n\ngo 1.26\n",
		"main.go": "package main\n\nimport \"example.com/hello/greet\"\n\n" +
			"func main() { println(greet.Hello(\"mount\")) }\n",
	}, mount.Options{})
	dir := m.Dir()
	// Half the module is written through the mount, half by a tool.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "greet"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "greet/greet.go"),
		[]byte("package greet\n\nfunc Hello(who string) string { return \"hello, \" + who }\n"), 0o644))
	callOK(t, e, "write_file", map[string]any{"path": "greet/doc.go",
		"inline_text": "// Package greet greets.\npackage greet\n"})

	tmp := t.TempDir()
	env := []string{"GOCACHE=" + filepath.Join(tmp, "cache"), "GOPATH=" + filepath.Join(tmp, "gopath"),
		"GOFLAGS=-mod=mod", "GOTOOLCHAIN=local", "GOPROXY=off", "CGO_ENABLED=0", "GOWORK=off",
		"GOTMPDIR=" + tmp}
	run(t, dir, env, "go", "build", "-o", "bin/hello", ".")
	out := run(t, dir, nil, filepath.Join(dir, "bin/hello"))
	require.Equal(t, "hello, mount\n", out)

	n, err := e.S.Stat(ctx, vfs.MustPath("bin/hello"))
	require.NoError(t, err)
	require.NotZero(t, n.Mode&0o100, "the binary is executable in the session")
	bin, err := os.ReadFile(filepath.Join(dir, "bin/hello"))
	require.NoError(t, err)
	require.Equal(t, sha256.Sum256(bin), sha256.Sum256([]byte(e.Read("bin/hello"))))
}

// TestWorkloadFio runs fio's random read/write workload with crc32c
// verification on the mount.
func TestWorkloadFio(t *testing.T) {
	fio := requireTool(t, "fio")
	e, m := mounted(t, nil, mount.Options{})
	dir := m.Dir()
	size := "32M"
	if raceEnabled || runtime.NumCPU() < 2 {
		size = "16M"
	}
	common := []string{"--directory=" + dir, "--size=" + size, "--bs=4k", "--direct=0", "--ioengine=psync",
		"--verify=crc32c", "--verify_fatal=1", "--fallocate=none", "--randrepeat=0", "--group_reporting",
		"--verify_state_save=0"}
	jobs := [][]string{
		// Random writes, then every block read back and checked.
		{"--name=randwrite", "--rw=randwrite", "--do_verify=1"},
		// Mixed random reads and writes on two files, verified the same way.
		{"--name=randrw", "--rw=randrw", "--rwmixread=50", "--numjobs=2", "--do_verify=1"},
		// A separate verify-only pass over what randwrite left.
		{"--name=randwrite", "--rw=randread", "--verify_only", "--verify=crc32c", "--verify_fatal=1"},
	}
	for _, job := range jobs {
		args := append(append([]string{}, common...), job...)
		out, err := runErr(t, dir, nil, fio, args...)
		require.NoError(t, err, "fio %s:\n%s", strings.Join(args, " "), out)
		require.NotContains(t, out, "verify: bad", out)
	}

	// The session has what fio left, byte for byte.
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.NotEmpty(t, entries)
	for _, de := range entries {
		f, err := os.Open(filepath.Join(dir, de.Name()))
		require.NoError(t, err)
		h := sha256.New()
		_, err = io.Copy(h, f)
		require.NoError(t, err)
		f.Close()
		data, _, err := e.S.ReadFile(ctx, vfs.MustPath(de.Name()))
		require.NoError(t, err)
		require.Equal(t, h.Sum(nil), sha256Sum(data), de.Name())
	}
}

func sha256Sum(b []byte) []byte { s := sha256.Sum256(b); return s[:] }
