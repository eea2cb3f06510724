package daemon

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"time"

	"github.com/vfsd/vfsd/internal/weborigin"
)

// Config configures a Daemon.
type Config struct {
	// DataDir holds everything the daemon keeps (see the package
	// documentation). Required; created with mode 0700 if missing.
	DataDir string
	// Socket is the Unix socket to serve on, with mode 0600; DataDir/vfsd.sock
	// when empty.
	Socket string
	// Listen, if set, is a TCP address (host:port) to serve on as well.
	// Every TCP request needs a bearer token.
	Listen string
	// Token is the admin token. When empty it is read from TokenFile, and
	// when Listen is set and the file does not exist, a new one is
	// generated into it.
	Token string
	// TokenFile holds the admin token; DataDir/token when empty.
	TokenFile string
	// AllowRoots are the host directories session mounts may stage from
	// (and apply writes back to); none means mounts are refused.
	AllowRoots []string
	// DefaultTTL is the lifetime of sessions created without a TTL; zero
	// means they never expire.
	DefaultTTL time.Duration
	// JanitorInterval is how often expired sessions are looked for; 30s
	// when zero. (An expired session is refused at once regardless.)
	JanitorInterval time.Duration
	// ShutdownTimeout bounds how long Serve waits for requests in flight
	// when it stops; 10s when zero.
	ShutdownTimeout time.Duration
	// MaxBlobBytes caps an uploaded blob; 1 GiB when zero.
	MaxBlobBytes int64
	// MaxSessionBytes is the byte quota of sessions created without one
	// (the total size of their files, uncommitted writes included); 16 GiB
	// when zero, none when negative. A policy's max_session_bytes cap
	// lowers it.
	MaxSessionBytes int64
	// MaxSessionFiles is the quota of files, directories and symlinks of
	// sessions created without one; 1,000,000 when zero, none when
	// negative. A policy's max_session_files cap lowers it.
	MaxSessionFiles int64
	// MaxSnapshots caps the snapshots taken of one session that exist at
	// once (deleted ones do not count); 1000 when zero, none when negative.
	MaxSnapshots int
	// MaxLabelBytes caps a snapshot label; 1024 when zero.
	MaxLabelBytes int
	// Logger receives the daemon's log; slog.Default() when nil.
	Logger *slog.Logger
	// Version is reported by /healthz.
	Version string
	// PrivatePaths are more host paths of the daemon's own (a private
	// directory holding its socket, say) that, like DataDir, Socket and
	// TokenFile, are never staged into a session nor written by apply, and
	// that /healthz reports to the admin so vfsd run can hide them.
	PrivatePaths []string
	// RootDirs is how sessions of a contract that asks for a directory on
	// disk (contract.RootDirectory: weakincentives' root_path) get it:
	// RootDirsFUSE (the default, "" too) mounts the session there, and
	// falls back to a copy where mounting fails; RootDirsCopy always
	// writes a copy, refreshed when the contract's state is read (no FUSE
	// mount per session).
	RootDirs string
	// RootDirParent is where those directories are made; the operating
	// system's temporary directory (os.TempDir: $TMPDIR, else /tmp) when
	// empty.
	RootDirParent string
	// NoRemount leaves the FUSE and overlay mounts recorded in the
	// sessions' metadata down at start (they stay recorded, for the next
	// daemon): for a daemon run inside one CLI command, whose mounts would
	// last no longer than the command.
	NoRemount bool
	// KeepMounts makes Close leave kernel overlay mounts mounted (after a
	// last ingest) for the next daemon on the same data directory to take
	// over, rather than unmount them: for a daemon whose mounts are
	// containers' volumes (vfsd csi), which must outlive a restart of the
	// daemon. FUSE mounts die with their server either way and are
	// unmounted, and mounted again at the next start.
	KeepMounts bool

	// HeaderTimeout bounds reading a request's headers; 10s when zero.
	HeaderTimeout time.Duration
	// BodyTimeout bounds the wait for each read of a request body: a
	// client that sends nothing for this long has its connection closed,
	// while one that keeps sending may take as long as it needs (large
	// blob uploads). Responses are not bound by it (event streams, MCP).
	// 30s when zero.
	BodyTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle this long; 2m when
	// zero.
	IdleTimeout time.Duration
	// MaxConns bounds the connections open at once on each listener (the
	// Unix socket, and the TCP listener, each its own); past it a new
	// connection is answered 503 unavailable and closed. 512 when zero.
	MaxConns int
	// AllowOrigins are browser origins ("https://app.example") allowed to
	// call the MCP endpoints, besides loopback origins and an origin that
	// is the request's own IP-literal host. A request with any other
	// Origin header is refused (403), against DNS rebinding; requests
	// without one (non-browser clients) are not affected.
	AllowOrigins []string

	// Remote, if set, is the s3:// URL of the object store this daemon
	// shares snapshots through (see package s3store): snapshots are pushed
	// there after they are taken, and snapshots this daemon lacks are
	// fetched from there, their blobs on first read.
	Remote string
	// RemoteCacheBytes bounds the blobs fetched from the remote that are
	// kept locally; snapshot.DefaultRemoteCacheBytes when zero.
	RemoteCacheBytes int64
	// RemoteGrace is the remote garbage collection's grace period;
	// snapshot.DefaultRemoteGrace when zero.
	RemoteGrace time.Duration
	// RemoteGCMaxEntries and RemoteGCMaxSpoolBytes bound what remote
	// garbage collection holds (hashes in memory, manifests spooled to a
	// temporary file); past either it deletes nothing and says so. The
	// snapshot package's defaults when zero.
	RemoteGCMaxEntries    int
	RemoteGCMaxSpoolBytes int64
	// Name is this daemon's name in the fleet (with a remote): what
	// vfsd daemon list shows and vfsd session move --to names. When empty,
	// the name kept in DataDir/fleet-name, else a new one (host name and
	// four hex digits) kept there.
	Name string
	// FleetLease is how long a session's ownership holds without renewal
	// (coord.DefaultLease when zero); MaxClockSkew the most the fleet's
	// clocks may disagree (coord.DefaultSkew when zero). See
	// docs/fleets.md.
	FleetLease   time.Duration
	MaxClockSkew time.Duration
}

