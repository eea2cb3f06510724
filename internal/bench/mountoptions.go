package bench

import (
	"fmt"
	"io"
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

// ParseVariant parses "name=lever,lever" (or just "lever") into a variant
// whose options turn those levers on: writeback, passthrough,
// symlink-cache, ignore-security-labels, reader-cap; or, to measure what a
// default lever gives, turn it off: no-cache-fill, no-negative-cache,
// splice, no-cache-dir, no-readdirplus, full-readdirplus.
func ParseVariant(spec string) (MountVariant, error) {
	name, levers, ok := strings.Cut(spec, "=")
	if !ok {
		levers = name
		name = strings.ReplaceAll(name, ",", "_")
	}
	var v MountVariant
	v.Name = strings.ReplaceAll(name, "-", "_")
	for _, l := range strings.Split(levers, ",") {
		switch l {
		case "writeback":
			v.Options.Writeback = true
		case "passthrough":
			v.Options.Passthrough = true
		case "symlink-cache":
			v.Options.SymlinkCaching = true
		case "ignore-security-labels":
			v.Options.IgnoreSecurityLabels = true
		case "no-cache-fill": // the default's levers, off
			v.Options.NoCacheFill = true
		case "no-negative-cache":
			v.Options.NoNegativeCache = true
		case "splice":
			v.Options.Splice = true
		case "no-cache-dir":
			v.Options.NoCacheDir = true
		case "no-readdirplus":
			v.Options.NoReaddirPlus = true
		case "full-readdirplus":
			v.Options.FullReaddirPlus = true
		case "reader-cap":
			v.Options.ReaderCap = true
		default:
			return v, fmt.Errorf("unknown lever %q; use writeback, passthrough, symlink-cache, ignore-security-labels, no-cache-fill, no-negative-cache, splice, no-cache-dir, no-readdirplus, full-readdirplus, reader-cap", l)
		}
	}
	return v, nil
}
