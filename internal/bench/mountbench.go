package bench

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/mount"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// The targets of the mount benchmark, in the order each round runs them.
const (
	targetNative    = "native"
	targetVfsd      = "vfsd"
	targetLoopback  = "loopback"
	targetLoopNoPT  = "loopback_nopt" // the loopback without passthrough
	targetOverlayfs = "overlayfs"
)

// The steps of the mount benchmark's workload, in order.
const (
	stepUntar        = "untar"
	stepWalkStat     = "walk_stat"
	stepGrep         = "grep"
	stepReadAll      = "read_all"
	stepSmallCreates = "small_creates"
	stepSeqWrite     = "seq_write"
	stepSeqRead      = "seq_read"
	stepSedI         = "sed_i"
	stepRmRf         = "rm_rf"
)

var mountSteps = []string{stepUntar, stepWalkStat, stepGrep, stepReadAll, stepSmallCreates,
	stepSeqWrite, stepSeqRead, stepSedI, stepRmRf}

const (
	srcName       = "src" // the tree's name in the tarball and in each target
	mountGrepExpr = `func \w+Handler`
	sedScript     = `s/func /func  /`
	sedSubtree    = "net/http" // sed_i's subtree when the tree has it; the whole tree otherwise
	createsDir    = "creates"
	seqFile       = "seq.bin"
	smallFileSize = 100
	blockSize     = 1 << 20

	// The loopback target runs with go-fuse's defaults: the 1 s entry and
	// attribute timeouts NewNodeFS applies without options (and
	// example/loopback uses), no negative caching, go-fuse's default
	// MaxWrite. Set explicitly so that loopback_config says what ran.
	loopbackTimeout  = time.Second
	loopbackMaxWrite = 128 << 10
)

// MountOptions configure the mount benchmark.
type MountOptions struct {
	Tree    string // the tree to extract; the Go distribution's src when ""
	Dir     string // where to put the tarball and the targets; the system temp dir when ""
	Repeats int    // rounds of the whole workload (the median is reported); 1 when 0
	WriteMB int    // size of seq_write's file in MiB; 512 when 0
	Creates int    // files small_creates makes; 3000 when 0
	// CPUProfile, when set, is a path prefix: every step on the
	// in-process targets (vfsd and loopback) is CPU-profiled to
	// <CPUProfile>-<target>-<step>.pprof (with -r<round> when Repeats > 1).
	CPUProfile string
	// Settle is how long each round waits, after setting the targets up,
	// before its first step: when 0, a minute on ext4 without a journal
	// and none elsewhere (see settleTime); none when negative.
	Settle time.Duration
	Log    io.Writer // progress; nothing when nil
}

// MountStep is one line of `vfsd bench mount`: the median time of one step
// on each target, in seconds.
type MountStep struct {
	Step      string  `json:"step"`
	NativeS   float64 `json:"native_s"`
	VfsdS     float64 `json:"vfsd_s"`
	LoopbackS float64 `json:"loopback_s"`
	// LoopbackNoPTS is go-fuse's loopback serving every read and write
	// itself (no passthrough), as vfsd does.
	LoopbackNoPTS  float64  `json:"loopback_nopt_s"`
	OverlayfsS     *float64 `json:"overlayfs_s"` // null when fuse-overlayfs is not available
	VfsdVsLoopback float64  `json:"vfsd_vs_loopback"`
	VfsdVsLoopNoPT float64  `json:"vfsd_vs_loopback_nopt"`
	VfsdVsNative   float64  `json:"vfsd_vs_native"`
	// CacheNote says how seq_read's file left the page cache.
	CacheNote string `json:"cache_note,omitempty"`
}

// MountSummary is the last line of `vfsd bench mount`.
type MountSummary struct {
	Summary                    bool     `json:"summary"`
	FasterThanLoopbackAllSteps bool     `json:"faster_than_loopback_all_steps"`
	SlowerThanLoopback         []string `json:"slower_than_loopback"`
	SeqWriteVsNative           float64  `json:"seq_write_vs_native"`
	SeqReadVsNative            float64  `json:"seq_read_vs_native"`
	// Totals are the sums of the step medians.
	NativeTotalS        float64  `json:"native_total_s"`
	VfsdTotalS          float64  `json:"vfsd_total_s"`
	LoopbackTotalS      float64  `json:"loopback_total_s"`
	OverlayfsTotalS     *float64 `json:"overlayfs_total_s"`
	VfsdVsLoopbackTotal float64  `json:"vfsd_vs_loopback_total"`
	LoopbackNoPTTotalS  float64  `json:"loopback_nopt_total_s"`
	VfsdVsLoopNoPTTotal float64  `json:"vfsd_vs_loopback_nopt_total"`
	// SlowerThanLoopNoPT lists the steps where vfsd was slower than the
	// loopback without passthrough.
	SlowerThanLoopNoPT []string `json:"slower_than_loopback_nopt"`
	Tree               string   `json:"tree"`
	Files              int64    `json:"files"`
	Dirs               int64    `json:"dirs"`
	Symlinks           int64    `json:"symlinks"`
	Bytes              int64    `json:"bytes"`
	GrepMatches        int      `json:"grep_matches"`
	SedSubtree         string   `json:"sed_subtree"`
	Repeats            int      `json:"repeats"`
	WriteMB            int      `json:"write_mb"`
	Creates            int      `json:"creates"`
	VfsdConfig         any      `json:"vfsd_config"`
	LoopbackConfig     any      `json:"loopback_config"`
	OverlayfsConfig    any      `json:"overlayfs_config"`
	// Filesystem is the type of the filesystem the targets are on, and
	// SettleS how long each round waited before its first step (see
	// settleTime).
	Workload             map[string]string `json:"workload"`
	Filesystem           string            `json:"filesystem"`
	SettleS              float64           `json:"settle_s"`
	Kernel               string            `json:"kernel"`
	GOMAXPROCS           int               `json:"gomaxprocs"`
	ElapsedS             float64           `json:"elapsed_s"`
	CPUProfilesWrittenTo string            `json:"cpu_profiles,omitempty"`
}

