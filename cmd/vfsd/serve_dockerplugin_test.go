package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestServeDockerPlugin: vfsd serve --docker-plugin=SOCK serves the volume
// plugin protocol beside the API, over the same daemon, and both stop with
// it.
func TestServeDockerPlugin(t *testing.T) {
	dir, err := os.MkdirTemp("", "vs")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	src := filepath.Join(dir, "src")
	require.NoError(t, os.MkdirAll(src, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "a.go"), []byte("package a\n"), 0o644))
	sock, api := filepath.Join(dir, "vfsd.sock"), filepath.Join(dir, "api.sock")

	root := newRoot()
	root.SetArgs([]string{"serve", "--data-dir", filepath.Join(dir, "data"), "--socket", api, "--allow-root", src,
		"--log-level", "warn", "--docker-plugin=" + sock})
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Fatal("vfsd serve did not stop within 30s")
		}
		_, err := os.Stat(sock)
		require.ErrorIs(t, err, os.ErrNotExist, "the plugin's socket is removed at shutdown")
	})
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
	post := func(method, body string) string {
		resp, err := c.Post("http://plugin/"+method, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		var b bytes.Buffer
		_, err = b.ReadFrom(resp.Body)
		require.NoError(t, err)
		return b.String()
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		require.False(t, time.Now().After(deadline), "the plugin socket did not appear")
		time.Sleep(50 * time.Millisecond)
	}
	require.Contains(t, post("Plugin.Activate", ""), `"VolumeDriver"`)
	require.Equal(t, `{"Err":""}`+"\n", post("VolumeDriver.Create", `{"Name":"ws1","Opts":{"folder":"`+src+`"}}`))
	out, err := run(t, "", "--socket", api, "session", "show", "ws1")
	require.NoError(t, err)
	require.Contains(t, out, "docker volume ws1", "the volume is a session of the same daemon")
}
