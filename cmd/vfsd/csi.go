package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/daemon"
	"github.com/vfsd/vfsd/httpapi"
	"github.com/vfsd/vfsd/volume/csi"
)

func newCSICmd(g *globalFlags) *cobra.Command {
	var (
		endpoint, nodeID, name, kubeletDir, backend string
		dataDir, logLevel, remote                   string
		roots                                       []string
		inlineFolders                               bool
		sessionBytes                                = byteSize(16 << 30)
		sessionFiles                                int64
	)
	cmd := &cobra.Command{
		Use:   "csi --endpoint unix:///csi/csi.sock --node-id NODE [--allow-root DIR]...",
		Short: "Serve vfsd volumes to Kubernetes: a CSI driver (Identity, Controller and Node)",
		Example: `  vfsd csi --endpoint unix:///csi/csi.sock --node-id "$NODE_NAME" --allow-root /srv/src \
    --data-dir /var/lib/vfsd-csi --kubelet-dir /var/lib/kubelet
  vfsd --socket /var/lib/vfsd-csi/vfsd.sock session list     # the volumes' sessions, over the HTTP API`,
		Long: `Runs a vfsd daemon and serves it as a Kubernetes CSI driver over a Unix
socket: CreateVolume makes a session (staged from the StorageClass's host
folders, or an O(1) fork of a VolumeSnapshot or of another volume),
CreateSnapshot snapshots it, NodePublishVolume mounts it at the pod's
target path through the kernel overlay or FUSE; CSI ephemeral inline
volumes are sessions of their own for a pod's life. The daemon's HTTP API is
served too, on --socket, so vfsd's tools, diffs, snapshots and log reach the
volumes' sessions.

Overlay mounts outlive the process: killed or stopped (SIGTERM), it leaves
them to the containers, and the next start takes them over. FUSE mounts die
with it (the pods using them must be restarted). Kubernetes deployment:
deploy/kubernetes/; the StorageClass parameters and the rest: docs/volumes.md.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return usageError{fmt.Errorf("--log-level %q: use debug, info, warn or error", logLevel)}
			}
			if nodeID == "" {
				nodeID = os.Getenv("NODE_NAME")
			}
			if nodeID == "" {
				h, err := os.Hostname()
				if err != nil {
					return usageError{errors.New("--node-id is required (or $NODE_NAME)")}
				}
				nodeID = h
			}
			switch backend {
			case api.BackendAuto, api.BackendOverlay, api.BackendFUSE:
			default:
				return usageError{fmt.Errorf("--backend %q: use overlay, fuse or auto", backend)}
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
			if !filepath.IsAbs(kubeletDir) {
				return usageError{fmt.Errorf("--kubelet-dir %q: give an absolute path", kubeletDir)}
			}
			socket := value(g.socket, envSocket)
			if socket == "" {
				socket = filepath.Join(dataDir, "vfsd.sock")
			}
			logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			cfg := daemon.Config{
				DataDir: dataDir, Socket: socket, AllowRoots: roots, Logger: logger, Version: version(),
				MaxSessionBytes: noLimit(int64(sessionBytes)), MaxSessionFiles: noLimit(sessionFiles),
				Remote: remote,
				// Its mounts are running containers' volumes: a stop
				// leaves the overlay ones to the next start.
				KeepMounts: true,
			}
			ln, err := csi.Listen(endpoint)
			if err != nil {
				return err
			}
			srv, err := httpapi.Open(cmd.Context(), cfg)
			if err != nil {
				ln.Close()
				return err
			}
			drv, err := csi.New(srv.Daemon(), csi.Options{Name: name, Version: version(), NodeID: nodeID,
				StateDir: filepath.Join(dataDir, "csi"), TargetRoot: kubeletDir, DefaultBackend: backend,
				InlineFolders: inlineFolders, Logger: logger})
			if err != nil {
				ln.Close()
				srv.Daemon().Close()
				return err
			}
			ctx, cancel := context.WithCancel(cmd.Context())
			defer cancel()
			apiDone := make(chan error, 1)
			go func() { apiDone <- srv.Serve(ctx) }()
			csiErr := drv.Serve(ctx, ln)
			cancel()
			apiErr := <-apiDone // closes the daemon: overlay mounts released, not unmounted
			return errors.Join(csiErr, apiErr)
		},
	}
	f := cmd.Flags()
	f.StringVar(&endpoint, "endpoint", "unix:///csi/csi.sock", "the CSI socket the kubelet and the sidecars connect to")
	f.StringVar(&nodeID, "node-id", "", "this node's name (default $NODE_NAME, else the host name)")
	f.StringVar(&name, "driver-name", csi.DefaultName, "the driver's name: a StorageClass's provisioner, the CSIDriver object's name")
	f.StringVar(&kubeletDir, "kubelet-dir", "/var/lib/kubelet", "publish targets must lie beneath this directory (reached without symlinks)")
	f.StringVar(&backend, "backend", api.BackendAuto, "how volumes whose StorageClass names no backend are mounted: overlay, fuse or auto")
	f.BoolVar(&inlineFolders, "inline-folders", false, "let inline ephemeral volumes stage host folders (any pod author writes their attributes)")
	f.StringVar(&dataDir, "data-dir", "/var/lib/vfsd-csi", "where the daemon keeps everything: sessions, the store, the driver's records")
	f.StringArrayVar(&roots, "allow-root", nil, "a host directory volumes may be staged from (repeatable)")
	f.StringVar(&remote, "remote", "", "share snapshots through this S3-compatible store (as vfsd serve --remote): snapshots are ready_to_use once pushed")
	f.Var(&sessionBytes, "max-session-bytes", "the byte quota of volumes created without a capacity, like 16GiB (0: none)")
	f.Int64Var(&sessionFiles, "max-session-files", 1_000_000, "the default quota of a volume's files, directories and symlinks (0: none)")
	f.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	return cmd
}
