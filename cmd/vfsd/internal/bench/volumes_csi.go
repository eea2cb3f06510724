//go:build linux

package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/daemon"
	"github.com/vfsd/vfsd/mount/overlay"
	"github.com/vfsd/vfsd/volume/csi"
)

// VolumesCSIOptions configure the CSI part of `vfsd bench volumes`.
type VolumesCSIOptions struct {
	Sizes    []int    // workspace sizes in files; 2,000 and 50,000 when empty
	Forks    int      // volumes forked from one snapshot per round; 10 when zero
	Repeats  int      // interleaved rounds; the median is reported; 3 when zero
	Backends []string // fuse, overlay; both (overlay where it can mount) when empty
	Dir      string   // where trees, copies and the daemon live; the system temp dir when ""
	// NoCopies skips the cp -a baseline (copies_ms, copy_to_read_ms stay
	// 0): at 50,000 files on a busy disk ten copies take minutes a round.
	NoCopies bool
	Log      io.Writer
}

// VolumesCSIResult is one line `vfsd bench volumes` prints for the CSI
// path: one workspace size, one mount backend.
type VolumesCSIResult struct {
	Path    string `json:"path"` // "csi"
	Backend string `json:"backend"`
	Files   int    `json:"files"`
	Bytes   int64  `json:"bytes"`
	Forks   int    `json:"forks"`
	Repeats int    `json:"repeats"`
	Load    string `json:"load"` // the 1-minute load average at the start, and the cores

	// ForksReadyMs is creating Forks volumes from one VolumeSnapshot
	// (CreateVolume with a snapshot content source) and publishing each at
	// a pod's target (NodePublishVolume), one after the other, over the
	// driver's Unix socket; ForkReadyMs is that per volume, the
	// "forked volume ready" figure.
	ForksReadyMs float64 `json:"forks_ready_ms"`
	ForkReadyMs  float64 `json:"fork_ready_ms"`
	// CopiesMs is the obvious alternative: cp -a of the tree Forks times.
	CopiesMs      float64 `json:"copies_ms,omitempty"`
	CopiesVsForks float64 `json:"copies_vs_forks,omitempty"`

	// PublishToReadMs is from NodePublishVolume of a fresh fork to the
	// first file read in a bubblewrap "container" bind-mounting the
	// target (the container started after the publish returns, as the
	// kubelet starts it); ContainerReadMs is the same container reading
	// the same file from a plain directory (its start-up alone), and
	// CopyToReadMs is cp -a of the tree then that container's read.
	PublishToReadMs float64 `json:"publish_to_read_ms"`
	ContainerReadMs float64 `json:"container_read_ms"`
	CopyToReadMs    float64 `json:"copy_to_read_ms,omitempty"`

	// Overlay only. MetaColdMs is building the overlay metadata layer of
	// the snapshot from nothing (what CreateSnapshot now does ahead);
	// ForkReadyColdMs is a fork's CreateVolume and NodePublishVolume when
	// the layer was not built ahead (the publish builds it).
	MetaColdMs      float64 `json:"meta_cold_ms,omitempty"`
	ForkReadyColdMs float64 `json:"fork_ready_cold_ms,omitempty"`
}

// volumesRound is one round's measurements.
type volumesRound struct {
	forks, copies, publishRead, containerRead, copyRead, metaCold, forkCold time.Duration
}

// VolumesCSI runs the CSI benchmark and writes one JSON object per size
// and backend.
func VolumesCSI(ctx context.Context, opts VolumesCSIOptions, out io.Writer) error {
	if os.Geteuid() != 0 {
		return errors.New("bench volumes: the CSI driver mounts volumes: run as root")
	}
	if len(opts.Sizes) == 0 {
		opts.Sizes = []int{2000, 50000}
	}
	if opts.Forks <= 0 {
		opts.Forks = 10
	}
	if opts.Repeats <= 0 {
		opts.Repeats = 3
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if len(opts.Backends) == 0 {
		opts.Backends = []string{api.BackendFUSE}
		if overlay.Available() == nil {
			opts.Backends = append(opts.Backends, api.BackendOverlay)
		}
	}
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		return errors.New("bench volumes: bubblewrap (bwrap) runs the containers: install it")
	}
	for _, n := range opts.Sizes {
		for _, backend := range opts.Backends {
			res, err := volumesCSISize(ctx, opts, bwrap, n, backend)
			if err != nil {
				return fmt.Errorf("bench volumes (csi, %s, %d files): %w", backend, n, err)
			}
			if err := json.NewEncoder(out).Encode(res); err != nil {
				return err
			}
		}
	}
	return nil
}

