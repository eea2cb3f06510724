//go:build linux

package mount_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/tools/toolstest"
	"github.com/vfsd/vfsd/vfs"
)

// callOK runs a tool and requires it to succeed.
func callOK(t *testing.T, e *toolstest.Env, tool string, params any) map[string]any {
	t.Helper()
	r := e.Call(tool, params)
	require.True(t, r.OK(), "%s %v: %s", tool, params, r.JSON())
	return toolstest.Receipt(t, r)
}

// inoOf returns the inode number of path (not following a final symlink).
func inoOf(t *testing.T, path string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	require.NoError(t, syscall.Lstat(path, &st))
	return st.Ino
}

// treeState describes a directory tree, one line per entry in path order:
// kind, permission bits, size and content (files) or target (symlinks).
// Directory sizes and times are left out: they are the filesystem's own.
type treeState map[string]string

func (s treeState) String() string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + " " + s[k] + "\n")
	}
	return b.String()
}

func describe(kind string, mode fs.FileMode, size int64, content string) string {
	if kind == "dir" {
		return "dir " + mode.Perm().String()
	}
	if len(content) > 200 {
		content = fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(content)))
	}
	return fmt.Sprintf("%s %s %d %q", kind, mode.Perm(), size, content)
}

// mountState walks a directory through the filesystem (the mount).
func mountState(t *testing.T, dir string) treeState {
	t.Helper()
	st := treeState{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.IsDir():
			st[rel] = describe("dir", fi.Mode(), 0, "")
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			st[rel] = describe("symlink", 0o777, int64(len(target)), target)
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			require.Equal(t, fi.Size(), int64(len(data)), "%s: stat size and content length differ", rel)
			st[rel] = describe("file", fi.Mode(), fi.Size(), string(data))
		}
		return nil
	}))
	return st
}

// sessionState describes the session's tree like mountState.
func sessionState(t *testing.T, s *vfs.Session) treeState {
	t.Helper()
	st := treeState{}
	require.NoError(t, s.Walk(context.Background(), vfs.Root, func(p vfs.Path, n vfs.Node) error {
		switch {
		case p.IsRoot():
		case n.IsDir():
			st[string(p)] = describe("dir", n.Mode, 0, "")
		case n.IsSymlink():
			st[string(p)] = describe("symlink", 0o777, int64(len(n.Target)), n.Target)
		default:
			data, _, err := s.ReadFile(context.Background(), p)
			if err != nil {
				return err
			}
			st[string(p)] = describe("file", n.Mode, int64(len(data)), string(data))
		}
		return nil
	}))
	return st
}

// requireSameTree requires the mount to show exactly the session's tree.
func requireSameTree(t *testing.T, s *vfs.Session, dir string, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, sessionState(t, s).String(), mountState(t, dir).String(), msgAndArgs...)
}

// run runs a command in dir with extra environment, failing the test (with
// its output) unless it succeeds; it returns the output.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	out, err := runErr(t, dir, env, name, args...)
	require.NoError(t, err, "%s %s:\n%s", name, strings.Join(args, " "), out)
	return out
}

// runErr runs a command, in dir when not empty, and returns its output.
//
// The command is started through /bin/sh, which changes to dir and execs
// it: the child of a fork must not touch the mount before it execs. Go
// forks with vfork, and a child that enters the mount (a working
// directory there, or a program there) waits for a FUSE request this very
// process must answer, while the runtime cannot always schedule the
// server: the test deadlocks (golang/go#21014; the same holds for any
// program that serves a FUSE mount and spawns processes into it).
func runErr(t *testing.T, dir string, env []string, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if dir == "" {
		dir = "."
	}
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", `cd "$0" && exec "$@"`, dir, name}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// requireTool skips unless a program is installed.
func requireTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed", name)
	}
	return p
}