// Mount times the same workload — extract a source tree, walk and lstat
// it, grep it, read it, create small files, write and read back a large
// file, sed -i a subtree, rm -rf it — on a plain directory, on an empty vfsd
// session mounted through FUSE, on go-fuse's loopback of a plain directory
// and on fuse-overlayfs (when installed), in one run. It prints one JSON
// object per step and a summary.
func Mount(ctx context.Context, opts MountOptions, out io.Writer) error {
	start := time.Now()
	if opts.Repeats <= 0 {
		opts.Repeats = 1
	}
	if opts.WriteMB <= 0 {
		opts.WriteMB = 512
	}
	if opts.Creates <= 0 {
		opts.Creates = 3000
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	for _, tool := range []string{"tar", "rg", "find", "sed", "rm"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("bench mount: %s is not installed; the workload runs it", tool)
		}
	}
	tree, err := hostTree(opts.Tree)
	if err != nil {
		return fmt.Errorf("bench mount: %w", err)
	}
	scan, err := scanTree(ctx, tree)
	if err != nil {
		return fmt.Errorf("bench mount: scan %s: %w", tree, err)
	}
	work, err := os.MkdirTemp(opts.Dir, "vfsd-bench-mount-")
	if err != nil {
		return fmt.Errorf("bench mount: %w", err)
	}
	defer os.RemoveAll(work)
	w := &mountWorkload{opts: opts, work: work, tarball: filepath.Join(work, "src.tar"), grepRef: -1, sedDir: "."}

	targets := []string{targetNative, targetVfsd, targetLoopback, targetLoopNoPT}
	overlayCfg := overlayfsConfig{Command: "fuse-overlayfs -o lowerdir=L,upperdir=U,workdir=W MNT (L empty); fusermount3 -u MNT"}
	if err := w.overlayfsWorks(ctx); err != nil {
		overlayCfg.Reason = err.Error()
		fmt.Fprintf(opts.Log, "overlayfs: left out: %v\n", err)
	} else {
		overlayCfg.Available = true
		targets = append(targets, targetOverlayfs)
	}
	if err := checkSpace(work, scan, opts, len(targets)); err != nil {
		return fmt.Errorf("bench mount: %w", err)
	}
	fmt.Fprintf(opts.Log, "packing %s (%d files, %.0f MB) into a tarball...\n", tree, scan.Files, float64(scan.Bytes)/1e6)
	if w.tree, err = writeTarball(ctx, tree, w.tarball); err != nil {
		return fmt.Errorf("bench mount: tarball of %s: %w", tree, err)
	}
	if fi, err := os.Stat(filepath.Join(tree, filepath.FromSlash(sedSubtree))); err == nil && fi.IsDir() {
		w.sedDir = sedSubtree
	}
	w.block = make([]byte, blockSize)
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range w.block {
		w.block[i] = byte(rnd.IntN(256))
	}

	w.settle, w.fsNote = settleTime(work)
	if opts.Settle != 0 {
		w.settle = max(opts.Settle, 0)
		w.fsNote += fmt.Sprintf(" (wait set to %s)", w.settle)
	}
	times := map[string]map[string][]time.Duration{}
	for _, name := range targets {
		times[name] = map[string][]time.Duration{}
	}
	for round := range opts.Repeats {
		if err := w.runRound(ctx, targets, round, times); err != nil {
			return fmt.Errorf("bench mount: %w", err)
		}
	}

	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	sum := MountSummary{Summary: true, FasterThanLoopbackAllSteps: true, SlowerThanLoopback: []string{}, SlowerThanLoopNoPT: []string{},
		Tree: tree, Files: w.tree.Files, Dirs: w.tree.Dirs, Symlinks: w.tree.Symlinks, Bytes: w.tree.Bytes,
		GrepMatches: w.grepRef, SedSubtree: w.sedDir, Repeats: opts.Repeats, WriteMB: opts.WriteMB, Creates: opts.Creates,
		VfsdConfig:      vfsdConfig{CacheTimeoutS: mount.DefaultCacheTimeout.Seconds(), Options: "mount.Options{} (defaults)", Session: "empty: snapshot.OpenLocalRepo + NewSession"},
		LoopbackConfig:  loopbackConfig{API: "go-fuse fs.NewLoopbackRoot + fs.Mount", DirectMount: true, EntryTimeoutS: loopbackTimeout.Seconds(), AttrTimeoutS: loopbackTimeout.Seconds(), MaxWriteBytes: loopbackMaxWrite, MaxReadAhead: "kernel default", Passthrough: "loopback: every open (LoopbackFile.PassthroughFd), where the kernel allows it; loopback_nopt: none (PassthroughFd declines), the same otherwise"},
		OverlayfsConfig: overlayCfg,
		Workload:        w.describe(),
		Filesystem:      w.fsNote,
		SettleS:         w.settle.Seconds(),
		Kernel:          kernelRelease(),
		GOMAXPROCS:      runtime.GOMAXPROCS(0),
	}
	var totals = map[string]time.Duration{}
	for _, step := range mountSteps {
		med := map[string]time.Duration{}
		for _, name := range targets {
			med[name] = medianDur(times[name][step])
			totals[name] += med[name]
		}
		line := MountStep{Step: step, NativeS: secs(med[targetNative]), VfsdS: secs(med[targetVfsd]), LoopbackS: secs(med[targetLoopback]),
			VfsdVsLoopback: ratio(med[targetVfsd], med[targetLoopback]), VfsdVsNative: ratio(med[targetVfsd], med[targetNative]),
			LoopbackNoPTS: secs(med[targetLoopNoPT]), VfsdVsLoopNoPT: ratio(med[targetVfsd], med[targetLoopNoPT])}
		if d, ok := med[targetOverlayfs]; ok {
			v := secs(d)
			line.OverlayfsS = &v
		}
		if step == stepSeqRead {
			line.CacheNote = w.cacheNote()
		}
		if med[targetVfsd] >= med[targetLoopback] {
			sum.FasterThanLoopbackAllSteps = false
			sum.SlowerThanLoopback = append(sum.SlowerThanLoopback, step)
		}
		if med[targetVfsd] >= med[targetLoopNoPT] {
			sum.SlowerThanLoopNoPT = append(sum.SlowerThanLoopNoPT, step)
		}
		switch step {
		case stepSeqWrite:
			sum.SeqWriteVsNative = line.VfsdVsNative
		case stepSeqRead:
			sum.SeqReadVsNative = line.VfsdVsNative
		}
		if err := enc.Encode(line); err != nil {
			return err
		}
	}
	sum.NativeTotalS, sum.VfsdTotalS, sum.LoopbackTotalS = secs(totals[targetNative]), secs(totals[targetVfsd]), secs(totals[targetLoopback])
	if d, ok := totals[targetOverlayfs]; ok {
		v := secs(d)
		sum.OverlayfsTotalS = &v
	}
	sum.VfsdVsLoopbackTotal = ratio(totals[targetVfsd], totals[targetLoopback])
	sum.LoopbackNoPTTotalS = secs(totals[targetLoopNoPT])
	sum.VfsdVsLoopNoPTTotal = ratio(totals[targetVfsd], totals[targetLoopNoPT])
	if opts.CPUProfile != "" {
		sum.CPUProfilesWrittenTo = opts.CPUProfile + "-<target>-<step>.pprof"
	}
	sum.ElapsedS = secs(time.Since(start))
	return enc.Encode(sum)
}

