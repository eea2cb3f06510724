//go:build linux

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/vfsd/vfsd/mount"
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
