package httpapi_test

import (
	"context"
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
)

// TestUIPortHeldOnEveryLoopback: browsers try ::1 first for the review
// page's *.localhost name, so the daemon holds its TCP port there as well
// as on 127.0.0.1 — an agent cannot bind it to receive the page's
// requests — and where another program already holds it, the daemon
// serves its API but offers no review page on that port.
func TestUIPortHeldOnEveryLoopback(t *testing.T) {
	probe, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skip("this machine has no ::1: there is no other loopback address to hold")
	}
	probe.Close()
	ctx := context.Background()

	s, admin := tcpServer(t)
	_, port, err := net.SplitHostPort(s.srv.TCPAddr())
	require.NoError(t, err)
	squat, err := net.Listen("tcp", net.JoinHostPort("::1", port))
	if err == nil {
		squat.Close()
	}
	require.Error(t, err, "an agent bound [::1]:%s, where browsers send the page's requests first", port)
	l, err := admin.UILogin(ctx, "")
	require.NoError(t, err)
	require.Equal(t, "http://"+net.JoinHostPort(l.Host, port)+l.Path, l.URL)

	// Someone holds [::1]:P before the daemon starts on 127.0.0.1:P.
	squat, err = net.Listen("tcp", "[::1]:0")
	require.NoError(t, err)
	defer squat.Close()
	cfg := newConfig(t)
	cfg.Listen = "127.0.0.1:" + strconv.Itoa(squat.Addr().(*net.TCPAddr).Port)
	s2 := start(t, cfg)
	tcp := s2.tcpClient(s2.d.AdminToken())
	_, err = tcp.Sessions(ctx)
	require.NoError(t, err, "the API is served all the same")
	for _, c := range []interface {
		UILogin(context.Context, string) (*api.UILoginResponse, error)
	}{tcp, s2.c} {
		_, err = c.UILogin(ctx, "")
		requireCode(t, err, api.CodeUnavailable)
		require.Contains(t, err.Error(), "taken by another program")
		require.Contains(t, err.Error(), "--listen")
	}
}
