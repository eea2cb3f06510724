package loopback

import (
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// hasIPv6 reports whether this machine has ::1.
func hasIPv6(t *testing.T) bool {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// TestListenHoldsEveryLoopback: a page listener on one loopback address
// holds its port on the other too, so no other program can take it there.
func TestListenHoldsEveryLoopback(t *testing.T) {
	if !hasIPv6(t) {
		t.Skip("this machine has no ::1: there is no other loopback address to hold")
	}
	for _, tc := range []struct {
		addr  string
		other string
	}{
		{"127.0.0.1:0", "::1"},
		{"localhost:0", "::1"},
		{"[::1]:0", "127.0.0.1"},
		{"0.0.0.0:0", "::1"},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			lns, err := Listen(tc.addr)
			require.NoError(t, err)
			defer closeAll(lns)
			port := lns[0].Addr().(*net.TCPAddr).Port
			squat, err := net.Listen("tcp", net.JoinHostPort(tc.other, fmt.Sprint(port)))
			if err == nil {
				squat.Close()
			}
			require.Error(t, err, "another program took the page's port on %s", tc.other)
		})
	}
	// A dual-stack wildcard covers both by itself.
	lns, err := Listen("[::]:0")
	require.NoError(t, err)
	require.Len(t, lns, 1)
	closeAll(lns)
}

// TestListenRefusesATakenLoopback: when another program holds the port on
// the other loopback address, Listen says so for a fixed port, and picks
// another for port 0.
func TestListenRefusesATakenLoopback(t *testing.T) {
	if !hasIPv6(t) {
		t.Skip("this machine has no ::1")
	}
	squat, err := net.Listen("tcp", "[::1]:0")
	require.NoError(t, err)
	defer squat.Close()
	port := squat.Addr().(*net.TCPAddr).Port
	_, err = Listen(fmt.Sprintf("127.0.0.1:%d", port))
	var taken *TakenError
	require.True(t, errors.As(err, &taken), "%v", err)
	require.Equal(t, fmt.Sprintf("[::1]:%d", port), taken.Addr)
	require.Contains(t, err.Error(), "taken by another program")
	// Nothing was left listening on 127.0.0.1.
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	require.NoError(t, err)
	ln.Close()
}
