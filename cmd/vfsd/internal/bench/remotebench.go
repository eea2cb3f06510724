package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
	"github.com/vfsd/vfsd/daemon"
	"github.com/vfsd/vfsd/httpapi"
	"github.com/vfsd/vfsd/internal/s3server"
	"github.com/vfsd/vfsd/snapshot/s3store"
)

// RemoteOptions configure `vfsd bench remote`.
type RemoteOptions struct {
	Files int // workspace size, in files; 50,000 when zero
	// Remote is the s3:// URL to run against (each round under a fresh
	// prefix below it); "" starts versitygw on loopback.
	Remote  string
	Repeats int    // rounds, each on a fresh bucket prefix; the median is reported
	Dir     string // where the tree, the daemons and the server live; the system temp dir when ""
	// Parallel is how many objects the push and the baseline upload at
	// once, and how many read_file calls the lazy read has in flight;
	// the daemon's default (16) when zero.
	Parallel int
	// CPUProfile, if set, is where a CPU profile of the first round's
	// fork and first tool call is written.
	CPUProfile string
	Log        io.Writer
}

// RemoteResult is the line `vfsd bench remote` prints.
type RemoteResult struct {
	Files    int    `json:"files"`
	Dirs     int    `json:"dirs"`
	Bytes    int64  `json:"bytes"`
	Repeats  int    `json:"repeats"`
	Parallel int    `json:"parallel"`
	Server   string `json:"server"` // "versitygw (loopback, started by the bench)" or the remote's URL

	// PushS is the push of the workspace's first snapshot from daemon A
	// to an empty prefix (the background push the snapshot queues, timed
	// by the push itself: listing the prefix, uploading what it lacks).
	PushS float64 `json:"push_s"`
	// PushUploaded is the objects that push sent (blobs plus records).
	PushUploaded int `json:"push_uploaded"`
	// BaselineCopyS is copying the same tree to the bucket file by file
	// with minio-go PutObject, Parallel at once.
	BaselineCopyS  float64 `json:"baseline_copy_s"`
	PushVsBaseline float64 `json:"push_vs_baseline"`

	// ForkFirstCallMs is, on daemon B with an empty cache, forking the
	// remote snapshot by id until the first read_file answers.
	ForkFirstCallMs float64 `json:"fork_first_call_ms"`
	ForkMs          float64 `json:"fork_ms"`       // the fork call alone
	FirstReadMs     float64 `json:"first_read_ms"` // the read_file after it (its blob fetched lazily)
	// LazyReadS is reading every file of the fork through read_file tool
	// calls on B, Parallel in flight, while B's background prefetch runs.
	LazyReadS float64 `json:"lazy_read_s"`
	// LazyReadLocalS is the same reads again, every blob local by then:
	// what the tool calls themselves cost, the floor of LazyReadS.
	LazyReadLocalS     float64 `json:"lazy_read_local_s"`
	LazyReadVsBaseline float64 `json:"lazy_read_vs_baseline"`
	// PrefetchS is the data plane's share of a full lazy read, without
	// tool calls: a third daemon with an empty cache forks the snapshot,
	// and its background prefetch fetches every blob (timed until its
	// cache holds the workspace's bytes).
	PrefetchS          float64 `json:"prefetch_s"`
	PrefetchVsBaseline float64 `json:"prefetch_vs_baseline"`
	// LazyReadFUSES is the full lazy read through the file system instead
	// of tool calls: a fourth empty daemon forks the snapshot, mounts the
	// fork with FUSE, and a child process reads every file, Parallel at a
	// time (cat). Absent where FUSE cannot mount (LazyReadFUSESkipped says
	// why).
	LazyReadFUSES          float64 `json:"lazy_read_fuse_s,omitempty"`
	LazyReadFUSEVsBaseline float64 `json:"lazy_read_fuse_vs_baseline,omitempty"`
	LazyReadFUSESkipped    string  `json:"lazy_read_fuse_skipped,omitempty"`

	// Snap10* are a snapshot on A after 10 files changed, and its push.
	Snap10UploadedBlobs     int     `json:"snap10_uploaded_blobs"`
	Snap10UploadedRecords   int     `json:"snap10_uploaded_records"`
	Snap10UploadedPacks     int     `json:"snap10_uploaded_packs"`
	Snap10UploadedManifests int     `json:"snap10_uploaded_manifests"`
	Snap10ChangedDirs       int     `json:"snap10_changed_dirs"` // directories on the 10 files' paths, root included: the manifests that must change
	Snap10UploadedBytes     int64   `json:"snap10_uploaded_bytes"`
	Snap10PushS             float64 `json:"snap10_push_s"`

	// The fleet's control plane: hand-off and ref moves (fleetbench.go).
	FleetResult
}

