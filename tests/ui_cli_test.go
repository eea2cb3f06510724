package tests

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
)

// TestUICommandProxy: with a daemon on its socket only, vfsd ui serves the
// review page on a loopback port, forwarding to the socket, and the page
// there needs the login it printed (the socket's admin rights do not pass
// through); a non-loopback --listen is a usage error.
func TestUICommandProxy(t *testing.T) {
	dataDir, socket := newDaemonDirs(t)
	d := startDaemon(t, dataDir, socket)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	_, err := d.client().CreateSession(ctx, api.CreateSessionRequest{ID: "proxied"})
	require.NoError(t, err)

	_, stderr, code := d.cli(ctx, nil, "ui", "--listen", "0.0.0.0:0")
	require.Equal(t, 2, code, stderr)
	require.Contains(t, stderr, "not a loopback address")

	cmd := exec.CommandContext(ctx, d.bin, "ui", "--listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "VFSD_SOCKET="+socket)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = io.Discard
	require.NoError(t, cmd.Start())
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	loginURL := strings.TrimSpace(line)
	require.Regexp(t, `^http://vfsd-[0-9a-f]{16}\.localhost:\d+/ui/login\?code=`, loginURL, "the page's own host name")
	base := loginURL[:strings.Index(loginURL, "/ui/")]
	u, err := url.Parse(loginURL)
	require.NoError(t, err)
	if probe, err := net.Listen("tcp", "[::1]:0"); err == nil {
		probe.Close()
		squat, err := net.Listen("tcp", net.JoinHostPort("::1", u.Port()))
		if err == nil {
			squat.Close()
		}
		require.Error(t, err, "the proxy leaves [::1]:%s, where browsers try the page first, to others", u.Port())
	}

	// A browser: *.localhost is loopback, and it says where requests
	// come from.
	var dialer net.Dialer
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if h, port, err := net.SplitHostPort(addr); err == nil && strings.HasSuffix(h, ".localhost") {
			addr = net.JoinHostPort("127.0.0.1", port)
		}
		return dialer.DialContext(ctx, network, addr)
	}}
	defer tr.CloseIdleConnections()
	get := func(hc *http.Client, u string) (int, string) {
		req, err := http.NewRequest("GET", u, nil)
		require.NoError(t, err)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		resp, err := hc.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	code, body := get(&http.Client{Transport: tr}, base+"/ui/")
	require.Equal(t, http.StatusUnauthorized, code, "the proxy does not lend the socket's admin rights")
	require.Contains(t, body, "vfsd ui")
	code, _ = get(&http.Client{Transport: tr}, base+"/v1/sessions")
	require.Equal(t, http.StatusUnauthorized, code)

	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	hc := &http.Client{Jar: jar, Transport: tr}
	code, _ = get(hc, loginURL)
	require.Equal(t, http.StatusOK, code)
	code, body = get(hc, base+"/ui/")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `href="/ui/s/proxied"`)
}
