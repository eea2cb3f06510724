package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/vfsd/vfsd/daemon"
	"github.com/vfsd/vfsd/httpapi"
	"github.com/vfsd/vfsd/volume/dockerplugin"
)

func newServeCmd(g *globalFlags) *cobra.Command {
	var (
		dataDir, listen, tokenFile, logLevel string
		roots                                []string
		defaultTTL                           time.Duration
		allowOrigins                         []string
		maxConns                             int
		sessionBytes                         = byteSize(16 << 30)
		blobBytes                            = byteSize(1 << 30)
		sessionFiles                         int64
		maxSnapshots, maxLabel               int
		remote                               string
		remoteCache, remoteGCSpool           byteSize
		remoteGCEntries                      int
		remoteGrace                          time.Duration
		fleetName                            string
		fleetLease, clockSkew                time.Duration
		rootDirs                             string
		dockerPlugin                         string
	)
	cmd := &cobra.Command{
		Use:   "serve [--data-dir DIR] [--socket PATH] [--listen ADDR] [--allow-root DIR]...",
		Short: "Run the daemon: the HTTP/JSON API on a Unix socket, and on TCP with --listen",
		Example: `  vfsd serve --allow-root ~/src
  vfsd serve --allow-root ~/src --listen 127.0.0.1:7070     # TCP too, behind tokens
  vfsd serve --data-dir /var/lib/vfsd --socket /run/vfsd.sock --default-ttl 24h
  VFSD_ADDR=127.0.0.1:7070 vfsd session list                # a client over TCP (admin token from the data dir)
  vfsd serve --allow-root /src --docker-plugin              # and Docker volumes: docker volume create -d vfsd ...`,
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
beneath an --allow-root directory. The API is documented in docs/api.md.

--docker-plugin also serves the Docker (and Podman) volume plugin protocol,
on /run/docker/plugins/vfsd.sock or the socket given (its name less .sock is
the driver's name): docker volume create -d vfsd -o folder=DIR ws1 makes
session ws1, docker run -v ws1:/work mounts it. See docs/volumes.md.`,
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
				// 0 on the command line is no limit; in Config it is the default.
				MaxSessionBytes: noLimit(int64(sessionBytes)), MaxSessionFiles: noLimit(sessionFiles),
				MaxSnapshots: int(noLimit(int64(maxSnapshots))), MaxLabelBytes: maxLabel,
				MaxBlobBytes: int64(blobBytes),
				Remote:       remote, RemoteCacheBytes: int64(remoteCache), RemoteGrace: remoteGrace,
				RemoteGCMaxEntries: remoteGCEntries, RemoteGCMaxSpoolBytes: int64(remoteGCSpool),
				RootDirs: rootDirs,
				Name:     fleetName, FleetLease: fleetLease, MaxClockSkew: clockSkew,
			}
			if rootDirs != daemon.RootDirsFUSE && rootDirs != daemon.RootDirsCopy {
				return usageError{fmt.Errorf("--root-dirs %q: use fuse or copy", rootDirs)}
			}
			if dockerPlugin != "" {
				abs, err := filepath.Abs(dockerPlugin)
				if err != nil {
					return usageError{fmt.Errorf("--docker-plugin %s: %w", dockerPlugin, err)}
				}
				dockerPlugin = abs
				cfg.PrivatePaths = append(cfg.PrivatePaths, dockerPlugin)
			}
			if blobBytes <= 0 || maxLabel <= 0 {
				return usageError{errors.New("--max-blob-bytes and --max-label-bytes must be positive")}
			}
			d, err := httpapi.Open(cmd.Context(), cfg)
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
			if dockerPlugin != "" {
				return serveWithDockerPlugin(cmd.Context(), d, dockerPlugin)
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
	f.Var(&sessionBytes, "max-session-bytes", "default quota of a session's total file size, like 16GiB or 500M (0: none)")
	f.Int64Var(&sessionFiles, "max-session-files", 1_000_000, "default quota of a session's files, directories and symlinks (0: none)")
	f.IntVar(&maxSnapshots, "max-snapshots", 1000, "default quota of snapshots kept per session (0: none)")
	f.IntVar(&maxLabel, "max-label-bytes", 1024, "the longest snapshot label")
	f.Var(&blobBytes, "max-blob-bytes", "the largest blob POST /v1/blobs takes")
	f.StringVar(&remote, "remote", "", "share snapshots through this S3-compatible store: s3://BUCKET[/PREFIX][?endpoint=HOST:PORT&region=R&insecure=1&create=1]; credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or ~/.aws/credentials")
	f.Var(&remoteCache, "remote-cache-bytes", "the most room blobs fetched from --remote take locally, like 8GiB (default 8GiB)")
	f.IntVar(&remoteGCEntries, "remote-gc-max-entries", 0, "the most hashes remote garbage collection holds in memory, past which it deletes nothing and says so (default 4000000, about 400 MB)")
	f.Var(&remoteGCSpool, "remote-gc-max-spool", "the most manifest bytes remote garbage collection spools to a temporary file, like 16GiB (default 16GiB)")
	f.StringVar(&fleetName, "name", "", "this daemon's name in the fleet of daemons sharing --remote (default: kept in the data dir, made from the host name)")
	f.DurationVar(&fleetLease, "lease", 0, "how long a session's ownership in the fleet holds without renewal; renewed every third of it (default 30s; see docs/fleets.md)")
	f.DurationVar(&clockSkew, "max-clock-skew", 0, "the most the fleet's clocks may disagree: a daemon takes an ended lease over only this long after its end (default 2s)")
	f.StringVar(&rootDirs, "root-dirs", daemon.RootDirsFUSE, "how a session whose contract has a directory on disk (weakincentives' root_path) gets it: fuse (a mount of the session; a copy where mounting fails) or copy (written out when the state is read)")
	f.DurationVar(&remoteGrace, "remote-grace", 0, "remote garbage collection keeps unreferenced objects younger than this (default 24h; longer than any push takes)")
	f.StringVar(&dockerPlugin, "docker-plugin", "", "also serve Docker's volume plugin protocol on this socket (alone: "+dockerplugin.DefaultSocket+"); see docs/volumes.md")
	f.Lookup("docker-plugin").NoOptDefVal = dockerplugin.DefaultSocket
	return cmd
}

// serveWithDockerPlugin serves the API and, on socket, the Docker volume
// plugin protocol over the same daemon, until ctx ends; the plugin stops
// first, so no volume call reaches a daemon shutting down.
func serveWithDockerPlugin(ctx context.Context, srv *httpapi.Server, socket string) error {
	d := srv.Daemon()
	p, err := dockerplugin.New(d, dockerplugin.Config{Socket: socket, StateDir: filepath.Join(d.Config().DataDir, "docker-plugin")})
	if err != nil {
		d.Close()
		return err
	}
	pctx, stopPlugin := context.WithCancel(context.Background())
	defer stopPlugin()
	perr := make(chan error, 1)
	go func() { perr <- p.Serve(pctx) }()
	apiCtx, stopAPI := context.WithCancel(ctx)
	defer stopAPI()
	aerr := make(chan error, 1)
	go func() { aerr <- srv.Serve(apiCtx) }()
	var pluginErr error
	select {
	case <-ctx.Done():
		stopPlugin()
		pluginErr = <-perr
	case pluginErr = <-perr: // the plugin could not serve: stop everything
		stopAPI()
	case err := <-aerr:
		stopPlugin()
		return errors.Join(err, <-perr)
	}
	return errors.Join(pluginErr, <-aerr)
}

// noLimit turns a command-line limit (0: none) into a daemon.Config one
// (negative: none).
func noLimit(v int64) int64 {
	if v <= 0 {
		return -1
	}
	return v
}

// byteSize is a flag holding a size in bytes, given as a number with an
// optional unit: K, M, G, T (powers of 1024, also as KiB, KB...).
type byteSize int64

func (b *byteSize) String() string {
	v := int64(*b)
	for _, u := range []struct {
		unit string
		mult int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if v != 0 && v%u.mult == 0 {
			return strconv.FormatInt(v/u.mult, 10) + u.unit
		}
	}
	return strconv.FormatInt(v, 10)
}

func (b *byteSize) Type() string { return "size" }

func (b *byteSize) Set(s string) error {
	v, err := parseByteSize(s)
	if err != nil {
		return err
	}
	*b = byteSize(v)
	return nil
}

// parseByteSize reads "123", "16G", "16GiB", "512MB" and the like.
func parseByteSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult > 1 {
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseInt(strings.TrimSpace(t), 10, 64)
	if err != nil || v < 0 || v > math.MaxInt64/mult {
		return 0, fmt.Errorf("%q is not a size: use bytes, or a number with K, M, G or T (like 16GiB)", s)
	}
	return v * mult, nil
}