// remoteRound is one round's measurements.
type remoteRound struct {
	push, baseline, fork, firstRead, lazy, snap10 time.Duration
	lazyLocal, prefetch, lazyFUSE                 time.Duration
	fuseSkipped                                   string
	pushUploaded                                  int
	snap10Rep                                     api.PushReport
	changedDirs                                   int
	fleet                                         fleetRound
}

// remoteTreeFile places file i of the remote benchmark's workspace: 100
// files per directory, 10 directories per group.
func remoteTreeFile(i int) string {
	d := i / 100
	return fmt.Sprintf("g%03d/d%04d/f%05d.txt", d/10, d, i)
}

// remoteTreeContent is file i's content: text lines, 512 B to 8 KiB (a
// source tree's small files), distinct per file.
func remoteTreeContent(i int, salt string) []byte {
	rnd := rand.New(rand.NewPCG(uint64(i), 7))
	size := 512 + rnd.IntN(7680)
	var b bytes.Buffer
	for line := 0; b.Len() < size; line++ {
		fmt.Fprintf(&b, "%s%06d line %04d: the quick brown fox jumps over the lazy dog\n", salt, i, line)
	}
	out := b.Bytes()[:size]
	out[size-1] = '\n'
	return out
}

// writeRemoteTree writes the workspace to dir and returns its size.
func writeRemoteTree(dir string, n int) (int64, int, error) {
	var total atomic.Int64
	dirs := map[string]bool{}
	for i := range n {
		for d := path.Dir(remoteTreeFile(i)); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	for d := range dirs {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return 0, 0, err
		}
	}
	err := parallel(n, func(i int) error {
		c := remoteTreeContent(i, "")
		total.Add(int64(len(c)))
		return os.WriteFile(filepath.Join(dir, remoteTreeFile(i)), c, 0o644)
	})
	return total.Load(), len(dirs), err
}