// vfsdConfig, loopbackConfig and overlayfsConfig describe how each FUSE
// target ran, in the summary.
type vfsdConfig struct {
	Session       string  `json:"session"`
	Options       string  `json:"options"`
	CacheTimeoutS float64 `json:"entry_attr_timeout_s"`
}

type loopbackConfig struct {
	API              string  `json:"api"`
	DirectMount      bool    `json:"direct_mount"`
	EntryTimeoutS    float64 `json:"entry_timeout_s"`
	AttrTimeoutS     float64 `json:"attr_timeout_s"`
	NegativeTimeoutS float64 `json:"negative_timeout_s"`
	MaxWriteBytes    int     `json:"max_write_bytes"`
	MaxReadAhead     string  `json:"max_readahead"`
	Passthrough      string  `json:"passthrough"`
}

type overlayfsConfig struct {
	Available bool   `json:"available"`
	Command   string `json:"command"`
	Reason    string `json:"reason,omitempty"`
}

// overlayfsAvailable says why the overlayfs target cannot run, or nil.
func overlayfsAvailable() error {
	for _, tool := range []string{"fuse-overlayfs", "fusermount3"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is not installed (apt-get install fuse-overlayfs fuse3)", tool)
		}
	}
	return nil
}

// overlayfsWorks says why the overlayfs target cannot run, or nil: it is
// not installed, or it is and mounting it fails here.
func (w *mountWorkload) overlayfsWorks(ctx context.Context) error {
	if err := overlayfsAvailable(); err != nil {
		return err
	}
	t, err := w.newTarget(ctx, targetOverlayfs, -1)
	if cerr := t.close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("installed, but it does not work here: %w", err)
	}
	return nil
}