// csiBench is a daemon and its CSI driver in this process, and a client of
// the driver over its Unix socket.
type csiBench struct {
	d       *daemon.Daemon
	ctl     csipb.ControllerClient
	node    csipb.NodeClient
	kubelet string
	stop    func()
}

func startCSIBench(ctx context.Context, root, allow, backend string) (*csiBench, error) {
	dataDir := filepath.Join(root, "data")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d, err := daemon.New(ctx, daemon.Config{DataDir: dataDir, AllowRoots: []string{allow}, Logger: log,
		NoRemount: true, MaxSessionFiles: -1, MaxSessionBytes: -1, MaxSnapshots: -1})
	if err != nil {
		return nil, err
	}
	b := &csiBench{d: d, kubelet: filepath.Join(root, "kubelet")}
	if err := os.MkdirAll(b.kubelet, 0o755); err != nil {
		d.Close()
		return nil, err
	}
	drv, err := csi.New(d, csi.Options{NodeID: "bench", StateDir: filepath.Join(dataDir, "csi"), TargetRoot: b.kubelet,
		DefaultBackend: backend, Logger: log})
	if err != nil {
		d.Close()
		return nil, err
	}
	sock := filepath.Join(root, "csi.sock")
	ln, err := csi.Listen("unix://" + sock)
	if err != nil {
		d.Close()
		return nil, err
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- drv.Serve(sctx, ln) }()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		cancel()
		<-done
		d.Close()
		return nil, err
	}
	b.ctl, b.node = csipb.NewControllerClient(conn), csipb.NewNodeClient(conn)
	b.stop = func() {
		conn.Close()
		cancel()
		<-done
		d.Close()
	}
	return b, nil
}

var benchCap = &csipb.VolumeCapability{
	AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{}},
	AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}

// forkAndPublish creates volume name from snapshot snap and publishes it
// at a pod target; it returns the target.
func (b *csiBench) forkAndPublish(ctx context.Context, name, snap string) (string, error) {
	_, err := b.ctl.CreateVolume(ctx, &csipb.CreateVolumeRequest{Name: name, VolumeCapabilities: []*csipb.VolumeCapability{benchCap},
		VolumeContentSource: &csipb.VolumeContentSource{Type: &csipb.VolumeContentSource_Snapshot{
			Snapshot: &csipb.VolumeContentSource_SnapshotSource{SnapshotId: snap}}}})
	if err != nil {
		return "", err
	}
	return b.publish(ctx, name)
}

func (b *csiBench) publish(ctx context.Context, name string) (string, error) {
	dir := filepath.Join(b.kubelet, "pods", name, "volumes", "kubernetes.io~csi", name)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	target := filepath.Join(dir, "mount")
	_, err := b.node.NodePublishVolume(ctx, &csipb.NodePublishVolumeRequest{VolumeId: name, TargetPath: target, VolumeCapability: benchCap})
	return target, err
}

// drop unpublishes and deletes volume name.
func (b *csiBench) drop(ctx context.Context, name, target string) error {
	if target != "" {
		if _, err := b.node.NodeUnpublishVolume(ctx, &csipb.NodeUnpublishVolumeRequest{VolumeId: name, TargetPath: target}); err != nil {
			return err
		}
	}
	_, err := b.ctl.DeleteVolume(ctx, &csipb.DeleteVolumeRequest{VolumeId: name})
	return err
}