// Remote runs the remote benchmark and writes one JSON object.
func Remote(ctx context.Context, opts RemoteOptions, out io.Writer) error {
	if opts.Files <= 0 {
		opts.Files = 50000
	}
	if opts.Repeats <= 0 {
		opts.Repeats = 3
	}
	if opts.Parallel <= 0 {
		opts.Parallel = 16 // snapshot.RemoteOptions' default, which the daemon uses
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	root, err := os.MkdirTemp(opts.Dir, "vfsd-bench-remote-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	res := RemoteResult{Files: opts.Files, Repeats: opts.Repeats, Parallel: opts.Parallel}

	base := opts.Remote
	var srv *s3server.Server
	if base == "" {
		bin, err := s3server.Find()
		if err != nil {
			return fmt.Errorf("bench remote: %w", err)
		}
		fmt.Fprintf(opts.Log, "starting %s on loopback...\n", bin)
		srv, err = s3server.Start(ctx, bin, root)
		if err != nil {
			return fmt.Errorf("bench remote: %w", err)
		}
		defer srv.Stop()
		// The daemons (in this process) and the baseline's client read
		// their credentials from the environment.
		for _, kv := range srv.Env() {
			k, v, _ := strings.Cut(kv, "=")
			os.Setenv(k, v)
		}
		base = srv.URL("vfsd-bench", "")
		res.Server = "versitygw (loopback, started by the bench)"
	} else {
		cfg, err := s3store.ParseURL(base)
		if err != nil {
			return fmt.Errorf("bench remote: --remote: %w", err)
		}
		res.Server = cfg.String()
	}

	tree := filepath.Join(root, "tree")
	fmt.Fprintf(opts.Log, "writing a workspace of %d files...\n", opts.Files)
	if res.Bytes, res.Dirs, err = writeRemoteTree(tree, opts.Files); err != nil {
		return fmt.Errorf("bench remote: write the workspace: %w", err)
	}
	run := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	var rounds []remoteRound
	for r := range opts.Repeats {
		fmt.Fprintf(opts.Log, "round %d/%d\n", r+1, opts.Repeats)
		rr, err := remoteOnce(ctx, opts, root, tree, base, fmt.Sprintf("%s-r%d", run, r), r, srv, res.Bytes)
		if err != nil {
			return fmt.Errorf("bench remote, round %d: %w", r+1, err)
		}
		rounds = append(rounds, rr)
	}
	med := func(f func(remoteRound) time.Duration) time.Duration {
		ds := make([]time.Duration, len(rounds))
		for i, rr := range rounds {
			ds[i] = f(rr)
		}
		return medianDur(ds)
	}
	push := med(func(r remoteRound) time.Duration { return r.push })
	baseline := med(func(r remoteRound) time.Duration { return r.baseline })
	res.PushS, res.BaselineCopyS, res.PushVsBaseline = secs(push), secs(baseline), ratio(push, baseline)
	res.ForkFirstCallMs = ms(med(func(r remoteRound) time.Duration { return r.fork + r.firstRead }))
	res.ForkMs = ms(med(func(r remoteRound) time.Duration { return r.fork }))
	res.FirstReadMs = ms(med(func(r remoteRound) time.Duration { return r.firstRead }))
	lazy := med(func(r remoteRound) time.Duration { return r.lazy })
	res.LazyReadS, res.LazyReadVsBaseline = secs(lazy), ratio(lazy, baseline)
	res.LazyReadLocalS = secs(med(func(r remoteRound) time.Duration { return r.lazyLocal }))
	prefetch := med(func(r remoteRound) time.Duration { return r.prefetch })
	res.PrefetchS, res.PrefetchVsBaseline = secs(prefetch), ratio(prefetch, baseline)
	if why := rounds[0].fuseSkipped; why != "" {
		res.LazyReadFUSESkipped = why
	} else {
		fuse := med(func(r remoteRound) time.Duration { return r.lazyFUSE })
		res.LazyReadFUSES, res.LazyReadFUSEVsBaseline = secs(fuse), ratio(fuse, baseline)
	}
	res.Snap10PushS = secs(med(func(r remoteRound) time.Duration { return r.snap10 }))
	// Counts are the same every round (they are checked equal below);
	// report the last.
	last := rounds[len(rounds)-1]
	res.PushUploaded = last.pushUploaded
	res.Snap10UploadedBlobs = last.snap10Rep.UploadedBlobs
	res.Snap10UploadedRecords = last.snap10Rep.UploadedRecords
	res.Snap10UploadedPacks = last.snap10Rep.UploadedPacks
	res.Snap10UploadedManifests = last.snap10Rep.UploadedManifests
	res.Snap10UploadedBytes = last.snap10Rep.UploadedBytes
	res.Snap10ChangedDirs = last.changedDirs
	fleet := make([]fleetRound, len(rounds))
	for i, r := range rounds {
		fleet[i] = r.fleet
	}
	res.FleetResult = fleetResult(fleet)
	return json.NewEncoder(out).Encode(res)
}

// withPrefix returns the s3:// URL base with prefix appended to its path.
func withPrefix(base, prefix string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	u.Path = "/" + strings.Trim(path.Join(u.Path, prefix), "/")
	return u.String(), nil
}

// remoteOnce runs one round on a fresh prefix: daemon A imports the tree,
// snapshots and pushes it; the baseline copies the tree; daemon B forks
// the snapshot and reads it; A changes 10 files, snapshots and pushes.
func remoteOnce(ctx context.Context, opts RemoteOptions, root, tree, base, prefix string, round int, srv *s3server.Server, treeBytes int64) (remoteRound, error) {
	var rr remoteRound
	remote, err := withPrefix(base, prefix)
	if err != nil {
		return rr, err
	}
	dir := filepath.Join(root, prefix)
	defer os.RemoveAll(dir)
	defer cleanPrefix(ctx, opts, srv, base, prefix)
	sockDir, err := os.MkdirTemp("", "vfsd-rb-")
	if err != nil {
		return rr, err
	}
	defer os.RemoveAll(sockDir)
	logger := slog.New(slog.NewTextHandler(opts.Log, &slog.HandlerOptions{Level: slog.LevelWarn}))

	a, err := startBenchDaemon(ctx, filepath.Join(dir, "a"), filepath.Join(sockDir, "a.sock"), remote, []string{tree}, logger)
	if err != nil {
		return rr, fmt.Errorf("daemon A: %w", err)
	}
	defer a.stop()
	fmt.Fprintln(opts.Log, "  A imports the workspace...")
	if _, err := a.c.CreateSession(ctx, api.CreateSessionRequest{ID: "ws", Mounts: []api.Mount{{HostPath: tree, MountPath: "/"}}}); err != nil {
		return rr, fmt.Errorf("import on A: %w", err)
	}
	quiesce(dir)

	baseline := func() error {
		fmt.Fprintln(opts.Log, "  baseline: PutObject of every file...")
		d, err := baselineCopy(ctx, remote, tree, opts.Files, opts.Parallel)
		rr.baseline = d
		return err
	}
	if round%2 == 1 { // interleave: the baseline goes first every other round
		if err := baseline(); err != nil {
			return rr, err
		}
	}
	fmt.Fprintln(opts.Log, "  A snapshots; the snapshot's push runs...")
	snap, err := a.c.CreateSnapshot(ctx, "ws", "bench")
	if err != nil {
		return rr, fmt.Errorf("snapshot on A: %w", err)
	}
	rep, err := waitPushed(ctx, a.c, snap.ID)
	if err != nil {
		return rr, err
	}
	rr.push = time.Duration(rep.DurationMs * float64(time.Millisecond))
	rr.pushUploaded = rep.Uploaded
	if round%2 == 0 {
		if err := baseline(); err != nil {
			return rr, err
		}
	}

	b, err := startBenchDaemon(ctx, filepath.Join(dir, "b"), filepath.Join(sockDir, "b.sock"), remote, nil, logger)
	if err != nil {
		return rr, fmt.Errorf("daemon B: %w", err)
	}
	defer b.stop()
	quiesce(dir)
	fmt.Fprintln(opts.Log, "  B forks the snapshot and reads one file...")
	first := remoteTreeFile(opts.Files / 2)
	if round == 0 && opts.CPUProfile != "" {
		f, err := os.Create(opts.CPUProfile)
		if err != nil {
			return rr, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return rr, err
		}
	}
	t := time.Now()
	if _, err := b.c.ForkSnapshot(ctx, snap.ID, api.CreateSessionRequest{ID: "fork"}); err != nil {
		pprof.StopCPUProfile()
		return rr, fmt.Errorf("fork on B: %w", err)
	}
	rr.fork = time.Since(t)
	t = time.Now()
	n, err := readInline(ctx, b.c, "fork", first)
	rr.firstRead = time.Since(t)
	if round == 0 && opts.CPUProfile != "" {
		pprof.StopCPUProfile()
	}
	if err != nil {
		return rr, fmt.Errorf("first read on B: %w", err)
	}
	if want := len(remoteTreeContent(opts.Files/2, "")); n != want {
		return rr, fmt.Errorf("first read on B: %s has %d bytes, want %d", first, n, want)
	}
	fmt.Fprintf(opts.Log, "  fork %v, first read %v; B reads every file...\n", rr.fork.Round(time.Millisecond), rr.firstRead.Round(time.Millisecond))
	t = time.Now()
	err = parallelN(opts.Files, opts.Parallel, func(i int) error {
		n, err := readInline(ctx, b.c, "fork", remoteTreeFile(i))
		if err == nil && n != len(remoteTreeContent(i, "")) {
			err = fmt.Errorf("%s: %d bytes, want %d", remoteTreeFile(i), n, len(remoteTreeContent(i, "")))
		}
		return err
	})
	rr.lazy = time.Since(t)
	if err != nil {
		return rr, fmt.Errorf("lazy read on B: %w", err)
	}
	t = time.Now()
	if err := parallelN(opts.Files, opts.Parallel, func(i int) error {
		_, err := readInline(ctx, b.c, "fork", remoteTreeFile(i))
		return err
	}); err != nil {
		return rr, fmt.Errorf("local read on B: %w", err)
	}
	rr.lazyLocal = time.Since(t)
	if rr.prefetch, err = prefetchOnce(ctx, filepath.Join(dir, "c"), filepath.Join(sockDir, "c.sock"), remote, snap.ID, treeBytes, logger); err != nil {
		return rr, fmt.Errorf("prefetch on C: %w", err)
	}
	if rr.lazyFUSE, rr.fuseSkipped, err = fuseReadOnce(ctx, filepath.Join(dir, "d"), filepath.Join(sockDir, "d.sock"), remote, snap.ID, opts.Parallel, logger); err != nil {
		return rr, fmt.Errorf("lazy read through FUSE on D: %w", err)
	}

	fmt.Fprintln(opts.Log, "  A changes 10 files, snapshots, pushes...")
	rnd := rand.New(rand.NewPCG(uint64(round), uint64(opts.Files)))
	changed := map[int]bool{}
	dirs := map[string]bool{".": true}
	for len(changed) < min(10, opts.Files) {
		i := rnd.IntN(opts.Files)
		if changed[i] {
			continue
		}
		changed[i] = true
		for d := path.Dir(remoteTreeFile(i)); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
		params, _ := json.Marshal(map[string]any{"path": remoteTreeFile(i), "inline_text": string(remoteTreeContent(i, prefix))})
		r, err := a.c.CallTool(ctx, "ws", "write_file", params)
		if err != nil {
			return rr, fmt.Errorf("write_file on A: %w", err)
		}
		if r.Status != "ok" {
			return rr, fmt.Errorf("write_file on A: %s", r.JSON)
		}
	}
	rr.changedDirs = len(dirs)
	snap10, err := a.c.CreateSnapshot(ctx, "ws", "10 changes")
	if err != nil {
		return rr, fmt.Errorf("snapshot on A: %w", err)
	}
	rep, err = waitPushed(ctx, a.c, snap10.ID)
	if err != nil {
		return rr, err
	}
	rr.snap10Rep = *rep
	rr.snap10 = time.Duration(rep.DurationMs * float64(time.Millisecond))
	fmt.Fprintf(opts.Log, "  prefetch on C %v; lazy read through FUSE on D %v%s\n", rr.prefetch.Round(time.Millisecond), rr.lazyFUSE.Round(time.Millisecond), rr.fuseSkipped)
	fmt.Fprintf(opts.Log, "  push %v (%d objects), baseline %v, lazy read %v (again, local: %v), snap10 push: %d blobs in %d packs, %d records holding %d manifests\n",
		rr.push.Round(time.Millisecond), rr.pushUploaded, rr.baseline.Round(time.Millisecond), rr.lazy.Round(time.Millisecond), rr.lazyLocal.Round(time.Millisecond),
		rep.UploadedBlobs, rep.UploadedPacks, rep.UploadedRecords, rep.UploadedManifests)
	fmt.Fprintln(opts.Log, "  hand-off A -> B against the manual way; ref moves against plain PUTs...")
	if rr.fleet, err = fleetOnce(ctx, a, b, remote, "ws", first, round); err != nil {
		return rr, fmt.Errorf("fleet: %w", err)
	}
	fmt.Fprintf(opts.Log, "  hand-off: move %v, first call on B %v; manual %v; ref move %v, plain PUT %v\n",
		rr.fleet.handoffMove.Round(time.Millisecond), rr.fleet.handoffFirst.Round(time.Millisecond), rr.fleet.manual.Round(time.Millisecond),
		rr.fleet.refMove.Round(100*time.Microsecond), rr.fleet.refPut.Round(100*time.Microsecond))
	return rr, nil
}

// waitPushed waits for the background push of snapshot id and returns
// its report.
func waitPushed(ctx context.Context, c *client.Client, id string) (*api.PushReport, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	for {
		st, err := c.RemoteStatus(ctx)
		if err != nil {
			return nil, fmt.Errorf("wait for the push of %s: %w", id, err)
		}
		if st.LastPush == id && st.LastPushReport != nil && st.LastPushReport.Snapshot == id {
			return st.LastPushReport, nil
		}
		if st.LastError != "" && !strings.Contains(st.LastError, "context") {
			return nil, fmt.Errorf("push of %s failed: %s", id, st.LastError)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for the push of %s: %w", id, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// readInline reads a file through read_file and returns its length.
func readInline(ctx context.Context, c *client.Client, session, p string) (int, error) {
	params, _ := json.Marshal(map[string]any{"path": p, "output_mode": "require_inline"})
	r, err := c.CallTool(ctx, session, "read_file", params)
	if err != nil {
		return 0, err
	}
	if r.Status != "ok" {
		return 0, fmt.Errorf("read_file %s: %s", p, r.JSON)
	}
	var out struct {
		Text *string `json:"inline_text"`
	}
	if err := json.Unmarshal(r.JSON, &out); err != nil || out.Text == nil {
		return 0, fmt.Errorf("read_file %s: no inline text in %s", p, r.JSON)
	}
	return len(*out.Text), nil
}

// baselineClient is a plain minio-go client of the remote's bucket, made
// as the store makes its own (the same credentials, retries and
// transport), so the copy differs from the push only in what it does.
func baselineClient(remote string) (*minio.Client, s3store.Config, error) {
	cfg, err := s3store.ParseURL(remote)
	if err != nil {
		return nil, cfg, err
	}
	c, err := s3store.NewClient(cfg)
	return c, cfg, err
}

// baselineCopy uploads every file of tree under PREFIX/baseline/ with
// PutObject, parallel at once: the obvious alternative to a push.
func baselineCopy(ctx context.Context, remote, tree string, n, par int) (time.Duration, error) {
	c, cfg, err := baselineClient(remote)
	if err != nil {
		return 0, fmt.Errorf("baseline: %w", err)
	}
	t := time.Now()
	err = parallelN(n, par, func(i int) error {
		rel := remoteTreeFile(i)
		f, err := os.Open(filepath.Join(tree, rel))
		if err != nil {
			return err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return err
		}
		_, err = c.PutObject(ctx, cfg.Bucket, path.Join(cfg.Prefix, "baseline", rel), f, st.Size(),
			minio.PutObjectOptions{ContentType: "application/octet-stream"})
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("baseline PutObject: %w", err)
	}
	return time.Since(t), nil
}

// cleanPrefix removes a round's objects, untimed: from the server's
// directory when the bench started it, with RemoveObjects otherwise.
func cleanPrefix(ctx context.Context, opts RemoteOptions, srv *s3server.Server, base, prefix string) {
	remote, err := withPrefix(base, prefix)
	if err != nil {
		return
	}
	c, cfg, err := baselineClient(remote)
	if err != nil {
		return
	}
	if srv != nil {
		if err := os.RemoveAll(filepath.Join(srv.Dir, cfg.Bucket, cfg.Prefix)); err == nil {
			return
		}
	}
	objs := c.ListObjects(ctx, cfg.Bucket, minio.ListObjectsOptions{Prefix: cfg.Prefix + "/", Recursive: true})
	for e := range c.RemoveObjects(ctx, cfg.Bucket, objs, minio.RemoveObjectsOptions{}) {
		fmt.Fprintf(opts.Log, "  could not remove %s: %v\n", e.ObjectName, e.Err)
	}
}

// parallelN runs fn for 0..n-1 on par goroutines, returning the first
// error (and stopping soon after it).
func parallelN(n, par int, fn func(i int) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		ferr error
		next atomic.Int64
	)
	for range par {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					if ferr == nil {
						ferr = err
					}
					mu.Unlock()
					next.Store(int64(n))
					return
				}
			}
		})
	}
	wg.Wait()
	return ferr
}

// benchDaemon is a daemon run in this process on its own socket.
type benchDaemon struct {
	c      *client.Client
	cancel context.CancelFunc
	done   chan error
}

func startBenchDaemon(ctx context.Context, dataDir, socket, remote string, allow []string, log *slog.Logger) (*benchDaemon, error) {
	d, err := httpapi.Open(ctx, daemon.Config{
		DataDir: dataDir, Socket: socket, AllowRoots: allow, Remote: remote,
		PrivatePaths: []string{filepath.Dir(socket)}, NoRemount: true, Logger: log, Version: "bench",
		MaxSessionFiles: -1, MaxSessionBytes: -1,
	})
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	bd := &benchDaemon{cancel: cancel, done: make(chan error, 1)}
	go func() { bd.done <- d.Serve(sctx) }()
	select {
	case <-d.Ready():
	case err := <-bd.done:
		cancel()
		return nil, fmt.Errorf("the daemon stopped at once: %w", err)
	case <-time.After(30 * time.Second):
		cancel()
		return nil, errors.New("the daemon did not start within 30s")
	}
	if bd.c, err = client.New(client.Options{Socket: socket}); err != nil {
		bd.stop()
		return nil, err
	}
	return bd, nil
}

func (b *benchDaemon) stop() {
	if b.c != nil {
		b.c.Close()
	}
	b.cancel()
	<-b.done
	b.done <- nil // stop is idempotent
}

// prefetchOnce starts a daemon with an empty data directory, forks
// snapshot id there and waits until its background prefetch has brought
// want bytes of blobs into its cache; it returns the time from the fork.
func prefetchOnce(ctx context.Context, dataDir, socket, remote, id string, want int64, log *slog.Logger) (time.Duration, error) {
	c, err := startBenchDaemon(ctx, dataDir, socket, remote, nil, log)
	if err != nil {
		return 0, err
	}
	defer c.stop()
	t := time.Now()
	if _, err := c.c.ForkSnapshot(ctx, id, api.CreateSessionRequest{ID: "prefetch"}); err != nil {
		return 0, err
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		st, err := c.c.RemoteStatus(ctx)
		if err != nil {
			return 0, err
		}
		if st.CacheBytes >= want {
			return time.Since(t), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("after 5 minutes the cache holds %d of %d bytes", st.CacheBytes, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fuseReadOnce starts a daemon with an empty data directory, forks
// snapshot id there, mounts the fork with FUSE and times a child process
// reading every file, parallel at a time. Where FUSE cannot mount it
// returns why instead (the bench does not need root otherwise).
func fuseReadOnce(ctx context.Context, dataDir, socket, remote, id string, parallel int, log *slog.Logger) (time.Duration, string, error) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return 0, "no /dev/fuse", nil
	}
	d, err := startBenchDaemon(ctx, dataDir, socket, remote, nil, log)
	if err != nil {
		return 0, "", err
	}
	defer d.stop()
	if _, err := d.c.ForkSnapshot(ctx, id, api.CreateSessionRequest{ID: "fuse"}); err != nil {
		return 0, "", err
	}
	mnt := filepath.Join(dataDir, "mnt")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		return 0, "", err
	}
	if _, err := d.c.Mount(ctx, "fuse", api.MountRequest{Dir: mnt, Backend: api.BackendFUSE, ReadOnly: true}); err != nil {
		return 0, fmt.Sprintf("FUSE mount refused: %v", err), nil
	}
	defer d.c.Unmount(context.WithoutCancel(ctx), "fuse", mnt)
	// A child process reads the mount: this process serves it.
	cmd := exec.CommandContext(ctx, "sh", "-c", `find . -type f -print0 | xargs -0 -P "$1" -n 256 cat >/dev/null`, "sh", strconv.Itoa(parallel))
	cmd.Dir = mnt
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	t := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, "", fmt.Errorf("read every file: %w: %s", err, stderr.String())
	}
	return time.Since(t), "", nil
}
