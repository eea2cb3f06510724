package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/vfsd/vfsd/daemon"
)

func newServeCmd(g *globalFlags) *cobra.Command {
	var (
		dataDir, listen, tokenFile, logLevel string
		roots                                []string
		defaultTTL                           time.Duration
		allowOrigins                         []string
		maxConns                             int
	)
	cmd := &cobra.Command{
		Use:   "serve [--data-dir DIR] [--socket PATH] [--listen ADDR] [--allow-root DIR]...",
		Short: "Run the daemon: the HTTP/JSON API on a Unix socket, and on TCP with --listen",
		Long: `Runs the vfsd daemon until interrupted (SIGINT or SIGTERM), then shuts down
gracefully: requests in flight finish, FUSE mounts are unmounted (and mounted
again at the next start), sessions are closed and flushed.

Everything lives in the data directory (default $XDG_STATE_HOME/vfsd, else
~/.local/state/vfsd): the content store, the sessions, their metadata, and the
admin token. Sessions survive restarts and crashes. The API is served on a Unix
socket with mode 0600 (default $XDG_RUNTIME_DIR/vfsd.sock, else vfsd.sock in the
data directory), where every request may do everything; with --listen also on
TCP, where every request needs a bearer token: the admin token (read from
--token, else from the data directory's token file, generated on first start
with mode 0600) or a session's token (returned when the session is created;
it reaches that session only).

Host folders can be staged into sessions (and changes applied back) only from
beneath an --allow-root directory. The API is documented in docs/api.md.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return usageError{fmt.Errorf("--log-level %q: use debug, info, warn or error", logLevel)}
			}
			if dataDir == "" {
				dataDir = defaultDataDir()
			}
			socket := value(g.socket, envSocket)
			if socket == "" {
				socket = defaultSocket(dataDir)
			}
			for i, r := range roots {
				abs, err := filepath.Abs(r)
				if err != nil {
					return usageError{fmt.Errorf("--allow-root %s: %w", r, err)}
				}
				if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
					return usageError{fmt.Errorf("--allow-root %s: not an existing directory", r)}
				}
				roots[i] = abs
			}
			cfg := daemon.Config{
				DataDir: dataDir, Socket: socket, Listen: listen, Token: value(g.token, envToken),
				TokenFile: tokenFile, AllowRoots: roots, DefaultTTL: defaultTTL,
				AllowOrigins: allowOrigins, MaxConns: maxConns,
				Logger:  slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level})),
				Version: version(),
			}
			d, err := daemon.New(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if listen != "" && cfg.Token == "" {
				tf := tokenFile
				if tf == "" {
					tf = filepath.Join(dataDir, "token")
				}
				cfg.Logger.Info("TCP requests need a bearer token; the admin token is in " + tf)
			}
			return d.Serve(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&dataDir, "data-dir", "", "where the daemon keeps everything (default $XDG_STATE_HOME/vfsd, else ~/.local/state/vfsd)")
	f.StringVar(&listen, "listen", "", "also serve on this TCP address (host:port), behind bearer tokens")
	f.StringVar(&tokenFile, "token-file", "", "the admin token's file (default DATA_DIR/token)")
	f.StringArrayVar(&roots, "allow-root", nil, "a host directory sessions may be staged from and applied to (repeatable)")
	f.DurationVar(&defaultTTL, "default-ttl", 0, "lifetime of sessions created without a ttl (0: no expiry)")
	f.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	f.StringArrayVar(&allowOrigins, "allow-origin", nil, "a browser origin (scheme://host[:port]) allowed to call the MCP endpoints, besides loopback ones (repeatable)")
	f.IntVar(&maxConns, "max-conns", 0, "connections open at once on each listener, past which new ones get 503 (default 512)")
	return cmd
}

// version is the main module's version, or "devel".
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}
