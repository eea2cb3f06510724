//go:build linux

package dockerplugin_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// dockerd is a Docker daemon the test started for itself: its own data
// root, exec root (and so its own containerd), socket and pidfile, no
// iptables and no bridge (containers run with --network none).
type dockerd struct {
	t     *testing.T
	root  string
	host  string // DOCKER_HOST
	cli   string // the docker client
	cmd   *exec.Cmd
	log   string
	waitc chan error
}

// needDocker skips the test with the reason where dockerd cannot run here,
// and fails it instead under VFSD_REQUIRE_DOCKER=1 (CI, which installs
// docker.io and busybox-static).
func needDocker(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("VFSD_REQUIRE_DOCKER") == "1" {
		t.Fatalf("VFSD_REQUIRE_DOCKER=1, but %s", msg)
	}
	t.Skipf("skipping the real-dockerd test: %s (install docker.io and busybox-static and run as root; CI does)", msg)
}

// startDockerd starts a private dockerd and stops it when the test ends.
func startDockerd(t *testing.T) *dockerd {
	t.Helper()
	if os.Geteuid() != 0 {
		needDocker(t, "it needs root")
	}
	if !fuseAvailable() {
		needDocker(t, "it needs /dev/fuse")
	}
	for _, bin := range []string{"dockerd", "containerd", "runc"} {
		if _, err := exec.LookPath(bin); err != nil {
			needDocker(t, "%s is not installed", bin)
		}
	}
	// The client Debian ships with dockerd; another on PATH may be newer
	// than the daemon (it negotiates down, but this one always matches).
	cli := "/usr/bin/docker"
	if _, err := os.Stat(cli); err != nil {
		if cli, err = exec.LookPath("docker"); err != nil {
			needDocker(t, "no docker client")
		}
	}
	// Short: containerd's sockets live under the exec root.
	root, err := os.MkdirTemp("", "vd")
	require.NoError(t, err)
	k := &dockerd{t: t, root: root, host: "unix://" + filepath.Join(root, "d.sock"), cli: cli,
		log: filepath.Join(root, "dockerd.log"), waitc: make(chan error, 1)}
	logf, err := os.Create(k.log)
	require.NoError(t, err)
	k.cmd = exec.Command("dockerd", "--iptables=false", "--ip6tables=false", "--bridge=none",
		"--data-root", filepath.Join(root, "data"), "--exec-root", filepath.Join(root, "exec"),
		"-H", k.host, "--pidfile", filepath.Join(root, "d.pid"), "--config-file", filepath.Join(root, "daemon.json"))
	require.NoError(t, os.WriteFile(filepath.Join(root, "daemon.json"), []byte("{}\n"), 0o644))
	k.cmd.Stdout, k.cmd.Stderr = logf, logf
	k.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, k.cmd.Start())
	logf.Close()
	go func() { k.waitc <- k.cmd.Wait() }()
	t.Cleanup(k.stop)
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, err := k.try(10*time.Second, "version", "--format", "{{.Server.Version}}")
		if err == nil {
			t.Logf("dockerd %s running in %s", strings.TrimSpace(out), root)
			break
		}
		select {
		case err := <-k.waitc:
			k.waitc <- err
			needDocker(t, "dockerd exited (%v): %s", err, k.logTail())
		default:
		}
		if time.Now().After(deadline) {
			needDocker(t, "dockerd did not answer within 60s (%v): %s", err, k.logTail())
		}
		time.Sleep(200 * time.Millisecond)
	}
	return k
}

// logTail is the end of dockerd's log.
func (k *dockerd) logTail() string {
	b, _ := os.ReadFile(k.log)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// try runs the docker client with args, bounded by timeout.
func (k *dockerd) try(timeout time.Duration, args ...string) (string, error) {
	return k.tryIn(timeout, nil, args...)
}

func (k *dockerd) tryIn(timeout time.Duration, stdin io.Reader, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.cli, args...)
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+k.host, "DOCKER_CONFIG="+filepath.Join(k.root, "cli"))
	cmd.Stdin = stdin
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("docker %s: timed out after %s", strings.Join(args, " "), timeout)
	}
	return out.String(), err
}

// docker runs the client and requires it to succeed.
func (k *dockerd) docker(args ...string) string {
	k.t.Helper()
	out, err := k.try(90*time.Second, args...)
	require.NoError(k.t, err, "docker %s: %s", strings.Join(args, " "), out)
	return out
}

