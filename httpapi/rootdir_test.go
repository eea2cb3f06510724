package httpapi_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
	"github.com/vfsd/vfsd/daemon"
	"github.com/vfsd/vfsd/internal/mountinfo"
)

// rootPath reads a weakincentives session's root_path from its state.
func rootPath(t *testing.T, c *client.Client, id string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	raw, err := c.ContractState(ctx, id)
	require.NoError(t, err)
	var st struct {
		RootPath string `json:"root_path"`
	}
	require.NoError(t, json.Unmarshal(raw, &st), "%s", raw)
	require.True(t, filepath.IsAbs(st.RootPath), "root_path %q", st.RootPath)
	return st.RootPath
}

// mountedFUSE reports whether a vfsd FUSE mount is at dir.
func mountedFUSE(t *testing.T, dir string) bool {
	ms, err := mountinfo.Read()
	require.NoError(t, err)
	for _, m := range ms {
		if m.MountPoint == dir && strings.HasPrefix(m.FSType, "fuse") {
			return true
		}
	}
	return false
}

// sh runs a shell command in a subprocess (a test never reads or writes
// its own FUSE mount from its own process) and returns its output.
func sh(t *testing.T, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "sh", "-c", script).CombinedOutput()
	require.NoError(t, err, "%s: %s", script, out)
	return string(out)
}

// TestRootDirMount: a weakincentives session's root_path is a FUSE mount
// of the session, made at creation under RootDirParent: a tool's write is
// a file there, a program's write there is a file of the session; closing
// the session unmounts it and removes the directory.
func TestRootDirMount(t *testing.T) {
	if !fuseAvailable() {
		t.Skip("needs /dev/fuse and root")
	}
	cfg := newConfig(t)
	s := start(t, cfg)
	ctx := context.Background()
	_, err := s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "wi", Contract: "weakincentives"})
	require.NoError(t, err)
	root := rootPath(t, s.c, "wi")
	require.True(t, strings.HasPrefix(root, cfg.RootDirParent+string(filepath.Separator)+"vfsd-weakincentives-wi-"), root)
	require.True(t, mountedFUSE(t, root), "root_path %s is a mount of the session", root)
	fi, err := os.Stat(filepath.Dir(root))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "the session's private directory")
	view, err := s.c.Session(ctx, "wi")
	require.NoError(t, err)
	require.Len(t, view.FuseMounts, 1)
	require.Equal(t, root, view.FuseMounts[0].Dir)
	require.True(t, view.FuseMounts[0].DefaultPermissions)

	r, err := s.c.CallTool(ctx, "wi", "write_file", json.RawMessage(`{"path":{"segments":["src","a.py"]},"content":"print(1)\n"}`))
	require.NoError(t, err)
	require.False(t, r.IsError, "%s", r.JSON)
	require.Equal(t, "print(1)\n", sh(t, "cat "+filepath.Join(root, "src", "a.py")))
	sh(t, "printf 'from a program' > "+filepath.Join(root, "prog.txt"))
	r, err = s.c.CallTool(ctx, "wi", "read_file", json.RawMessage(`{"path":"prog.txt"}`))
	require.NoError(t, err)
	require.Contains(t, string(r.JSON), `"content":"from a program"`)

	require.NoError(t, s.c.CloseSession(ctx, "wi"))
	require.False(t, mountedFUSE(t, root), "closing unmounts root_path")
	require.NoDirExists(t, filepath.Dir(root), "closing removes the session's directory")
}

// TestRootDirAtRestart: a restarted daemon mounts root_path again; a
// directory that vanished meanwhile (a reboot cleaning the temporary
// directory) is made anew when the state is read.
func TestRootDirAtRestart(t *testing.T) {
	if !fuseAvailable() {
		t.Skip("needs /dev/fuse and root")
	}
	cfg := newConfig(t)
	s := start(t, cfg)
	ctx := context.Background()
	_, err := s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "wi", Contract: "weakincentives"})
	require.NoError(t, err)
	call(t, s.c, "wi", "write_file", `{"path":"a.txt","content":"a"}`, "ok")
	root := rootPath(t, s.c, "wi")
	s.stop()
	require.False(t, mountedFUSE(t, root), "a stopped daemon leaves no mount")

	s = start(t, cfg)
	require.Equal(t, root, rootPath(t, s.c, "wi"), "the same directory, mounted again")
	require.True(t, mountedFUSE(t, root))
	require.Equal(t, "a", sh(t, "cat "+filepath.Join(root, "a.txt")))
	s.stop()

	require.NoError(t, os.RemoveAll(filepath.Dir(root)))
	s = start(t, cfg)
	again := rootPath(t, s.c, "wi")
	require.NotEqual(t, root, again, "a new directory")
	require.True(t, mountedFUSE(t, again))
	require.Equal(t, "a", sh(t, "cat "+filepath.Join(again, "a.txt")))
	require.NoError(t, s.c.CloseSession(ctx, "wi"))
	require.NoDirExists(t, filepath.Dir(again))
}

