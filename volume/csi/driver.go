package csi

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/daemon"
)

// DefaultName is the driver's name (a StorageClass's provisioner, a
// CSIDriver object's name).
const DefaultName = "csi.vfsd.io"

// TopologyKey is the topology segment a volume is accessible from: the
// node whose daemon holds its session.
const TopologyKey = "topology.csi.vfsd.io/node"

// Options configures a Driver.
type Options struct {
	// Name is the driver's name; DefaultName when empty.
	Name string
	// Version is reported by GetPluginInfo.
	Version string
	// NodeID names this node (the Kubernetes node name). Required.
	NodeID string
	// StateDir holds the driver's records (see the package doc). Required.
	StateDir string
	// TargetRoot is the directory every publish target must lie beneath
	// (the kubelet's root, /var/lib/kubelet): a target elsewhere, or
	// reached through a symlink, is refused. Required.
	TargetRoot string
	// DefaultBackend is how volumes whose parameters name no backend are
	// mounted: api.BackendAuto (the default), BackendOverlay or
	// BackendFUSE.
	DefaultBackend string
	// InlineFolders lets inline ephemeral volumes stage host folders (the
	// folders parameter in a pod's volumeAttributes). Off by default:
	// volumeAttributes are written by whoever may create pods, and would
	// reach every folder beneath the daemon's --allow-root directories;
	// inline volumes can then only start empty or fork a snapshot.
	InlineFolders bool
	// Logger receives the driver's log; slog.Default() when nil.
	Logger *slog.Logger
}

// Driver serves the CSI services on top of a daemon.
type Driver struct {
	csipb.UnimplementedIdentityServer
	csipb.UnimplementedControllerServer
	csipb.UnimplementedNodeServer

	d    *daemon.Daemon
	opts Options
	log  *slog.Logger
	recs *records

	// names serialises calls on one volume (by its ID), snapNames on one
	// snapshot name, targets on one publish target.
	names, snapNames, targets keyedMutex
}

// New returns a driver serving the daemon d's sessions as volumes.
func New(d *daemon.Daemon, opts Options) (*Driver, error) {
	if opts.Name == "" {
		opts.Name = DefaultName
	}
	if opts.NodeID == "" {
		return nil, errors.New("csi: a node ID is required (vfsd csi --node-id, or $NODE_NAME)")
	}
	if opts.StateDir == "" || opts.TargetRoot == "" {
		return nil, errors.New("csi: StateDir and TargetRoot are required")
	}
	if !filepath.IsAbs(opts.TargetRoot) {
		return nil, fmt.Errorf("csi: the target root %q must be an absolute path", opts.TargetRoot)
	}
	opts.TargetRoot = filepath.Clean(opts.TargetRoot)
	switch opts.DefaultBackend {
	case "":
		opts.DefaultBackend = api.BackendAuto
	case api.BackendAuto, api.BackendOverlay, api.BackendFUSE:
	default:
		return nil, fmt.Errorf("csi: backend %q: use overlay, fuse or auto", opts.DefaultBackend)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	recs, err := newRecords(opts.StateDir)
	if err != nil {
		return nil, err
	}
	return &Driver{d: d, opts: opts, log: opts.Logger, recs: recs}, nil
}

// Register registers the Identity, Controller and Node services on s.
func (drv *Driver) Register(s *grpc.Server) {
	csipb.RegisterIdentityServer(s, drv)
	csipb.RegisterControllerServer(s, drv)
	csipb.RegisterNodeServer(s, drv)
}

// NewServer returns a gRPC server with the driver's services registered,
// logging every call that fails (and, at debug level, every call).
func (drv *Driver) NewServer() *grpc.Server {
	s := grpc.NewServer(grpc.UnaryInterceptor(drv.logCalls))
	drv.Register(s)
	return s
}

func (drv *Driver) logCalls(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	start := time.Now()
	resp, err := h(ctx, req)
	method := info.FullMethod[strings.LastIndexByte(info.FullMethod, '/')+1:]
	if err != nil {
		st, _ := status.FromError(err)
		drv.log.Info("csi call failed", "method", method, "code", st.Code().String(), "err", st.Message(), "ms", time.Since(start).Milliseconds())
	} else {
		drv.log.Debug("csi call", "method", method, "ms", time.Since(start).Milliseconds())
	}
	return resp, err
}

// Listen listens on a CSI endpoint: unix:///path/csi.sock, unix:/path or
// a plain path. A socket left at the path by an earlier run is removed
// first; the socket is made mode 0600 (the kubelet and the sidecars
// connect as root).
func Listen(endpoint string) (net.Listener, error) {
	p := endpoint
	switch {
	case strings.HasPrefix(p, "unix://"):
		p = strings.TrimPrefix(p, "unix://")
	case strings.HasPrefix(p, "unix:"):
		p = strings.TrimPrefix(p, "unix:")
	case strings.Contains(p, "://"):
		return nil, fmt.Errorf("csi endpoint %q: only unix sockets are served (unix:///path/csi.sock)", endpoint)
	}
	if !filepath.IsAbs(p) {
		return nil, fmt.Errorf("csi endpoint %q: give an absolute socket path", endpoint)
	}
	if fi, err := os.Lstat(p); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("csi endpoint %s exists and is not a socket; remove it or choose another path", p)
		}
		if err := os.Remove(p); err != nil {
			return nil, fmt.Errorf("csi endpoint: remove the old socket: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, fmt.Errorf("csi endpoint: %w", err)
	}
	ln, err := net.Listen("unix", p)
	if err != nil {
		return nil, fmt.Errorf("csi endpoint: %w", err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("csi endpoint: %w", err)
	}
	return ln, nil
}

// Serve serves the driver on ln until ctx is done, then stops gracefully
// (calls in flight finish, for at most 10 s).
func (drv *Driver) Serve(ctx context.Context, ln net.Listener) error {
	s := drv.NewServer()
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(ln) }()
	drv.log.Info("csi serving", "driver", drv.opts.Name, "node", drv.opts.NodeID, "endpoint", ln.Addr().String(),
		"target_root", drv.opts.TargetRoot, "backend", drv.opts.DefaultBackend)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	done := make(chan struct{})
	go func() { s.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		s.Stop()
	}
	return nil
}
