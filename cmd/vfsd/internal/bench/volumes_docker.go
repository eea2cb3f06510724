package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/daemon"
	"github.com/vfsd/vfsd/mount/overlay"
	"github.com/vfsd/vfsd/volume/dockerplugin"
)

// DockerVolumesOptions configure the Docker volume plugin's part of `vfsd
// bench volumes`.
type DockerVolumesOptions struct {
	Sizes    []int    // workspace sizes, in files
	Volumes  int      // volumes made per round
	Rounds   int      // interleaved rounds; medians are reported
	Backends []string // fuse, overlay (left out where it cannot mount)
	// DockerHost, if set, is a dockerd (unix:///...) for the baseline's
	// `docker volume create` (local driver); without it, or when it does
	// not answer, the baseline is cp -a alone.
	DockerHost string
	Dir        string // where to work; the system temp dir when ""
	Log        io.Writer
}

// DockerVolumesResult is one line of the Docker plugin's part: for one
// size and backend, the time to make Volumes volumes ready — each forked
// from one snapshot, mounted, and one file read from it by a fresh
// process — against a local volume filled with cp -a each.
type DockerVolumesResult struct {
	Path     string `json:"path"` // "docker_plugin"
	Files    int    `json:"files"`
	Bytes    int64  `json:"bytes"`
	Volumes  int    `json:"volumes"`
	Rounds   int    `json:"rounds"`
	Backend  string `json:"backend"`
	Baseline string `json:"baseline"` // "docker volume create + cp -a" or "cp -a"

	// VfsdMs is the median round's time for all the volumes: Create
	// (-o fork=SNAPSHOT) and Mount over the plugin's socket, then `cat`
	// of one file in the mount.
	VfsdMs float64 `json:"vfsd_ms"`
	// VfsdFirstMs is the median time to the first volume's read.
	VfsdFirstMs float64 `json:"vfsd_first_volume_ms"`
	// CreateMs and MountMs split VfsdMs's protocol calls (median rounds).
	CreateMs float64 `json:"vfsd_create_ms"`
	MountMs  float64 `json:"vfsd_mount_ms"`
	// BaselineMs is the same for the baseline.
	BaselineMs      float64 `json:"baseline_ms"`
	BaselineFirstMs float64 `json:"baseline_first_volume_ms"`
	// Ratio is BaselineMs / VfsdMs: how many times faster vfsd is.
	Ratio float64 `json:"ratio"`
	// Load is /proc/loadavg when the size started: the machine is shared.
	Load string `json:"load"`
}

// DockerVolumes runs the Docker plugin's part of `vfsd bench volumes`
// and writes one JSON object per size and backend.
func DockerVolumes(ctx context.Context, opts DockerVolumesOptions, out io.Writer) error {
	logf := func(format string, args ...any) {
		if opts.Log != nil {
			fmt.Fprintf(opts.Log, format+"\n", args...)
		}
	}
	backends := slices.Clone(opts.Backends)
	if slices.Contains(backends, api.BackendOverlay) && overlay.Available() != nil {
		logf("overlay backend left out: %v", overlay.Available())
		backends = slices.DeleteFunc(backends, func(b string) bool { return b == api.BackendOverlay })
	}
	if len(backends) == 0 {
		return fmt.Errorf("no backend to measure")
	}
	docker := ""
	if opts.DockerHost != "" {
		if cli, err := exec.LookPath("docker"); err == nil {
			if o, err := exec.CommandContext(ctx, cli, "-H", opts.DockerHost, "version").CombinedOutput(); err == nil {
				docker = cli
			} else {
				logf("docker at %s does not answer (%v: %s); the baseline is cp -a alone", opts.DockerHost, err, bytes.TrimSpace(o))
			}
		}
	}
	for _, n := range opts.Sizes {
		if err := dockerVolumesSize(ctx, opts, n, backends, docker, logf, out); err != nil {
			return fmt.Errorf("%d files: %w", n, err)
		}
	}
	return nil
}

