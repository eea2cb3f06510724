package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/vfsd/vfsd/internal/loopback"
)

// newUICmd is `vfsd ui`: a one-time login URL for the review page, and,
// when the daemon listens only on its socket, a loopback proxy to it.
func newUICmd(g *globalFlags) *cobra.Command {
	var session, listen string
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Open the review page: print a one-time login URL",
		Long: `vfsd ui asks the daemon for a one-time login to its review page (sessions,
their timelines and diffs, snapshot, apply and close buttons) and prints its
URL. Open it within two minutes; it works once, and signs the browser in with
a cookie (HttpOnly, SameSite=Strict) that lasts 12 hours, or until the session
closes for a --session login. The page never holds a token.

The page lives at a host name of its own, vfsd-<16 hex>.localhost (one per
login principal: the admin, each session), which browsers resolve to this
machine's loopback: its cookie is sent to no other server, whatever its port.
When the daemon listens on TCP (vfsd serve --listen), the URL is on that port.
When it listens only on its Unix socket, vfsd ui serves the page itself on a
loopback port (--listen) and forwards to the socket until it is interrupted; a
browser there still needs the printed login. From another machine, forward the
port with ssh -L PORT:127.0.0.1:PORT and open the URL as printed.`,
		Example: `  vfsd ui                        # an admin login: every session
  vfsd ui --session review-42    # a login that reaches only this session
  vfsd ui --listen 127.0.0.1:8765  # the port to serve on when the daemon has no TCP`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runUI(cmd, g, session, listen)
		},
	}
	cmd.Flags().StringVar(&session, "session", "", "a login that reaches only this session (a reviewer's), not every session")
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:0", "loopback address to serve the page on when the daemon has no TCP listener")
	return cmd
}

func runUI(cmd *cobra.Command, g *globalFlags, session, listen string) error {
	ctx := cmd.Context()
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return usageError{fmt.Errorf("--listen %q: %v; give a loopback host:port such as 127.0.0.1:8765", listen, err)}
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return usageError{fmt.Errorf("--listen %q is not a loopback address; vfsd ui serves the page on loopback only (for other machines, run vfsd serve --listen)", listen)}
	}
	c, err := g.client()
	if err != nil {
		return err
	}
	defer c.Close()
	login, err := c.UILogin(ctx, session)
	if err != nil {
		return err
	}
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if login.URL != "" {
		fmt.Fprintln(out, login.URL)
		fmt.Fprintf(errOut, "Open this within %s; it works once.\n", time.Until(login.ExpiresAt).Round(time.Second))
		return nil
	}
	if value(g.addr, envAddr) != "" {
		return errors.New("the daemon gave no address for its review page; open " + login.Path + " on the address you reach it at")
	}
	// The page's host name resolves to every loopback address, ::1 first:
	// the proxy holds its port on all of them, so that no other program
	// receives the page's requests there.
	lns, err := loopback.Listen(listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w; choose another --listen", listen, err)
	}
	socket := g.socketPath()
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", "vfsd"
			// The daemon authenticates what the proxy forwards as it would
			// a TCP request (the page's cookie), never as the socket's
			// admin; it checks Origin against the Host the browser used.
			pr.Out.Host = pr.In.Host
			pr.Out.Header.Set("Vfsd-UI-Proxy", "1")
		},
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, "unix", socket)
		}},
		FlushInterval: -1,
	}
	srv := &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
	pageHost := login.Host
	if pageHost == "" { // a daemon from before the page had a name of its own
		pageHost, _, _ = net.SplitHostPort(lns[0].Addr().String())
	}
	u := url.URL{Scheme: "http", Host: net.JoinHostPort(pageHost, strconv.Itoa(lns[0].Addr().(*net.TCPAddr).Port))}
	fmt.Fprintln(out, u.String()+login.Path)
	fmt.Fprintf(errOut, "Serving the review page on %s (the daemon listens only on %s). Open the URL within %s; it works once. Ctrl-C stops.\n",
		u.String()+"/ui/", socket, time.Until(login.ExpiresAt).Round(time.Second))
	errc := make(chan error, len(lns))
	for _, ln := range lns {
		go func() { errc <- srv.Serve(ln) }()
	}
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		return nil
	case err := <-errc:
		return fmt.Errorf("serve the review page: %w", err)
	}
}