// containerRead runs a bubblewrap container that bind-mounts dir at /work
// and reads file from it, and returns when it has.
func containerRead(ctx context.Context, bwrap, dir, file string) error {
	args := []string{"--bind", dir, "/work", "--ro-bind", "/usr", "/usr"}
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib64"} {
		if fi, err := os.Lstat(d); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			l, _ := os.Readlink(d)
			args = append(args, "--symlink", l, d)
		} else if err == nil {
			args = append(args, "--ro-bind", d, d)
		}
	}
	args = append(args, "--proc", "/proc", "--dev", "/dev", "--unshare-pid", "--die-with-parent",
		"cat", "/work/"+file)
	out, err := exec.CommandContext(ctx, bwrap, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("container read: %v: %s", err, out)
	}
	if len(out) == 0 {
		return errors.New("container read: the file was empty")
	}
	return nil
}

func timed(fn func() error) (time.Duration, error) {
	start := time.Now()
	err := fn()
	return time.Since(start), err
}

func volumesCSISize(ctx context.Context, opts VolumesCSIOptions, bwrap string, n int, backend string) (VolumesCSIResult, error) {
	res := VolumesCSIResult{Path: "csi", Backend: backend, Files: n, Forks: opts.Forks, Repeats: opts.Repeats}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		res.Load = fmt.Sprintf("%s on %d cores", strings.Fields(string(b))[0], runtime.NumCPU())
	}
	root, err := os.MkdirTemp(opts.Dir, "vfsd-bench-volumes-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(root)
	allow := filepath.Join(root, "src")
	tree := filepath.Join(allow, "tree")
	fmt.Fprintf(opts.Log, "csi %s: writing a workspace of %d files...\n", backend, n)
	if res.Bytes, _, err = writeRemoteTree(tree, n); err != nil {
		return res, err
	}
	first := remoteTreeFile(0)
	b, err := startCSIBench(ctx, root, allow, backend)
	if err != nil {
		return res, err
	}
	defer b.stop()
	fmt.Fprintf(opts.Log, "csi %s: staging it as a volume and snapshotting it...\n", backend)
	if _, err := b.ctl.CreateVolume(ctx, &csipb.CreateVolumeRequest{Name: "golden", VolumeCapabilities: []*csipb.VolumeCapability{benchCap},
		Parameters: map[string]string{csi.ParamFolders: tree}}); err != nil {
		return res, err
	}
	snap, err := b.ctl.CreateSnapshot(ctx, &csipb.CreateSnapshotRequest{Name: "golden", SourceVolumeId: "golden"})
	if err != nil {
		return res, err
	}
	snapID := snap.GetSnapshot().GetSnapshotId()
	metaCache := filepath.Join(root, "data", "overlay", "meta")
	var rounds []volumesRound
	for r := range opts.Repeats {
		fmt.Fprintf(opts.Log, "csi %s %d files: round %d/%d\n", backend, n, r+1, opts.Repeats)
		var rr volumesRound
		// vfsd: Forks volumes forked and published.
		quiesce(root)
		var targets []string
		rr.forks, err = timed(func() error {
			for i := range opts.Forks {
				t, err := b.forkAndPublish(ctx, fmt.Sprintf("f%d-%d", r, i), snapID)
				if err != nil {
					return err
				}
				targets = append(targets, t)
			}
			return nil
		})
		if err != nil {
			return res, err
		}
		// The baseline: cp -a, Forks times.
		quiesce(root)
		rr.copies, err = timed(func() error {
			if opts.NoCopies {
				return nil
			}
			for i := range opts.Forks {
				if out, err := exec.CommandContext(ctx, "cp", "-a", tree, filepath.Join(root, fmt.Sprintf("copy%d", i))).CombinedOutput(); err != nil {
					return fmt.Errorf("cp -a: %v: %s", err, out)
				}
			}
			return nil
		})
		if err != nil {
			return res, err
		}
		// From publish to the first read in a container; the container
		// alone on a plain directory; a copy then the container.
		quiesce(root)
		name := fmt.Sprintf("r%d", r)
		if _, err := b.ctl.CreateVolume(ctx, &csipb.CreateVolumeRequest{Name: name, VolumeCapabilities: []*csipb.VolumeCapability{benchCap},
			VolumeContentSource: &csipb.VolumeContentSource{Type: &csipb.VolumeContentSource_Snapshot{
				Snapshot: &csipb.VolumeContentSource_SnapshotSource{SnapshotId: snapID}}}}); err != nil {
			return res, err
		}
		var rt string
		rr.publishRead, err = timed(func() error {
			var err error
			if rt, err = b.publish(ctx, name); err != nil {
				return err
			}
			return containerRead(ctx, bwrap, rt, first)
		})
		if err != nil {
			return res, err
		}
		if rr.containerRead, err = timed(func() error { return containerRead(ctx, bwrap, tree, first) }); err != nil {
			return res, err
		}
		cp := filepath.Join(root, "copy-read")
		rr.copyRead, err = timed(func() error {
			if opts.NoCopies {
				return nil
			}
			if out, err := exec.CommandContext(ctx, "cp", "-a", tree, cp).CombinedOutput(); err != nil {
				return fmt.Errorf("cp -a: %v: %s", err, out)
			}
			return containerRead(ctx, bwrap, cp, first)
		})
		if err != nil {
			return res, err
		}
		// Clean up, off the clock.
		for i, t := range targets {
			if err := b.drop(ctx, fmt.Sprintf("f%d-%d", r, i), t); err != nil {
				return res, err
			}
		}
		if err := b.drop(ctx, name, rt); err != nil {
			return res, err
		}
		for i := range opts.Forks {
			os.RemoveAll(filepath.Join(root, fmt.Sprintf("copy%d", i)))
		}
		os.RemoveAll(cp)
		if backend == api.BackendOverlay {
			// The metadata layer from nothing, and a fork whose publish
			// builds it (nothing mounted uses a layer now).
			if err := os.RemoveAll(metaCache); err != nil {
				return res, err
			}
			quiesce(root)
			if rr.metaCold, err = timed(func() error { _, err := b.d.PrepareOverlay(ctx, snapID); return err }); err != nil {
				return res, err
			}
			if err := os.RemoveAll(metaCache); err != nil {
				return res, err
			}
			quiesce(root)
			cold := fmt.Sprintf("c%d", r)
			var ct string
			if rr.forkCold, err = timed(func() error { var err error; ct, err = b.forkAndPublish(ctx, cold, snapID); return err }); err != nil {
				return res, err
			}
			if err := b.drop(ctx, cold, ct); err != nil {
				return res, err
			}
			// Built ahead again, as CreateSnapshot leaves it.
			if _, err := b.d.PrepareOverlay(ctx, snapID); err != nil {
				return res, err
			}
		}
		rounds = append(rounds, rr)
	}
	med := func(f func(volumesRound) time.Duration) time.Duration {
		ds := make([]time.Duration, len(rounds))
		for i, rr := range rounds {
			ds[i] = f(rr)
		}
		return medianDur(ds)
	}
	forks := med(func(r volumesRound) time.Duration { return r.forks })
	copies := med(func(r volumesRound) time.Duration { return r.copies })
	res.ForksReadyMs, res.ForkReadyMs = ms(forks), ms(forks/time.Duration(opts.Forks))
	if !opts.NoCopies {
		res.CopiesMs, res.CopiesVsForks = ms(copies), ratio(copies, forks)
	}
	res.PublishToReadMs = ms(med(func(r volumesRound) time.Duration { return r.publishRead }))
	res.ContainerReadMs = ms(med(func(r volumesRound) time.Duration { return r.containerRead }))
	res.CopyToReadMs = ms(med(func(r volumesRound) time.Duration { return r.copyRead }))
	if backend == api.BackendOverlay {
		res.MetaColdMs = ms(med(func(r volumesRound) time.Duration { return r.metaCold }))
		res.ForkReadyColdMs = ms(med(func(r volumesRound) time.Duration { return r.forkCold }))
	}
	return res, nil
}