// dockerFails runs the client and requires it to fail, saying each of says.
func (k *dockerd) dockerFails(args []string, says ...string) string {
	k.t.Helper()
	out, err := k.try(90*time.Second, args...)
	require.Error(k.t, err, "docker %s should fail: %s", strings.Join(args, " "), out)
	for _, s := range says {
		require.Contains(k.t, out, s)
	}
	return out
}

// stop stops dockerd (SIGTERM, then SIGKILL after 30s), takes down what it
// left mounted and removes its directories.
func (k *dockerd) stop() {
	if out, err := k.try(60*time.Second, "ps", "-aq"); err == nil && strings.TrimSpace(out) != "" {
		_, _ = k.try(60*time.Second, append([]string{"rm", "-f"}, strings.Fields(out)...)...)
	}
	_ = k.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.waitc:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-k.cmd.Process.Pid, syscall.SIGKILL)
		<-k.waitc
	}
	// containerd and its shims are dockerd's children, in its group.
	_ = syscall.Kill(-k.cmd.Process.Pid, syscall.SIGKILL)
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		var under []string
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], k.root+"/") {
				under = append(under, f[4])
			}
		}
		slices.Reverse(under)
		for _, m := range under {
			_ = unix.Unmount(m, unix.MNT_DETACH)
		}
	}
	_ = os.RemoveAll(k.root)
}

// importBusybox builds an image of Debian's static busybox (every applet a
// symlink to it) and imports it, without a registry.
func (k *dockerd) importBusybox(tag string) {
	k.t.Helper()
	bin, err := exec.LookPath("busybox")
	if err != nil {
		needDocker(k.t, "busybox is not installed (busybox-static)")
	}
	body, err := os.ReadFile(bin)
	require.NoError(k.t, err)
	list, err := exec.Command(bin, "--list").Output()
	if err != nil || !bytes.Contains(list, []byte("sh\n")) {
		needDocker(k.t, "%s --list gives no applets (%v)", bin, err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range []string{"bin/", "tmp/", "work/", "proc/", "sys/", "dev/", "etc/"} {
		require.NoError(k.t, tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755}))
	}
	require.NoError(k.t, tw.WriteHeader(&tar.Header{Name: "bin/busybox", Mode: 0o755, Size: int64(len(body))}))
	_, err = tw.Write(body)
	require.NoError(k.t, err)
	for _, applet := range strings.Fields(string(list)) {
		if applet != "busybox" {
			require.NoError(k.t, tw.WriteHeader(&tar.Header{Name: "bin/" + applet, Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777}))
		}
	}
	require.NoError(k.t, tw.Close())
	out, err := k.tryIn(90*time.Second, &buf, "import", "--change", "ENV PATH=/bin", "-", tag)
	require.NoError(k.t, err, "docker import: %s", out)
}