// treeStats counts what a tree holds.
type treeStats struct {
	Files, Dirs, Symlinks, Bytes int64
}

// add counts one entry.
func (st *treeStats) add(mode fs.FileMode, size int64) {
	switch {
	case mode.IsDir():
		st.Dirs++
	case mode&fs.ModeSymlink != 0:
		st.Symlinks++
	case mode.IsRegular():
		st.Files++
		st.Bytes += size
	}
}

// scanTree counts the files, directories, symlinks and bytes of tree.
func scanTree(ctx context.Context, tree string) (treeStats, error) {
	var st treeStats
	err := filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		st.add(info.Mode(), info.Size())
		return nil
	})
	return st, err
}

// checkSpace fails unless the filesystem of work has room for the run: the
// tarball, and on every target twice the tree (a copy-on-write store may
// hold content twice), the large file and the small files.
func checkSpace(work string, tree treeStats, opts MountOptions, targets int) error {
	var sfs unix.Statfs_t
	if err := unix.Statfs(work, &sfs); err != nil {
		return fmt.Errorf("statfs %s: %w", work, err)
	}
	free := int64(sfs.Bavail) * int64(sfs.Bsize)
	perTarget := 2*tree.Bytes + int64(tree.Files+tree.Dirs)*4096 + int64(opts.WriteMB)<<20 + int64(opts.Creates)*4096
	need := tree.Bytes + int64(tree.Files)*1024 + int64(targets)*perTarget
	if free < need {
		return fmt.Errorf("not enough free space in %s (df): %.1f GB free, about %.1f GB needed "+
			"(the tarball, and per target (%d) twice the tree, the %d MiB file and %d small files); "+
			"free some space, pass --dir on a bigger filesystem, or lower --write-mb",
			work, float64(free)/1e9, float64(need)/1e9, targets, opts.WriteMB, opts.Creates)
	}
	return nil
}

