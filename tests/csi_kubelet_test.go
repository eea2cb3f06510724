//go:build linux

package tests

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/vfsd/vfsd/internal/mountinfo"
	"github.com/vfsd/vfsd/mount/overlay"
)

// csiNode is a `vfsd csi` process as a kubelet sees it: its CSI socket,
// its HTTP API socket, and its data, kubelet and allow-root directories,
// which outlive restarts.
type csiNode struct {
	t                            *testing.T
	p                            *daemonProc
	dataDir, apiSocket, endpoint string
	kubelet, allow               string
	ctl                          csipb.ControllerClient
	node                         csipb.NodeClient
	conn                         *grpc.ClientConn
}

func newCSINode(t *testing.T, backend string) *csiNode {
	if os.Geteuid() != 0 {
		t.Skip("the CSI driver mounts volumes: run as root (CI does)")
	}
	dataDir, apiSocket := newDaemonDirs(t)
	n := &csiNode{t: t, dataDir: dataDir, apiSocket: apiSocket,
		endpoint: filepath.Join(filepath.Dir(apiSocket), "csi.sock"), kubelet: t.TempDir(), allow: t.TempDir()}
	n.start(backend)
	return n
}

// start runs the plugin and waits until it answers Probe.
func (n *csiNode) start(backend string) {
	t := n.t
	t.Helper()
	n.p = &daemonProc{t: t, bin: vfsdBinary(t), dataDir: n.dataDir, socket: n.apiSocket, verb: "csi",
		args: []string{"--endpoint", "unix://" + n.endpoint, "--node-id", "node-1", "--kubelet-dir", n.kubelet,
			"--allow-root", n.allow, "--backend", backend}}
	n.p.start()
	t.Cleanup(n.p.kill)
	if n.conn != nil {
		n.conn.Close()
	}
	conn, err := grpc.NewClient("unix://"+n.endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	n.conn, n.ctl, n.node = conn, csipb.NewControllerClient(conn), csipb.NewNodeClient(conn)
	id := csipb.NewIdentityClient(conn)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		r, err := id.Probe(ctx, &csipb.ProbeRequest{})
		cancel()
		if err == nil && r.GetReady().GetValue() {
			return
		}
		require.True(t, time.Now().Before(deadline), "the plugin does not answer Probe: %v\n%s", err, n.p.logText())
		time.Sleep(50 * time.Millisecond)
	}
}

func (n *csiNode) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	n.t.Cleanup(cancel)
	return ctx
}

// mountsUnder lists what is mounted at or beneath dir.
func mountsUnder(t *testing.T, dir string) []string {
	ms, err := mountinfo.Read()
	require.NoError(t, err)
	var out []string
	for _, m := range ms {
		if m.MountPoint == dir || strings.HasPrefix(m.MountPoint, dir+"/") {
			out = append(out, m.MountPoint+" ("+m.FSType+")")
		}
	}
	return out
}

// container runs script in a bubblewrap sandbox that bind-mounts the
// volume's target at /work and sig (a host directory) at /sig, as a
// container runtime binds a pod's volume.
func container(t *testing.T, ctx context.Context, target, sig, script string) *exec.Cmd {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skip("bubblewrap is not installed (.ci/run installs it)")
	}
	args := []string{"--bind", target, "/work", "--bind", sig, "/sig", "--ro-bind", "/usr", "/usr"}
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib64"} {
		if fi, err := os.Lstat(d); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			l, _ := os.Readlink(d)
			args = append(args, "--symlink", l, d)
		} else if err == nil {
			args = append(args, "--ro-bind", d, d)
		}
	}
	args = append(args, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--unshare-pid", "--die-with-parent",
		"sh", "-euc", script)
	return exec.CommandContext(ctx, bwrap, args...)
}