// TestDockerd runs the volume plugin under a real dockerd: create with
// options, run a container writing files the session sees, share one
// volume between two containers, snapshot while a container runs, fork,
// remove, and refuse bad options leaving nothing behind.
func TestDockerd(t *testing.T) {
	k := startDockerd(t)
	const img = "vfsd-busybox:test"
	k.importBusybox(img)
	driver := fmt.Sprintf("vfsdtest%d", os.Getpid())
	e := newEnv(t, filepath.Join("/run/docker/plugins", driver+".sock"))
	ctx := context.Background()
	run := func(args ...string) string {
		return k.docker(append([]string{"run", "--rm", "--network", "none"}, args...)...)
	}

	// Create: the folder staged as the options shape it.
	k.docker("volume", "create", "-d", driver, "-o", "folder="+e.src, "-o", "include=**/*.go", "-o", "exclude=vendor/**", "ws1")
	require.Contains(t, k.docker("volume", "ls", "--format", "{{.Driver}} {{.Name}}"), driver+" ws1")
	var inspect []struct {
		Driver string
		Status map[string]any
	}
	require.NoError(t, json.Unmarshal([]byte(k.docker("volume", "inspect", "ws1")), &inspect))
	require.Equal(t, driver, inspect[0].Driver)
	require.Equal(t, "ws1", inspect[0].Status["session"])

	// A container writes; the session's diff and tools see it.
	out := run("-v", "ws1:/work", img, "sh", "-c",
		"cat /work/main.go && test ! -e /work/README.md && test ! -e /work/vendor && echo built > /work/out.txt && mkdir /work/gen && echo y > /work/gen/y && grep ' /work ' /proc/self/mountinfo")
	require.Contains(t, out, "package main")
	require.Contains(t, out, "nosuid")
	require.Contains(t, out, "nodev")
	require.ElementsMatch(t, []string{"added /out.txt", "added /gen", "added /gen/y"}, e.changed("ws1"))
	r, err := e.d.CallTool(ctx, "ws1", "read_file", json.RawMessage(`{"path":"out.txt"}`), "http", "")
	require.NoError(t, err)
	require.Contains(t, string(r.Body), "built")
	require.Empty(t, e.ok("VolumeDriver.Path", vol{Name: "ws1"})["Mountpoint"], "docker run --rm released the mount")

	// Two containers share one mount; a snapshot is taken while the first
	// runs; a tool's write reaches both.
	wait := func(f string) string {
		return fmt.Sprintf("i=0; while [ ! -e /work/%s ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; test -e /work/%s", f, f)
	}
	a := strings.TrimSpace(k.docker("run", "-d", "--network", "none", "-v", "ws1:/work", img, "sh", "-c",
		"echo a > /work/from-a && "+wait("go")+" && echo done > /work/a-done"))
	poll(t, "the session sees container a's write", func() bool {
		return slices.Contains(e.changed("ws1"), "added /from-a")
	})
	snap, err := e.d.Snapshot(ctx, "ws1", "while a runs", nil)
	require.NoError(t, err)
	b := strings.TrimSpace(k.docker("run", "-d", "--network", "none", "-v", "ws1:/work", img, "sh", "-c",
		wait("go")+" && cat /work/from-a > /work/b-saw-a"))
	poll(t, "both containers hold the volume", func() bool {
		st := e.ok("VolumeDriver.Get", vol{Name: "ws1"})["Volume"].(map[string]any)["Status"].(map[string]any)
		return st["mounts"] == float64(2)
	})
	dir := e.ok("VolumeDriver.Path", vol{Name: "ws1"})["Mountpoint"].(string)
	require.NotEmpty(t, dir)
	require.Equal(t, 1, strings.Count(readMountinfo(t), " "+dir+" "), "one mount, shared")
	w, err := e.d.CallTool(ctx, "ws1", "write_file", json.RawMessage(`{"path":"go","content":"go\n"}`), "http", "")
	require.NoError(t, err)
	require.False(t, w.IsError, "%s", w.Body)
	for _, c := range []string{a, b} {
		require.Equal(t, "0", strings.TrimSpace(k.docker("wait", c)), "container %s: %s", c, k.docker("logs", c))
		k.docker("rm", c)
	}
	for _, f := range []string{"a-done", "b-saw-a"} {
		r, err := e.d.CallTool(ctx, "ws1", "read_file", json.RawMessage(`{"path":"`+f+`"}`), "http", "")
		require.NoError(t, err)
		require.False(t, r.IsError, "%s: %s", f, r.Body)
	}
	require.Empty(t, e.ok("VolumeDriver.Path", vol{Name: "ws1"})["Mountpoint"], "the last container's exit unmounted it")
	require.NotContains(t, readMountinfo(t), " "+dir+" ")

	// A fork of the snapshot taken while a ran: a's write, not the later ones.
	k.docker("volume", "create", "-d", driver, "-o", "fork="+snap.ID[:16], "ws2")
	out = run("-v", "ws2:/work", img, "sh", "-c", "cat /work/from-a && test ! -e /work/go && test ! -e /work/b-saw-a && echo fork-ok")
	require.Contains(t, out, "fork-ok")

	// Bad options: docker volume create fails naming the option; nothing
	// is left, in Docker or in vfsd.
	k.dockerFails([]string{"volume", "create", "-d", driver, "-o", "folder=" + e.src, "-o", "inclde=**/*.go", "bad"},
		`option inclde="**/*.go"`, "they take folder, include, exclude")
	k.dockerFails([]string{"volume", "create", "-d", driver, "-o", "folder=/etc", "bad"}, "outside the allowed roots")
	k.dockerFails([]string{"volume", "create", "-d", driver, "-o", "backend=zfs", "bad"}, "option backend", "fuse (the default), overlay or auto")
	require.NotContains(t, k.docker("volume", "ls", "--format", "{{.Name}}"), "bad")
	require.ElementsMatch(t, []string{"ws1", "ws2"}, e.sessions())

	// docker volume rm closes the sessions; the snapshot stays.
	k.docker("volume", "rm", "ws1", "ws2")
	require.Empty(t, e.sessions())
	require.Empty(t, e.stateFiles())
	_, err = e.d.GetSnapshot(ctx, snap.ID)
	require.NoError(t, err)
	require.NotContains(t, k.docker("volume", "ls", "--format", "{{.Name}}"), "ws")
}

// poll waits up to 30s for cond.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// readMountinfo is the test process's mount table.
func readMountinfo(t *testing.T) string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	return string(b)
}
