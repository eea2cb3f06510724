package httpapi_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
)

// TestSessionLabel keeps a session's label across a restart, refuses one
// over the label limit, and does not pass it to forks.
func TestSessionLabel(t *testing.T) {
	cfg := newConfig(t)
	s := start(t, cfg)
	ctx := context.Background()
	r, err := s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "l", Label: "refactor the parser"})
	require.NoError(t, err)
	require.Equal(t, "refactor the parser", r.Session.Label)
	_, err = s.c.CreateSession(ctx, api.CreateSessionRequest{Label: strings.Repeat("x", 1025)})
	requireCode(t, err, api.CodeInvalidInput)
	f, err := s.c.ForkSession(ctx, "l", api.CreateSessionRequest{})
	require.NoError(t, err)
	require.Empty(t, f.Session.Label)
	s.stop()
	s = start(t, cfg)
	got, err := s.c.Session(ctx, "l")
	require.NoError(t, err)
	require.Equal(t, "refactor the parser", got.Label)
}

// TestMountRefusesANonEmptyDirectory: a mount would hide what the
// directory holds.
func TestMountRefusesANonEmptyDirectory(t *testing.T) {
	cfg := newConfig(t)
	s := start(t, cfg)
	ctx := context.Background()
	_, err := s.c.CreateSession(ctx, api.CreateSessionRequest{ID: "m"})
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("k"), 0o644))
	_, err = s.c.Mount(ctx, "m", api.MountRequest{Dir: dir})
	requireCode(t, err, api.CodeInvalidInput)
	require.ErrorContains(t, err, "not empty")
	sess, err := s.c.Session(ctx, "m")
	require.NoError(t, err)
	require.Empty(t, sess.FuseMounts)
}
