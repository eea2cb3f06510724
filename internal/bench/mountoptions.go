package bench

import (
	"io"
	"time"
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