// dockerVolumesSize measures one size.
func dockerVolumesSize(ctx context.Context, opts DockerVolumesOptions, n int, backends []string, docker string, logf func(string, ...any), out io.Writer) error {
	work, err := os.MkdirTemp(opts.Dir, "vfsd-bench-volumes-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	tree := filepath.Join(work, "tree")
	logf("writing %d files", n)
	size, _, err := writeRemoteTree(tree, n)
	if err != nil {
		return err
	}
	if err := warm(tree); err != nil {
		return err
	}
	sock := filepath.Join(work, "p.sock")
	d, err := daemon.New(ctx, daemon.Config{DataDir: filepath.Join(work, "data"), Socket: filepath.Join(work, "api.sock"),
		AllowRoots: []string{tree}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	defer d.Close()
	p, err := dockerplugin.New(d, dockerplugin.Config{Socket: sock, StateDir: filepath.Join(work, "data", "docker-plugin")})
	if err != nil {
		return err
	}
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = p.Serve(pctx) }()
	select {
	case <-p.Ready():
	case <-time.After(10 * time.Second):
		return fmt.Errorf("the plugin did not listen")
	}
	pc := &pluginClient{c: &http.Client{Timeout: 10 * time.Minute, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}}
	// The one snapshot every volume is forked from: the tree staged as a
	// volume, snapshotted.
	logf("staging the tree and snapshotting it")
	if err := pc.call("VolumeDriver.Create", map[string]any{"Name": "origin", "Opts": map[string]string{"folder": tree}}, nil); err != nil {
		return err
	}
	snap, err := d.Snapshot(ctx, "origin", "bench volumes", nil)
	if err != nil {
		return err
	}
	probe := remoteTreeFile(n / 2)
	baseline := "cp -a"
	if docker != "" {
		baseline = "docker volume create + cp -a"
	}
	load, _ := os.ReadFile("/proc/loadavg")
	type times struct{ total, first, create, mount []time.Duration }
	vfsd := map[string]*times{}
	for _, b := range backends {
		vfsd[b] = &times{}
	}
	base := &times{}
	for round := range opts.Rounds {
		// Interleaved: each round starts with another contender.
		order := append([]string{"baseline"}, backends...)
		for range round % len(order) {
			order = append(order[1:], order[0])
		}
		for _, who := range order {
			var tot, first, cr, mo time.Duration
			var err error
			if who == "baseline" {
				tot, first, err = baselineVolumes(ctx, opts.Volumes, tree, probe, filepath.Join(work, "local"), docker, opts.DockerHost, round)
				if err == nil {
					base.total, base.first = append(base.total, tot), append(base.first, first)
				}
			} else {
				tot, first, cr, mo, err = pluginVolumes(ctx, pc, opts.Volumes, snap.ID, who, probe, round)
				if err == nil {
					t := vfsd[who]
					t.total, t.first, t.create, t.mount = append(t.total, tot), append(t.first, first), append(t.create, cr), append(t.mount, mo)
				}
			}
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", round+1, who, err)
			}
			logf("%d files, round %d, %s: %d volumes in %.0f ms (first %.0f ms)", n, round+1, who, opts.Volumes, ms(tot), ms(first))
		}
	}
	enc := json.NewEncoder(out)
	for _, b := range backends {
		t := vfsd[b]
		r := DockerVolumesResult{Path: "docker_plugin", Files: n, Bytes: size, Volumes: opts.Volumes, Rounds: opts.Rounds,
			Backend: b, Baseline: baseline, VfsdMs: medianMs(t.total), VfsdFirstMs: medianMs(t.first),
			CreateMs: medianMs(t.create), MountMs: medianMs(t.mount),
			BaselineMs: medianMs(base.total), BaselineFirstMs: medianMs(base.first), Load: strings.TrimSpace(string(load))}
		r.Ratio = r.BaselineMs / r.VfsdMs
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

// pluginVolumes makes n volumes through the plugin, as dockerd would for
// `docker volume create -d vfsd -o fork=SNAP` and `docker run -v`, and
// reads one file from each with cat; then removes them (not timed).
func pluginVolumes(ctx context.Context, pc *pluginClient, n int, snap, backend, probe string, round int) (total, first, create, mount time.Duration, err error) {
	names := make([]string, n)
	start := time.Now()
	for i := range n {
		names[i] = fmt.Sprintf("v%d-%s-%d", round, backend, i)
		t0 := time.Now()
		if err := pc.call("VolumeDriver.Create", map[string]any{"Name": names[i], "Opts": map[string]string{"fork": snap, "backend": backend}}, nil); err != nil {
			return 0, 0, 0, 0, err
		}
		t1 := time.Now()
		var m struct{ Mountpoint string }
		if err := pc.call("VolumeDriver.Mount", map[string]any{"Name": names[i], "ID": "c" + names[i]}, &m); err != nil {
			return 0, 0, 0, 0, err
		}
		create, mount = create+t1.Sub(t0), mount+time.Since(t1)
		if err := exec.CommandContext(ctx, "cat", filepath.Join(m.Mountpoint, probe)).Run(); err != nil {
			return 0, 0, 0, 0, fmt.Errorf("read %s in the volume: %w", probe, err)
		}
		if i == 0 {
			first = time.Since(start)
		}
	}
	total = time.Since(start)
	for _, name := range names {
		if err := pc.call("VolumeDriver.Unmount", map[string]any{"Name": name, "ID": "c" + name}, nil); err != nil {
			return 0, 0, 0, 0, err
		}
		if err := pc.call("VolumeDriver.Remove", map[string]any{"Name": name}, nil); err != nil {
			return 0, 0, 0, 0, err
		}
	}
	return total, first, create, mount, nil
}

// baselineVolumes makes n volumes the obvious way — `docker volume
// create` (local driver) and cp -a of the tree into it, or a directory
// filled with cp -a where no dockerd is given — and reads one file from
// each with cat; then removes them (not timed).
func baselineVolumes(ctx context.Context, n int, tree, probe, local, docker, host string, round int) (total, first time.Duration, err error) {
	dirs := make([]string, n)
	var names []string
	defer func() {
		if len(names) > 0 {
			_ = exec.Command(docker, append([]string{"-H", host, "volume", "rm", "-f"}, names...)...).Run()
		}
		_ = os.RemoveAll(local)
	}()
	start := time.Now()
	for i := range n {
		if docker != "" {
			name := fmt.Sprintf("vfsd-bench-%d-%d", round, i)
			names = append(names, name)
			if o, err := exec.CommandContext(ctx, docker, "-H", host, "volume", "create", name).CombinedOutput(); err != nil {
				return 0, 0, fmt.Errorf("docker volume create: %v: %s", err, o)
			}
			o, err := exec.CommandContext(ctx, docker, "-H", host, "volume", "inspect", "-f", "{{.Mountpoint}}", name).Output()
			if err != nil {
				return 0, 0, fmt.Errorf("docker volume inspect: %w", err)
			}
			dirs[i] = strings.TrimSpace(string(o))
		} else {
			dirs[i] = filepath.Join(local, fmt.Sprint(i))
			if err := os.MkdirAll(dirs[i], 0o755); err != nil {
				return 0, 0, err
			}
		}
		if o, err := exec.CommandContext(ctx, "cp", "-a", tree+"/.", dirs[i]).CombinedOutput(); err != nil {
			return 0, 0, fmt.Errorf("cp -a: %v: %s", err, o)
		}
		if err := exec.CommandContext(ctx, "cat", filepath.Join(dirs[i], probe)).Run(); err != nil {
			return 0, 0, fmt.Errorf("read %s in the copy: %w", probe, err)
		}
		if i == 0 {
			first = time.Since(start)
		}
	}
	return time.Since(start), first, nil
}

// pluginClient speaks the plugin protocol over its socket.
type pluginClient struct{ c *http.Client }

// call posts body to method and decodes the answer into out (if not nil);
// an answer's Err is an error.
func (pc *pluginClient) call(method string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	resp, err := pc.c.Post("http://plugin/"+method, "application/json", bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	var e struct{ Err string }
	if err := json.Unmarshal(raw, &e); err != nil || e.Err != "" {
		return fmt.Errorf("%s: %s (%v)", method, e.Err, err)
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}
