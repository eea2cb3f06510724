// Package loopback listens on a TCP port the way the review page needs:
// on every loopback address a browser may try for it.
//
// The review page lives at a *.localhost host name (daemon/uiauth.go).
// Browsers resolve such a name to both loopback addresses and try ::1
// first (Chromium does; a connection refused there falls back to
// 127.0.0.1). A daemon listening on 127.0.0.1:P alone leaves [::1]:P free
// for any program on the machine — an agent's dev server — to bind, and
// the browser would send that program the page's requests, cookie
// included. Listen therefore holds the port on both loopback addresses.
package loopback

import (
	"errors"
	"fmt"
	"net"
	"syscall"
)

// Addresses are the loopback addresses a browser tries for a localhost
// name, in the order Chromium tries them.
var Addresses = []string{"::1", "127.0.0.1"}

// maxTries bounds the fresh ports tried for port 0 when a kernel-chosen
// port is taken on the other loopback address.
const maxTries = 16

// TakenError says another program holds the port on a loopback address
// that browsers try for the page.
type TakenError struct {
	// Addr is the address held by someone else.
	Addr string
}

func (e *TakenError) Error() string {
	return fmt.Sprintf("%s is taken by another program: a browser opening a *.localhost address on that port tries it first and would send it the review page's requests", e.Addr)
}

// Listen listens on addr (host:port) and on the same port of every other
// loopback address a browser may try (Addresses) that addr does not
// already cover, and returns all the listeners, addr's first.
//
// What addr covers: a wildcard host covers both (Go listens dual-stack
// for "", "::" and "0.0.0.0"; an IPv4-only wildcard covers 127.0.0.1); a
// loopback address ("localhost" too) covers itself. A host that is neither loopback nor a wildcard gets no guard (a
// browser reaches the page there through a tunnel; see docs/api.md).
//
// A loopback address the machine does not have (no IPv6) needs no guard:
// nobody can bind it either. One held by someone else is a *TakenError
// (the listeners are closed) — unless addr's port is 0, when Listen picks
// another port.
func Listen(addr string) ([]net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	tries := 1
	if port == "0" {
		tries = maxTries
	}
	for i := 0; ; i++ {
		lns, err := listen(addr, host)
		var taken *TakenError
		if errors.As(err, &taken) && i+1 < tries {
			continue
		}
		return lns, err
	}
}

// listen is one attempt of Listen.
func listen(addr, host string) ([]net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	lns := []net.Listener{ln}
	tcp, ok := ln.Addr().(*net.TCPAddr)
	if !ok {
		return lns, nil
	}
	for _, a := range guards(host, tcp.IP) {
		g, err := net.Listen("tcp", net.JoinHostPort(a, fmt.Sprint(tcp.Port)))
		switch {
		case err == nil:
			lns = append(lns, g)
		case errors.Is(err, syscall.EADDRNOTAVAIL), errors.Is(err, syscall.EAFNOSUPPORT):
			// This machine has no such address: nobody can bind it.
		case errors.Is(err, syscall.EADDRINUSE):
			closeAll(lns)
			return nil, &TakenError{Addr: net.JoinHostPort(a, fmt.Sprint(tcp.Port))}
		default:
			closeAll(lns)
			return nil, fmt.Errorf("hold %s for the review page: %w", net.JoinHostPort(a, fmt.Sprint(tcp.Port)), err)
		}
	}
	return lns, nil
}

// guards returns the loopback addresses to hold besides the listener on
// host (as given) bound to ip.
func guards(host string, ip net.IP) []string {
	switch {
	case ip.Equal(net.IPv6unspecified):
		return nil // dual-stack wildcard (Go's "", "::" and "0.0.0.0"): both loopbacks are the listener's
	case ip.Equal(net.IPv4zero):
		return []string{"::1"} // an IPv4-only wildcard
	case host != "localhost" && !ip.IsLoopback():
		return nil
	}
	var out []string
	for _, a := range Addresses {
		if !ip.Equal(net.ParseIP(a)) {
			out = append(out, a)
		}
	}
	return out
}

func closeAll(lns []net.Listener) {
	for _, l := range lns {
		l.Close()
	}
}