// TestRootDirCopy: with RootDirs "copy" (the fallback where the daemon
// cannot mount), root_path is a copy of the session, written out again
// when the state is read after the session changed; a program's change to
// the copy does not reach the session; closing removes it.
func TestRootDirCopy(t *testing.T) {
	cfg := newConfig(t)
	cfg.RootDirs = daemon.RootDirsCopy
	s := start(t, cfg)
	ctx := context.Background()
	_, err := s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "wi", Contract: "weakincentives"})
	require.NoError(t, err)
	call(t, s.c, "wi", "write_file", `{"path":"a.txt","content":"one"}`, "ok")
	root := rootPath(t, s.c, "wi")
	require.False(t, mountedFUSE(t, root))
	got, err := os.ReadFile(filepath.Join(root, "a.txt"))
	require.NoError(t, err)
	require.Equal(t, "one", string(got))

	// Reading the state again with nothing changed writes nothing out.
	require.NoError(t, os.WriteFile(filepath.Join(root, "kept.txt"), []byte("x"), 0o644))
	rootPath(t, s.c, "wi")
	require.FileExists(t, filepath.Join(root, "kept.txt"), "unchanged session, no rewrite")

	call(t, s.c, "wi", "write_file", `{"path":"a.txt","content":"two","mode":"overwrite"}`, "ok")
	call(t, s.c, "wi", "write_file", `{"path":"d/b.bin","content":"AAE=","encoding":"binary"}`, "ok")
	require.NoError(t, os.WriteFile(filepath.Join(root, "stray.txt"), []byte("x"), 0o644))
	require.Equal(t, root, rootPath(t, s.c, "wi"), "the same path, written out again")
	got, err = os.ReadFile(filepath.Join(root, "a.txt"))
	require.NoError(t, err)
	require.Equal(t, "two", string(got))
	got, err = os.ReadFile(filepath.Join(root, "d", "b.bin"))
	require.NoError(t, err)
	require.Equal(t, "\x00\x01", string(got))
	require.NoFileExists(t, filepath.Join(root, "stray.txt"), "the copy is the session's, not what a program left")
	require.NoFileExists(t, filepath.Join(root, "kept.txt"))
	call(t, s.c, "wi", "read_file", `{"path":"stray.txt"}`, "ToolValidationError")
	// A restore is a change too.
	snap, err := s.c.CreateSnapshot(ctx, "wi", "two")
	require.NoError(t, err)
	call(t, s.c, "wi", "write_file", `{"path":"a.txt","content":"three","mode":"overwrite"}`, "ok")
	rootPath(t, s.c, "wi")
	_, err = s.c.Restore(ctx, "wi", snap.ID)
	require.NoError(t, err)
	rootPath(t, s.c, "wi")
	got, err = os.ReadFile(filepath.Join(root, "a.txt"))
	require.NoError(t, err)
	require.Equal(t, "two", string(got), "the copy follows a restore")
	entries, err := os.ReadDir(filepath.Dir(root))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no leftover of the swap beside root")

	require.NoError(t, s.c.CloseSession(ctx, "wi"))
	require.NoDirExists(t, filepath.Dir(root))
}

// TestRootDirOnlyForItsContract: a session of a contract without a
// directory on disk gets none.
func TestRootDirOnlyForItsContract(t *testing.T) {
	cfg := newConfig(t)
	s := start(t, cfg)
	_, err := s.c.CreateSession(context.Background(), api.CreateSessionRequest{ID: "x", Contract: "x07"})
	require.NoError(t, err)
	entries, err := os.ReadDir(cfg.RootDirParent)
	require.NoError(t, err)
	require.Empty(t, entries)
}