// writeTarball packs tree into a tar file at dst, under the name srcName:
// directories, regular files (hard links as copies) and symlinks; other
// kinds are left out. It returns what it packed.
func writeTarball(ctx context.Context, tree, dst string) (treeStats, error) {
	var st treeStats
	f, err := os.Create(dst)
	if err != nil {
		return st, err
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	tw := tar.NewWriter(bw)
	err = filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(tree, p)
		if err != nil {
			return err
		}
		name := path.Join(srcName, filepath.ToSlash(rel))
		var link string
		switch mode := info.Mode(); {
		case mode.IsDir():
			name += "/"
		case mode&fs.ModeSymlink != 0:
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		case !mode.IsRegular():
			return nil // sockets, devices, pipes
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		hdr.Name, hdr.Uname, hdr.Gname = name, "", ""
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		st.add(info.Mode(), info.Size())
		if !info.Mode().IsRegular() {
			return nil
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		if n, err := io.Copy(tw, src); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		} else if n != info.Size() {
			return fmt.Errorf("%s: changed while packing (%d bytes, then %d)", p, info.Size(), n)
		}
		return nil
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Close()
	}
	return st, err
}

// mountWorkload runs the steps on one target after another.
type mountWorkload struct {
	opts    MountOptions
	work    string // the run's directory; quiesced before every timed step
	tarball string
	tree    treeStats     // what the tarball holds: every target's walk must agree
	sedDir  string        // sed_i's directory, relative to the extracted tree
	block   []byte        // seq_write's block
	grepRef int           // rg's matching lines on the first target; -1 before
	settle  time.Duration // wait before each round's first step
	fsNote  string        // the filesystem, and why the wait
	// cacheIssues records where seq_read's page cache drop failed.
	cacheIssues []string
}

// target is a directory to run the workload in: a plain directory or a
// mount point.
type target struct {
	name string
	dir  string
	// backing is the plain directory that holds the target's files, where
	// there is one (loopback: the looped-back directory; overlayfs: the
	// upper layer).
	backing string
	session *vfs.Session // vfsd's session
	closers []func() error
}

// close tears the target down, last set up first.
func (t *target) close() error {
	var errs []error
	for i := len(t.closers) - 1; i >= 0; i-- {
		errs = append(errs, t.closers[i]())
	}
	return errors.Join(errs...)
}

// newTarget sets up target name under a fresh directory of the run.
func (w *mountWorkload) newTarget(ctx context.Context, name string, round int) (*target, error) {
	root := filepath.Join(w.work, fmt.Sprintf("%s-%d", name, round))
	if round < 0 {
		root = filepath.Join(w.work, name+"-probe")
	}
	t := &target{name: name}
	mkdirs := func(names ...string) ([]string, error) {
		var dirs []string
		for _, n := range names {
			d := filepath.Join(root, n)
			if err := os.MkdirAll(d, 0o755); err != nil {
				return nil, err
			}
			dirs = append(dirs, d)
		}
		return dirs, nil
	}
	t.closers = append(t.closers, func() error { return os.RemoveAll(root) })
	switch name {
	case targetNative:
		dirs, err := mkdirs("dir")
		if err != nil {
			return t, err
		}
		t.dir = dirs[0]
	case targetVfsd:
		dirs, err := mkdirs("state", "mnt")
		if err != nil {
			return t, err
		}
		repo, err := snapshot.OpenLocalRepo(ctx, dirs[0], snapshot.RepoOptions{})
		if err != nil {
			return t, fmt.Errorf("open repo: %w", err)
		}
		t.closers = append(t.closers, repo.Close)
		if t.session, err = repo.NewSession(ctx, snapshot.SessionOptions{ID: "bench-mount"}); err != nil {
			return t, fmt.Errorf("new session: %w", err)
		}
		m, err := mount.New(t.session, dirs[1], mount.Options{})
		if err != nil {
			return t, err
		}
		t.closers = append(t.closers, m.Unmount)
		t.dir = dirs[1]
	case targetLoopback, targetLoopNoPT:
		dirs, err := mkdirs("backing", "mnt")
		if err != nil {
			return t, err
		}
		newRoot := gofs.NewLoopbackRoot
		if name == targetLoopNoPT {
			newRoot = newNoPassthroughRoot
		}
		rootNode, err := newRoot(dirs[0])
		if err != nil {
			return t, fmt.Errorf("loopback of %s: %w", dirs[0], err)
		}
		timeout, negative := loopbackTimeout, time.Duration(0)
		server, err := gofs.Mount(dirs[1], rootNode, &gofs.Options{
			MountOptions: fuse.MountOptions{
				DirectMount: true,
				FsName:      "loopback:" + dirs[0],
				Name:        "loopback",
				MaxWrite:    loopbackMaxWrite,
			},
			EntryTimeout:    &timeout,
			AttrTimeout:     &timeout,
			NegativeTimeout: &negative,
		})
		if err != nil {
			return t, fmt.Errorf("mount loopback at %s: %w (is /dev/fuse available, and fuse3 installed?)", dirs[1], err)
		}
		t.closers = append(t.closers, func() error {
			if err := server.Unmount(); err != nil {
				if lerr := syscall.Unmount(dirs[1], syscall.MNT_DETACH); lerr != nil {
					return fmt.Errorf("unmount loopback %s: %w", dirs[1], err)
				}
			}
			return nil
		})
		t.dir, t.backing = dirs[1], dirs[0]
	case targetOverlayfs:
		dirs, err := mkdirs("lower", "upper", "work", "mnt")
		if err != nil {
			return t, err
		}
		mnt := dirs[3]
		opt := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", dirs[0], dirs[1], dirs[2])
		if out, err := exec.CommandContext(ctx, "fuse-overlayfs", "-o", opt, mnt).CombinedOutput(); err != nil {
			return t, fmt.Errorf("fuse-overlayfs -o %s %s: %w: %s", opt, mnt, err, bytes.TrimSpace(out))
		}
		t.closers = append(t.closers, func() error {
			if out, err := exec.Command("fusermount3", "-u", mnt).CombinedOutput(); err != nil {
				return fmt.Errorf("fusermount3 -u %s: %w: %s", mnt, err, bytes.TrimSpace(out))
			}
			return nil
		})
		if err := checkMounted(mnt); err != nil {
			return t, err
		}
		t.dir, t.backing = mnt, dirs[1]
	default:
		return t, fmt.Errorf("unknown target %q", name)
	}
	return t, nil
}

// checkMounted fails unless a filesystem is mounted at dir.
func checkMounted(dir string) error {
	var st, parent unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return fmt.Errorf("stat %s: %w", dir, err)
	}
	if err := unix.Stat(filepath.Dir(dir), &parent); err != nil {
		return fmt.Errorf("stat %s: %w", filepath.Dir(dir), err)
	}
	if st.Dev == parent.Dev {
		return fmt.Errorf("nothing is mounted at %s", dir)
	}
	return nil
}

// mountStep is one step of the workload: prep runs off the clock, run is
// timed, check verifies what run did, off the clock.
type mountStep struct {
	name        string
	prep, check func() error
	run         func() error
}

