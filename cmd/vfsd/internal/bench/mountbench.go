//go:build linux

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
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
	// stepRoundTrip is opt-in (--steps round_trip): the floor a request
	// costs, not a workload.
	stepRoundTrip = "round_trip"
)

// roundTrips is how many requests the round_trip step makes.
const roundTrips = 20000

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

// MountSummary is the last line of `vfsd bench mount`. Each step's line
// before it is an object with "step", "<target>_s" (the median seconds)
// for every target that ran, "<target>_vs_native" for every other target,
// and "vfsd_vs_loopback", "vfsd_vs_loopback_nopt".
type MountSummary struct {
	Summary bool `json:"summary"`
	// Targets are the targets that ran, in order; Skipped says why each
	// left-out target was left out.
	Targets []string          `json:"targets"`
	Skipped map[string]string `json:"skipped"`
	Steps   []string          `json:"steps"`
	// GeomeanVsNative is, per target, the geometric mean over the steps of
	// its time over native's; ContainerGeomeanVsNative the same over the
	// container steps only (git, go build, node_modules ...).
	GeomeanVsNative          map[string]float64 `json:"geomean_vs_native"`
	ContainerGeomeanVsNative map[string]float64 `json:"container_geomean_vs_native,omitempty"`
	// MaxVsNative is, per target, its worst step's ratio to native.
	MaxVsNative map[string]float64 `json:"max_vs_native"`
	// TotalS are the sums of the step medians.
	TotalS map[string]float64 `json:"total_s"`
	// SlowerThan lists, for each FUSE filesystem of vfsd's class (go-fuse
	// loopback with and without passthrough, fuse-overlayfs), the steps
	// where vfsd's FUSE mount was slower.
	SlowerThan                 map[string][]string `json:"vfsd_slower_than"`
	FasterThanLoopbackAllSteps bool                `json:"faster_than_loopback_all_steps"`
	SlowerThanLoopback         []string            `json:"slower_than_loopback"`
	SlowerThanLoopNoPT         []string            `json:"slower_than_loopback_nopt"`
	SeqWriteVsNative           float64             `json:"seq_write_vs_native,omitempty"`
	SeqReadVsNative            float64             `json:"seq_read_vs_native,omitempty"`
	Tree                       string              `json:"tree"`
	Files                      int64               `json:"files"`
	Dirs                       int64               `json:"dirs"`
	Symlinks                   int64               `json:"symlinks"`
	Bytes                      int64               `json:"bytes"`
	GrepMatches                int                 `json:"grep_matches"`
	SedSubtree                 string              `json:"sed_subtree"`
	Repeats                    int                 `json:"repeats"`
	WriteMB                    int                 `json:"write_mb"`
	Creates                    int                 `json:"creates"`
	VfsdConfig                 any                 `json:"vfsd_config"`
	LoopbackConfig             any                 `json:"loopback_config"`
	OverlayfsConfig            any                 `json:"overlayfs_config"`
	KernelOverlayfsConfig      string              `json:"kernel_overlayfs_config,omitempty"`
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

// Mount times the same workload on a plain directory, on an empty vfsd
// session mounted through FUSE (and through the kernel overlay backend
// where it can mount), on go-fuse's loopback of a plain directory with and
// without passthrough, on fuse-overlayfs and on kernel overlayfs, in one
// run: the file steps (extract a source tree, walk and lstat it, grep it,
// read it, create small files, write and read back a large file, sed -i a
// subtree, rm -rf it) and the container steps (git clone, status, go build,
// rg, node_modules untar, du, require, git commit, rm -rf). Rounds
// interleave the targets step by step; it prints one JSON object per step
// (the medians) and a summary.
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

	skipped := map[string]string{}
	targets, err := w.chooseTargets(ctx, skipped)
	if err != nil {
		return fmt.Errorf("bench mount: %w", err)
	}
	overlayCfg := overlayfsConfig{Command: "fuse-overlayfs -o lowerdir=L,upperdir=U,workdir=W MNT (L empty); fusermount3 -u MNT"}
	if reason, ok := skipped[targetOverlayfs]; ok {
		overlayCfg.Reason = reason
	} else {
		overlayCfg.Available = true
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
	if err := w.chooseSteps(ctx, skipped); err != nil {
		return fmt.Errorf("bench mount: %w", err)
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
		// Interleave: each round runs the targets in another order.
		order := slices.Clone(targets)
		k := round % len(order)
		order = append(order[k:], order[:k]...)
		if err := w.runRound(ctx, order, round, times); err != nil {
			return fmt.Errorf("bench mount: %w", err)
		}
	}

	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	sum := MountSummary{Summary: true, Targets: targets, Skipped: skipped, Steps: w.stepNames,
		FasterThanLoopbackAllSteps: true, SlowerThanLoopback: []string{}, SlowerThanLoopNoPT: []string{},
		SlowerThan: map[string][]string{}, TotalS: map[string]float64{}, MaxVsNative: map[string]float64{},
		Tree: tree, Files: w.tree.Files, Dirs: w.tree.Dirs, Symlinks: w.tree.Symlinks, Bytes: w.tree.Bytes,
		GrepMatches: w.grepRef, SedSubtree: w.sedDir, Repeats: opts.Repeats, WriteMB: opts.WriteMB, Creates: opts.Creates,
		VfsdConfig:            vfsdConfig{CacheTimeoutS: mount.DefaultCacheTimeout.Seconds(), Options: w.vfsdOptionsNote(), Session: "empty: snapshot.OpenLocalRepo + NewSession"},
		LoopbackConfig:        loopbackConfig{API: "go-fuse fs.NewLoopbackRoot + fs.Mount", DirectMount: true, EntryTimeoutS: loopbackTimeout.Seconds(), AttrTimeoutS: loopbackTimeout.Seconds(), MaxWriteBytes: loopbackMaxWrite, MaxReadAhead: "kernel default", Passthrough: "loopback: every open (LoopbackFile.PassthroughFd), where the kernel allows it; loopback_nopt: none (PassthroughFd declines), the same otherwise"},
		OverlayfsConfig:       overlayCfg,
		KernelOverlayfsConfig: "mount -t overlay -o lowerdir=L,upperdir=U,workdir=W (L empty, all on the run's filesystem)",
		Workload:              w.describe(),
		Filesystem:            w.fsNote,
		SettleS:               w.settle.Seconds(),
		Kernel:                kernelRelease(),
		GOMAXPROCS:            runtime.GOMAXPROCS(0),
	}
	logRatios := map[string]float64{}
	containerLogRatios := map[string]float64{}
	containerN := 0
	totals := map[string]time.Duration{}
	for _, step := range w.stepNames {
		med := map[string]time.Duration{}
		for _, name := range targets {
			med[name] = medianDur(times[name][step])
			totals[name] += med[name]
		}
		line := orderedObject{{"step", step}}
		for _, name := range targets {
			line = append(line, field{name + "_s", secs(med[name])})
		}
		isContainer := slices.Contains(containerSteps, step)
		if isContainer {
			containerN++
		}
		for _, name := range targets {
			if name == targetNative {
				continue
			}
			r := ratio(med[name], med[targetNative])
			line = append(line, field{name + "_vs_native", r})
			lr := math.Log(max(float64(med[name]), 1) / max(float64(med[targetNative]), 1))
			logRatios[name] += lr
			if isContainer {
				containerLogRatios[name] += lr
			}
			sum.MaxVsNative[name] = max(sum.MaxVsNative[name], r)
		}
		for _, peer := range []string{targetLoopback, targetLoopNoPT, targetOverlayfs} {
			if _, ok := med[peer]; !ok {
				continue
			}
			line = append(line, field{"vfsd_vs_" + peer, ratio(med[targetVfsd], med[peer])})
			if med[targetVfsd] >= med[peer] {
				sum.SlowerThan[peer] = append(sum.SlowerThan[peer], step)
			}
		}
		if step == stepSeqRead {
			line = append(line, field{"cache_note", w.cacheNote()})
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
			sum.SeqWriteVsNative = ratio(med[targetVfsd], med[targetNative])
		case stepSeqRead:
			sum.SeqReadVsNative = ratio(med[targetVfsd], med[targetNative])
		}
		if err := enc.Encode(line); err != nil {
			return err
		}
	}
	sum.GeomeanVsNative = map[string]float64{}
	for name, l := range logRatios {
		sum.GeomeanVsNative[name] = round(math.Exp(l / float64(len(w.stepNames))))
	}
	if containerN > 0 {
		sum.ContainerGeomeanVsNative = map[string]float64{}
		for name, l := range containerLogRatios {
			sum.ContainerGeomeanVsNative[name] = round(math.Exp(l / float64(containerN)))
		}
	}
	for name, d := range totals {
		sum.TotalS[name] = secs(d)
	}
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
