package httpapi_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/daemon"
	"github.com/vfsd/vfsd/httpapi"
)

func TestSocketHandling(t *testing.T) {
	ctx := context.Background()

	// A stale socket (no daemon behind it) is replaced.
	cfg := newConfig(t)
	l, err := net.Listen("unix", cfg.Socket)
	require.NoError(t, err)
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	require.FileExists(t, cfg.Socket)
	s := start(t, cfg)
	_, err = s.c.Health(ctx)
	require.NoError(t, err)

	// A live one is not taken over.
	other := newConfig(t)
	other.Socket = cfg.Socket
	d, err := httpapi.Open(ctx, other)
	require.NoError(t, err)
	err = d.Serve(ctx)
	require.ErrorContains(t, err, "another vfsd is serving on "+cfg.Socket)

	// A path that is no socket is left alone.
	notSock := newConfig(t)
	require.NoError(t, os.WriteFile(notSock.Socket, []byte("x"), 0o600))
	d, err = httpapi.Open(ctx, notSock)
	require.NoError(t, err)
	require.ErrorContains(t, d.Serve(ctx), "is not a socket")

	// Too long a path is refused with the limit.
	long := newConfig(t)
	long.Socket = filepath.Join(shortDir(t), strings.Repeat("x", 120))
	d, err = httpapi.Open(ctx, long)
	require.NoError(t, err)
	require.ErrorContains(t, d.Serve(ctx), "choose a shorter --socket")
}

func TestConfigValidation(t *testing.T) {
	_, err := daemon.New(context.Background(), daemon.Config{})
	require.ErrorContains(t, err, "DataDir is required")
	cfg := newConfig(t)
	cfg.DefaultTTL = -1
	_, err = daemon.New(context.Background(), cfg)
	require.ErrorContains(t, err, "DefaultTTL")
	cfg = newConfig(t)
	require.NoError(t, os.WriteFile(filepath.Join(cfg.DataDir, "token"), []byte("\n"), 0o600))
	_, err = daemon.New(context.Background(), cfg)
	require.ErrorContains(t, err, "is empty")
}