// progress reads the count the container writes to sig/progress.
func progress(sig string) int {
	b, _ := os.ReadFile(filepath.Join(sig, "progress"))
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// TestCSIKubeletSequence plays a kubelet against the real `vfsd csi`
// binary with the kernel overlay backend: CreateVolume stages a folder,
// NodePublishVolume mounts it at a pod's target path, a bubblewrap
// "container" bind-mounting it writes and reads files without pause
// while the node plugin is killed (SIGKILL) and started again, then
// stopped (SIGTERM, an upgrade) and started again; the container never
// sees an error, everything it wrote is in the volume's session (read
// through the HTTP API's tools), and NodeUnpublishVolume leaves nothing
// mounted.
func TestCSIKubeletSequence(t *testing.T) {
	if err := overlay.Available(); err != nil {
		t.Skipf("overlay backend unavailable: %v", err)
	}
	n := newCSINode(t, "overlay")
	src := filepath.Join(n.allow, "app")
	require.NoError(t, os.MkdirAll(src, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n"), 0o644))
	_, err := n.ctl.CreateVolume(n.ctx(), &csipb.CreateVolumeRequest{Name: "pvc-k", Parameters: map[string]string{"folders": src},
		VolumeCapabilities: []*csipb.VolumeCapability{csiMountCap()}})
	require.NoError(t, err)
	podDir := filepath.Join(n.kubelet, "pods", "uid-1", "volumes", "kubernetes.io~csi", "pvc-k")
	require.NoError(t, os.MkdirAll(podDir, 0o750))
	target := filepath.Join(podDir, "mount")
	_, err = n.node.NodePublishVolume(n.ctx(), &csipb.NodePublishVolumeRequest{VolumeId: "pvc-k", TargetPath: target,
		VolumeCapability: csiMountCap()})
	require.NoError(t, err)

	sig := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := container(t, ctx, target, sig, `
mkdir -p /work/out
i=0
while [ ! -e /sig/stop ]; do
  i=$((i+1))
  echo "line $i" > /work/out/$i.txt
  [ "$(cat /work/out/$i.txt)" = "line $i" ]
  [ "$(cat /work/main.go)" = "package main" ]
  echo $i > /sig/progress.tmp && mv /sig/progress.tmp /sig/progress
  sleep 0.01
done
echo $i > /sig/final`)
	out := &strings.Builder{}
	c.Stdout, c.Stderr = out, out
	require.NoError(t, c.Start())
	exited := make(chan error, 1)
	go func() { exited <- c.Wait() }()
	advance := func(by int, what string) {
		t.Helper()
		goal := progress(sig) + by
		deadline := time.Now().Add(60 * time.Second)
		for progress(sig) < goal {
			select {
			case err := <-exited:
				t.Fatalf("the container stopped %s: %v\n%s", what, err, out)
			case <-time.After(10 * time.Millisecond):
			}
			require.True(t, time.Now().Before(deadline), "the container made no progress %s:\n%s", what, out)
		}
	}
	advance(5, "before the restarts")
	n.p.kill9()
	advance(10, "while the node plugin was dead")
	n.start("overlay")
	advance(10, "after the plugin was killed and started again")
	n.p.stop()
	require.NotEmpty(t, mountsUnder(t, target), "a stopped plugin leaves the volume to the container")
	advance(10, "while the plugin was stopped")
	n.start("overlay")
	advance(10, "after the plugin was stopped and started again")
	require.NoError(t, os.WriteFile(filepath.Join(sig, "stop"), nil, 0o644))
	select {
	case err := <-exited:
		require.NoError(t, err, "the container saw an error:\n%s", out)
	case <-time.After(60 * time.Second):
		t.Fatal("the container did not finish")
	}
	b, err := os.ReadFile(filepath.Join(sig, "final"))
	require.NoError(t, err)
	final, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	require.GreaterOrEqual(t, final, 45)

	// Everything the container wrote, across both restarts, is the
	// session's: the volume's tools read it.
	api := n.p.client()
	for _, i := range []int{1, final / 2, final} {
		require.Equal(t, fmt.Sprintf("line %d\n", i), readTool(t, api, "pvc-k", fmt.Sprintf("out/%d.txt", i)))
	}
	_, err = n.node.NodeUnpublishVolume(n.ctx(), &csipb.NodeUnpublishVolumeRequest{VolumeId: "pvc-k", TargetPath: target})
	require.NoError(t, err)
	require.Empty(t, mountsUnder(t, n.kubelet), "unpublish leaves nothing mounted")
	_, err = os.Stat(target)
	require.True(t, os.IsNotExist(err), "the target directory is removed")
	_, err = n.ctl.DeleteVolume(n.ctx(), &csipb.DeleteVolumeRequest{VolumeId: "pvc-k"})
	require.NoError(t, err)
	n.p.stop()
	require.NotContains(t, n.p.logText(), "level=ERROR")
}

// TestCSIFUSERestart documents what a node plugin restart does to a FUSE
// volume: the FUSE server lives in the plugin, so a running container's
// view of the volume dies with it (ENOTCONN, "Transport endpoint is not
// connected"); the restarted plugin mounts the volume at the target again,
// so a container started afterwards (the pod restarted) sees it whole.
// docs/volumes.md says so and recommends the overlay backend.
func TestCSIFUSERestart(t *testing.T) {
	n := newCSINode(t, "fuse")
	_, err := n.ctl.CreateVolume(n.ctx(), &csipb.CreateVolumeRequest{Name: "pvc-f", VolumeCapabilities: []*csipb.VolumeCapability{csiMountCap()}})
	require.NoError(t, err)
	podDir := filepath.Join(n.kubelet, "pods", "uid-2", "volumes", "kubernetes.io~csi", "pvc-f")
	require.NoError(t, os.MkdirAll(podDir, 0o750))
	target := filepath.Join(podDir, "mount")
	_, err = n.node.NodePublishVolume(n.ctx(), &csipb.NodePublishVolumeRequest{VolumeId: "pvc-f", TargetPath: target,
		VolumeCapability: csiMountCap()})
	require.NoError(t, err)
	sig := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := container(t, ctx, target, sig, `echo kept > /work/a.txt; echo 1 > /sig/progress
while [ ! -e /sig/go ]; do sleep 0.01; done
cat /work/a.txt 2>&1 || echo "read failed"`)
	out := &strings.Builder{}
	c.Stdout, c.Stderr = out, out
	require.NoError(t, c.Start())
	for progress(sig) < 1 {
		time.Sleep(10 * time.Millisecond)
	}
	n.p.kill9()
	n.start("fuse")
	require.NoError(t, os.WriteFile(filepath.Join(sig, "go"), nil, 0o644))
	require.NoError(t, c.Wait())
	require.Contains(t, out.String(), "not connected", "the running container lost the volume:\n%s", out)

	c2 := container(t, ctx, target, t.TempDir(), `cat /work/a.txt`)
	b, err := c2.CombinedOutput()
	require.NoError(t, err, "%s", b)
	require.Equal(t, "kept\n", string(b), "a new container sees the volume whole")
	_, err = n.node.NodeUnpublishVolume(n.ctx(), &csipb.NodeUnpublishVolumeRequest{VolumeId: "pvc-f", TargetPath: target})
	require.NoError(t, err)
	require.Empty(t, mountsUnder(t, n.kubelet))
	n.p.stop()
}

func csiMountCap() *csipb.VolumeCapability {
	return &csipb.VolumeCapability{
		AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{}},
		AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}
}