// privatePaths are the host paths no session may stage or write: the data
// directory, the socket, the token file and PrivatePaths.
func (c Config) privatePaths() []string {
	return append([]string{c.DataDir, c.Socket, c.TokenFile}, c.PrivatePaths...)
}

// Defaults.
const (
	defaultJanitorInterval = 30 * time.Second
	defaultShutdownTimeout = 10 * time.Second
	defaultMaxBlobBytes    = 1 << 30
	defaultHeaderTimeout   = 10 * time.Second
	defaultBodyTimeout     = 30 * time.Second
	defaultIdleTimeout     = 2 * time.Minute
	defaultMaxConns        = 512
	// The quotas: a session may hold a large build tree (16 GiB, a
	// million entries) but not fill the disk; a thousand snapshots is far
	// more than a session uses, yet bounds what one can leave behind.
	defaultMaxSessionBytes = 16 << 30
	defaultMaxSessionFiles = 1_000_000
	defaultMaxSnapshots    = 1000
	defaultMaxLabelBytes   = 1024
)

// withDefaults validates c and fills in its defaults.
func (c Config) withDefaults() (Config, error) {
	if c.DataDir == "" {
		return c, errors.New("daemon config: DataDir is required")
	}
	abs, err := filepath.Abs(c.DataDir)
	if err != nil {
		return c, fmt.Errorf("daemon config: data dir %s: %w", c.DataDir, err)
	}
	c.DataDir = abs
	if c.Socket == "" {
		c.Socket = filepath.Join(c.DataDir, "vfsd.sock")
	}
	if c.Socket, err = filepath.Abs(c.Socket); err != nil {
		return c, fmt.Errorf("daemon config: socket: %w", err)
	}
	if c.TokenFile == "" {
		c.TokenFile = filepath.Join(c.DataDir, "token")
	}
	if c.DefaultTTL < 0 {
		return c, errors.New("daemon config: DefaultTTL must not be negative")
	}
	if c.JanitorInterval <= 0 {
		c.JanitorInterval = defaultJanitorInterval
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = defaultShutdownTimeout
	}
	if c.MaxBlobBytes <= 0 {
		c.MaxBlobBytes = defaultMaxBlobBytes
	}
	if c.HeaderTimeout <= 0 {
		c.HeaderTimeout = defaultHeaderTimeout
	}
	if c.BodyTimeout <= 0 {
		c.BodyTimeout = defaultBodyTimeout
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = defaultIdleTimeout
	}
	if c.MaxConns <= 0 {
		c.MaxConns = defaultMaxConns
	}
	switch c.RootDirs {
	case "":
		c.RootDirs = RootDirsFUSE
	case RootDirsFUSE, RootDirsCopy:
	default:
		return c, fmt.Errorf("daemon config: root dirs %q: use %s or %s", c.RootDirs, RootDirsFUSE, RootDirsCopy)
	}
	if c.RootDirParent != "" {
		if c.RootDirParent, err = filepath.Abs(c.RootDirParent); err != nil {
			return c, fmt.Errorf("daemon config: root dir parent: %w", err)
		}
	}
	c.AllowOrigins = slices.Clone(c.AllowOrigins)
	for i, o := range c.AllowOrigins {
		norm, err := weborigin.Normalize(o)
		if err != nil {
			return c, fmt.Errorf("daemon config: allow-origin: %w", err)
		}
		c.AllowOrigins[i] = norm
	}
	c.MaxSessionBytes = orDefault(c.MaxSessionBytes, defaultMaxSessionBytes)
	c.MaxSessionFiles = orDefault(c.MaxSessionFiles, defaultMaxSessionFiles)
	c.MaxSnapshots = int(orDefault(int64(c.MaxSnapshots), defaultMaxSnapshots))
	if c.MaxLabelBytes <= 0 {
		c.MaxLabelBytes = defaultMaxLabelBytes
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Version == "" {
		c.Version = "devel"
	}
	return c, nil
}

// orDefault returns def for a zero limit, 0 (unbounded) for a negative one,
// and v otherwise.
func orDefault(v, def int64) int64 {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}