// runRound sets every target up, then runs the workload one step at a
// time, the step on every target before the next step, appending each
// step's time to times[target][step], and tears the targets down.
//
// Running step by step keeps every target's creates away from the
// deletions of another target's rm -rf and teardown, which on some
// filesystems make creates slower for a while (see settleTime).
func (w *mountWorkload) runRound(ctx context.Context, targets []string, round int, times map[string]map[string][]time.Duration) (err error) {
	var ts []*target
	defer func() {
		for _, t := range slices.Backward(ts) {
			if cerr := t.close(); cerr != nil && err == nil {
				err = fmt.Errorf("%s: tear down: %w", t.name, cerr)
			}
		}
	}()
	fmt.Fprintf(w.opts.Log, "round %d/%d: setting up %s\n", round+1, w.opts.Repeats, strings.Join(targets, ", "))
	steps := make([][]mountStep, len(targets))
	for i, name := range targets {
		t, err := w.newTarget(ctx, name, round)
		ts = append(ts, t)
		if err != nil {
			return fmt.Errorf("%s: set up: %w", name, err)
		}
		steps[i] = w.steps(ctx, t)
	}
	if w.settle > 0 {
		quiesce(w.work)
		fmt.Fprintf(w.opts.Log, "waiting %s: %s\n", w.settle, w.fsNote)
		select {
		case <-time.After(w.settle):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for k := range mountSteps {
		for i, t := range ts {
			st := steps[i][k]
			d, err := w.runStep(t, st, round)
			if err != nil {
				return fmt.Errorf("%s: %s: %w", t.name, st.name, err)
			}
			times[t.name][st.name] = append(times[t.name][st.name], d)
			fmt.Fprintf(w.opts.Log, "  %-13s %-9s %8.3fs\n", st.name, t.name, d.Seconds())
		}
	}
	return nil
}

// runStep runs one step on target t and returns how long its timed part
// took.
func (w *mountWorkload) runStep(t *target, st mountStep, round int) (time.Duration, error) {
	if st.prep != nil {
		if err := st.prep(); err != nil {
			return 0, fmt.Errorf("prepare: %w", err)
		}
	}
	stop, err := w.profile(t.name, st.name, round)
	if err != nil {
		return 0, err
	}
	quiesce(w.work)
	start := time.Now()
	err = st.run()
	d := time.Since(start)
	if perr := stop(); perr != nil && err == nil {
		err = perr
	}
	if err == nil && st.check != nil {
		err = st.check()
	}
	return d, err
}

// profile starts a CPU profile of a step on an in-process target, when
// asked for, and returns what stops it.
func (w *mountWorkload) profile(target, step string, round int) (stop func() error, err error) {
	if w.opts.CPUProfile == "" || (target != targetVfsd && target != targetLoopback && target != targetLoopNoPT) {
		return func() error { return nil }, nil
	}
	name := fmt.Sprintf("%s-%s-%s", w.opts.CPUProfile, target, step)
	if w.opts.Repeats > 1 {
		name += fmt.Sprintf("-r%d", round+1)
	}
	f, err := os.Create(name + ".pprof")
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile %s: %w", f.Name(), err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		return nil
	}, nil
}

// steps returns the workload on target t.
func (w *mountWorkload) steps(ctx context.Context, t *target) []mountStep {
	src := filepath.Join(t.dir, srcName)
	creates := filepath.Join(t.dir, createsDir)
	seq := filepath.Join(t.dir, seqFile)
	seqSize := int64(w.opts.WriteMB) * blockSize
	var (
		walked     treeStats
		read, got  int64
		grepLines  lineCounter
		expectSame = func(what string, want, got any) error {
			if want != got {
				return fmt.Errorf("%s: got %v, want %v (what the tarball holds)", what, got, want)
			}
			return nil
		}
	)
	return []mountStep{
		{name: stepUntar, run: func() error {
			return runIn(ctx, nil, "tar", "--no-same-owner", "-C", t.dir, "-xf", w.tarball)
		}},
		{name: stepWalkStat, run: func() (err error) {
			walked, err = walkStat(ctx, src)
			return err
		}, check: func() error { return expectSame("walk", w.tree, walked) }},
		{name: stepGrep, run: func() error {
			return runIn(ctx, &grepLines, "rg", "--no-config", "-n", mountGrepExpr, src)
		}, check: func() error {
			if w.grepRef < 0 {
				w.grepRef = int(grepLines)
				return nil
			}
			if int(grepLines) != w.grepRef {
				return fmt.Errorf("rg found %d matching lines, %d on the first target", grepLines, w.grepRef)
			}
			return nil
		}},
		{name: stepReadAll, run: func() (err error) {
			read, err = readAllFiles(ctx, src)
			return err
		}, check: func() error { return expectSame("bytes read", w.tree.Bytes, read) }},
		{name: stepSmallCreates, prep: func() error { return os.Mkdir(creates, 0o755) }, run: func() error {
			return smallCreates(ctx, creates, w.opts.Creates)
		}, check: func() error {
			entries, err := os.ReadDir(creates)
			if err == nil && len(entries) != w.opts.Creates {
				err = fmt.Errorf("%d files in %s, want %d", len(entries), creates, w.opts.Creates)
			}
			return err
		}},
		{name: stepSeqWrite, run: func() error { return w.seqWrite(ctx, seq) }, check: func() error {
			fi, err := os.Lstat(seq)
			if err == nil && fi.Size() != seqSize {
				err = fmt.Errorf("%s has %d bytes, want %d", seq, fi.Size(), seqSize)
			}
			return err
		}},
		{name: stepSeqRead, prep: func() error { return w.dropCache(ctx, t, seqFile) }, run: func() (err error) {
			got, err = readFile(seq)
			return err
		}, check: func() error { return expectSame("bytes read back", seqSize, got) }},
		{name: stepSedI, run: func() error {
			return runIn(ctx, nil, "find", filepath.Join(src, w.sedDir), "-type", "f", "-name", "*.go", "-exec", "sed", "-i", sedScript, "{}", "+")
		}},
		{name: stepRmRf, run: func() error { return runIn(ctx, nil, "rm", "-rf", src) }, check: func() error {
			if _, err := os.Lstat(src); !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%s is still there after rm -rf (%v)", src, err)
			}
			return nil
		}},
	}
}

