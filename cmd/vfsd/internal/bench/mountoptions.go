package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/vfsd/vfsd/mount"
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
	// Targets are the targets to run (every one that can run here when
	// empty; native, vfsd and the loopbacks always run: the ratios are
	// against them).
	Targets []string
	// Steps are the steps to run, in the workload's order whatever the
	// order given; every step when empty.
	Steps []string
	// GoPackages and NpmPackages size the container steps' Go module (8
	// files of about 140 lines a package; 40 when 0) and node_modules (ten
	// files a package; 1,000 when 0).
	GoPackages, NpmPackages int
	// Variants add targets: vfsd's FUSE mount with other options, for A/B
	// comparisons of its levers.
	Variants []MountVariant
	Log      io.Writer // progress; nothing when nil
}

// MountVariant is an A/B variant of vfsd's FUSE mount: the target
// "vfsd_<Name>" mounts with Options.
type MountVariant struct {
	Name    string
	Options mount.Options
}

// mountLever is a lever of vfsd's FUSE mount, by name.
type mountLever struct {
	name string
	set  func(*mount.Options)
}

// mountLevers are the levers a variant can name: the first turn an opt-in
// option on, the "no-" ones (and splice, full-readdirplus) turn off, or
// change, what the mount does by default, to measure what that gives.
var mountLevers = []mountLever{
	{"writeback", func(o *mount.Options) { o.Writeback = true }},
	{"passthrough", func(o *mount.Options) { o.Passthrough = true }},
	{"symlink-cache", func(o *mount.Options) { o.SymlinkCaching = true }},
	{"ignore-security-labels", func(o *mount.Options) { o.IgnoreSecurityLabels = true }},
	{"reader-cap", func(o *mount.Options) { o.ReaderCap = true }},
	{"no-cache-fill", func(o *mount.Options) { o.NoCacheFill = true }},
	{"no-negative-cache", func(o *mount.Options) { o.NoNegativeCache = true }},
	{"splice", func(o *mount.Options) { o.Splice = true }},
	{"no-cache-dir", func(o *mount.Options) { o.NoCacheDir = true }},
	{"no-readdirplus", func(o *mount.Options) { o.NoReaddirPlus = true }},
	{"full-readdirplus", func(o *mount.Options) { o.FullReaddirPlus = true }},
}

// MountLeverNames lists the levers ParseVariant knows, comma-separated.
func MountLeverNames() string {
	names := make([]string, len(mountLevers))
	for i, l := range mountLevers {
		names[i] = l.name
	}
	return strings.Join(names, ", ")
}

// ParseVariant parses "name=lever,lever" (or just "lever") into a variant
// whose options turn those levers (mountLevers) on.
func ParseVariant(spec string) (MountVariant, error) {
	name, levers, ok := strings.Cut(spec, "=")
	if !ok {
		levers = name
		name = strings.ReplaceAll(name, ",", "_")
	}
	var v MountVariant
	v.Name = strings.ReplaceAll(name, "-", "_")
	for _, l := range strings.Split(levers, ",") {
		i := slices.IndexFunc(mountLevers, func(m mountLever) bool { return m.name == l })
		if i < 0 {
			return v, fmt.Errorf("unknown lever %q; use %s", l, MountLeverNames())
		}
		mountLevers[i].set(&v.Options)
	}
	return v, nil
}
