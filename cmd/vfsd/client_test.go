package main

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDaemonVerbUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"session", "show"},
		{"session", "bogus"},
		{"session"},
		{"session", "create", "--include", "*.go"},
		{"session", "create", "--mount", "/x", "--mounts-file", "m.json"},
		{"snapshot", "diff", "a"},
		{"snapshot", "diff", "a", "b", "--from", "base"},
		{"snapshot", "fork"},
		{"tool", "only-one"},
		{"tool", "s", "read_file", "--json", "not json"},
		{"tool", "s", "read_file", "--dry-run"},
		{"apply"},
		{"mount", "s"},
		{"serve", "--allow-root", "/no/such/dir"},
		{"serve", "--log-level", "loud"},
	} {
		_, err := run(t, "", append([]string{"--socket", filepath.Join(t.TempDir(), "none.sock")}, args...)...)
		var ue usageError
		require.True(t, errors.As(err, &ue), "%v: want a usage error (exit 2), got %v", args, err)
	}
}

func TestDaemonVerbWithoutDaemon(t *testing.T) {
	_, err := run(t, "", "--socket", filepath.Join(t.TempDir(), "none.sock"), "session", "list")
	require.ErrorContains(t, err, "is the daemon running? start it with vfsd serve")
	var ue usageError
	require.False(t, errors.As(err, &ue), "exit 1, not 2")
}

func TestReadParams(t *testing.T) {
	p, err := readParams("-", strings.NewReader(`{"path":"a"}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"path":"a"}`, string(p))
	p, err = readParams("", nil)
	require.NoError(t, err)
	require.Equal(t, "{}", string(p))
	_, err = readParams("@/no/such/file", nil)
	require.Error(t, err)
}

func TestDefaultPaths(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/state")
	t.Setenv("XDG_RUNTIME_DIR", "")
	require.Equal(t, "/state/vfsd", defaultDataDir())
	require.Equal(t, "/state/vfsd/vfsd.sock", defaultSocket(defaultDataDir()))
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/1")
	require.Equal(t, "/run/user/1/vfsd.sock", defaultSocket(defaultDataDir()))
	t.Setenv(envSocket, "/env.sock")
	require.Equal(t, "/env.sock", (&globalFlags{}).socketPath())
	require.Equal(t, "/flag.sock", (&globalFlags{socket: "/flag.sock"}).socketPath())
}