// describe says what each step runs, T standing for the target's
// directory.
func (w *mountWorkload) describe() map[string]string {
	return map[string]string{
		stepUntar:        "tar --no-same-owner -C T -xf src.tar (" + srcName + "/ of the tree, packed once outside the targets)",
		stepWalkStat:     "filepath.WalkDir(T/" + srcName + ") and os.Lstat of every entry",
		stepGrep:         "rg --no-config -n '" + mountGrepExpr + "' T/" + srcName + " (exit 1 = no match is fine)",
		stepReadAll:      "os.Open and read (1 MiB buffer) of every regular file of T/" + srcName,
		stepSmallCreates: fmt.Sprintf("%d files of %d bytes in the new directory T/%s, each opened (O_CREAT|O_EXCL), written, closed", w.opts.Creates, smallFileSize, createsDir),
		stepSeqWrite:     fmt.Sprintf("T/%s: %d writes of 1 MiB, fsync, close", seqFile, w.opts.WriteMB),
		stepSeqRead:      "T/" + seqFile + " reopened and read through, 1 MiB at a time, from a dropped page cache (see cache_note)",
		stepSedI:         "find T/" + path.Join(srcName, w.sedDir) + " -type f -name '*.go' -exec sed -i '" + sedScript + "' {} +",
		stepRmRf:         "rm -rf T/" + srcName,
	}
}

// runIn runs a command, its output to stdout (discarded when nil). Exit
// status 1 is no error: rg found nothing.
//
// Commands run in this process's working directory and get the targets'
// paths as arguments: a child of the process serving a mount must not
// chdir into it between fork and exec (it could wait on a server that
// waits on the fork; with the race detector, it does).
func runIn(ctx context.Context, stdout io.Writer, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = stdout, &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 && name == "rg" && stderr.Len() == 0 {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return nil
}

// lineCounter counts the lines written to it.
type lineCounter int

func (c *lineCounter) Write(p []byte) (int, error) {
	*c += lineCounter(bytes.Count(p, []byte{'\n'}))
	return len(p), nil
}

// walkStat walks root and lstats every entry.
func walkStat(ctx context.Context, root string) (treeStats, error) {
	var st treeStats
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st.add(fi.Mode(), fi.Size())
		return nil
	})
	return st, err
}

// readAllFiles reads every regular file under root and returns the bytes
// read.
func readAllFiles(ctx context.Context, root string) (int64, error) {
	buf := make([]byte, blockSize)
	var total int64
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		n, err := io.CopyBuffer(io.Discard, onlyReader{f}, buf)
		total += n
		return err
	})
	return total, err
}

// onlyReader hides everything but Read, so io.CopyBuffer uses the buffer.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// readFile reads the file at p through once and returns its size.
func readFile(p string) (int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return io.CopyBuffer(io.Discard, onlyReader{f}, make([]byte, blockSize))
}

// smallCreates creates n files of smallFileSize bytes in dir, each opened,
// written and closed.
func smallCreates(ctx context.Context, dir string, n int) error {
	data := bytes.Repeat([]byte("0123456789"), smallFileSize/10)
	for i := range n {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		p := filepath.Join(dir, fmt.Sprintf("f%05d.txt", i))
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		if _, err := f.Write(data); err != nil {
			f.Close()
			return fmt.Errorf("write %s: %w", p, err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("close %s: %w", p, err)
		}
	}
	return nil
}

// seqWrite writes WriteMB MiB to p in blocks of 1 MiB, fsyncs and closes
// it.
func (w *mountWorkload) seqWrite(ctx context.Context, p string) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	for i := range w.opts.WriteMB {
		if err := ctx.Err(); err != nil {
			return err
		}
		copy(w.block, fmt.Sprintf("block %08d", i)) // no two blocks alike
		if _, err := f.Write(w.block); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", p, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", p, err)
	}
	return nil
}

