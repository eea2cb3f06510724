//go:build linux

package csi_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/daemon"
	"github.com/vfsd/vfsd/mount/overlay"
	"github.com/vfsd/vfsd/volume/csi"
)

// env is a daemon with the driver in front of it on a real Unix socket,
// and CSI clients of it.
type env struct {
	t        *testing.T
	d        *daemon.Daemon
	dataDir  string
	endpoint string // the socket's path
	kubelet  string // the target root
	allow    string // the daemon's allow-root
	id       csipb.IdentityClient
	ctl      csipb.ControllerClient
	node     csipb.NodeClient
}

type envOpts struct {
	backend       string
	inlineFolders bool
	remote        string // the daemon's --remote
}

// requireRoot skips unless the test runs as root with /dev/fuse: the
// driver mounts.
func requireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the CSI driver mounts volumes: run as root (CI does)")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("no /dev/fuse: %v", err)
	}
}

// requireOverlay skips unless the kernel overlay backend can mount here.
func requireOverlay(t testing.TB) {
	t.Helper()
	if err := overlay.Available(); err != nil {
		t.Skipf("overlay backend unavailable: %v", err)
	}
}

func newEnv(t *testing.T, o envOpts) *env {
	t.Helper()
	requireRoot(t)
	sockDir, err := os.MkdirTemp("", "csi") // short: a Unix socket's path is at most 108 bytes
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	e := &env{t: t, dataDir: t.TempDir(), endpoint: filepath.Join(sockDir, "csi.sock"),
		kubelet: t.TempDir(), allow: t.TempDir()}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	e.d, err = daemon.New(context.Background(), daemon.Config{DataDir: e.dataDir, AllowRoots: []string{e.allow}, Logger: logger, Remote: o.remote})
	require.NoError(t, err)
	drv, err := csi.New(e.d, csi.Options{NodeID: "node-1", StateDir: filepath.Join(e.dataDir, "csi"),
		TargetRoot: e.kubelet, DefaultBackend: o.backend, InlineFolders: o.inlineFolders, Logger: logger})
	require.NoError(t, err)
	ln, err := csi.Listen("unix://" + e.endpoint)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- drv.Serve(ctx, ln) }()
	conn, err := grpc.NewClient("unix://"+e.endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	e.id, e.ctl, e.node = csipb.NewIdentityClient(conn), csipb.NewControllerClient(conn), csipb.NewNodeClient(conn)
	t.Cleanup(func() {
		conn.Close()
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(20 * time.Second):
			t.Error("the driver did not stop")
		}
		require.NoError(t, e.d.Close())
	})
	return e
}

// ctx is a context for one call.
func (e *env) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	e.t.Cleanup(cancel)
	return ctx
}

// mountCap is the capability of a read-write file system volume.
func mountCap() *csipb.VolumeCapability {
	return &csipb.VolumeCapability{
		AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{}},
		AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}
}

// create makes a volume named name with params.
func (e *env) create(name string, params map[string]string) *csipb.Volume {
	e.t.Helper()
	r, err := e.ctl.CreateVolume(e.ctx(), &csipb.CreateVolumeRequest{Name: name, Parameters: params,
		VolumeCapabilities: []*csipb.VolumeCapability{mountCap()}})
	require.NoError(e.t, err)
	return r.GetVolume()
}

// target is a pod-like target path for volume vol (its parent exists, as
// the kubelet makes it).
func (e *env) target(pod, vol string) string {
	dir := filepath.Join(e.kubelet, "pods", pod, "volumes", "kubernetes.io~csi", vol)
	require.NoError(e.t, os.MkdirAll(dir, 0o750))
	return filepath.Join(dir, "mount")
}

func (e *env) publish(vol, target string, vctx map[string]string) error {
	_, err := e.node.NodePublishVolume(e.ctx(), &csipb.NodePublishVolumeRequest{VolumeId: vol, TargetPath: target,
		VolumeCapability: mountCap(), VolumeContext: vctx})
	return err
}

func (e *env) unpublish(vol, target string) error {
	_, err := e.node.NodeUnpublishVolume(e.ctx(), &csipb.NodeUnpublishVolumeRequest{VolumeId: vol, TargetPath: target})
	return err
}

// session describes the session behind volume id.
func (e *env) session(id string) (*api.Session, error) {
	return e.d.Session(context.Background(), id)
}

// requireCode checks that err is a gRPC status with code c.
func requireCode(t *testing.T, c codes.Code, err error, msgAndArgs ...any) {
	t.Helper()
	require.Error(t, err, msgAndArgs...)
	st, ok := status.FromError(err)
	require.True(t, ok, "not a gRPC status: %v", err)
	require.Equal(t, c.String(), st.Code().String(), "%v", err)
}