// dropCache evicts the file rel of target t from the page cache, off the
// clock, so that seq_read reads from disk on every target: the file as the
// target shows it (on a FUSE target, the FUSE inode's pages), and the
// backing file it is kept in (loopback: the looped-back file; overlayfs:
// the upper layer's; vfsd: the session's upper file or blob). Where a drop
// fails, the summary's cache note says so.
func (w *mountWorkload) dropCache(ctx context.Context, t *target, rel string) error {
	if err := fadviseDontNeed(filepath.Join(t.dir, rel)); err != nil {
		return err
	}
	switch {
	case t.backing != "":
		if err := fadviseDontNeed(filepath.Join(t.backing, rel)); err != nil {
			w.cacheIssues = append(w.cacheIssues, fmt.Sprintf("%s: %v", t.name, err))
		}
	case t.session != nil:
		p, err := vfs.ParsePath(rel)
		if err != nil {
			return err
		}
		r, err := t.session.Open(ctx, p)
		if err != nil {
			return fmt.Errorf("open %s in the session: %w", rel, err)
		}
		defer r.Close()
		f, ok := r.File()
		if !ok {
			w.cacheIssues = append(w.cacheIssues, t.name+": the session's content is in no local file")
			return nil
		}
		if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
			w.cacheIssues = append(w.cacheIssues, fmt.Sprintf("%s: fadvise %s: %v", t.name, f.Name(), err))
		}
	}
	return nil
}

// fadviseDontNeed drops the page cache of the file at p.
func fadviseDontNeed(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("fadvise %s: %w", p, err)
	}
	return nil
}

// cacheNote says what seq_read started from.
func (w *mountWorkload) cacheNote() string {
	note := "seq_read starts cold on every target: after seq_write's fsync and close, the file's pages were " +
		"dropped with posix_fadvise(POSIX_FADV_DONTNEED) on the file as the target shows it (for FUSE targets " +
		"the FUSE page cache) and on its backing file (loopback: the looped-back file; overlayfs: the upper " +
		"layer's; vfsd: the session's upper file, through Session.Open + Reader.File); then the file was " +
		"reopened for the timed read"
	if len(w.cacheIssues) > 0 {
		note += "; not dropped: " + strings.Join(slices.Compact(w.cacheIssues), "; ")
	}
	return note
}

// recentlyDeletedWindow is how long ext4 without a journal keeps a
// deleted inode from being reused when its inode table block is clean
// (RECENTCY_MIN in fs/ext4/ialloc.c), plus a margin.
const recentlyDeletedWindow = 65 * time.Second

// settleTime returns how long each round waits before its first step, and
// what the filesystem holding dir is.
//
// ext4 without a journal does not reuse an inode for a minute after it
// was deleted (six while its inode table block is dirty): every create
// skips the recently deleted inodes of its block group, one inode table
// lookup each (find_inode_bit, recently_deleted), so creating files right
// after deleting a tree costs several times more, and creates depend on
// what anything deleted lately nearby. Waiting a minute, after a sync,
// keeps most of an earlier round's or run's deletions out of a round; the
// summary says so, since it cannot remove the effect.
func settleTime(dir string) (time.Duration, string) {
	var sfs unix.Statfs_t
	if err := unix.Statfs(dir, &sfs); err != nil {
		return 0, "unknown"
	}
	if sfs.Type != unix.EXT4_SUPER_MAGIC {
		return 0, fmt.Sprintf("filesystem type %#x", sfs.Type)
	}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return 0, "ext4"
	}
	link, err := os.Readlink(fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev)))
	if err != nil {
		return 0, "ext4"
	}
	dev := filepath.Base(link)
	if journals, _ := filepath.Glob("/proc/fs/jbd2/" + dev + "-*"); len(journals) > 0 {
		return 0, "ext4 on " + dev + " with a journal"
	}
	return recentlyDeletedWindow, fmt.Sprintf("ext4 on %s without a journal: for a minute after a deletion (six while "+
		"the inode table block is dirty) it skips the deleted inode, at a cost, on every create in the block group, so "+
		"untar, small_creates and sed_i depend on what this run or anything else deleted lately; each round waits %s "+
		"after a sync first, which helps but does not remove that: for comparable create timings pass --dir on a "+
		"filesystem with a journal", dev, recentlyDeletedWindow)
}

// kernelRelease returns uname -r.
func kernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}

// medianDur returns the median of ds.
func medianDur(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// secs returns d in seconds, to the millisecond.
func secs(d time.Duration) float64 { return round(d.Seconds()) }

// ratio returns a/b to three decimals, 0 when b is 0.
func ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return round(float64(a) / float64(b))
}
