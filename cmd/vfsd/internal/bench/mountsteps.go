//go:build linux

package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/vfs"
)

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
	for k := range w.stepNames {
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

// steps returns the steps of w.stepNames on target t, in order.
func (w *mountWorkload) steps(ctx context.Context, t *target) []mountStep {
	all := w.fileSteps(ctx, t)
	if w.container != nil {
		all = append(all, w.containerSteps(ctx, t, w.container)...)
	}
	var out []mountStep
	for _, name := range w.stepNames {
		for _, st := range all {
			if st.name == name {
				out = append(out, st)
			}
		}
	}
	return out
}

// fileSteps returns the file workload on target t.
func (w *mountWorkload) fileSteps(ctx context.Context, t *target) []mountStep {
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
		{name: stepRoundTrip, prep: func() error {
			return os.WriteFile(filepath.Join(t.dir, roundTripFile), []byte("x"), 0o644)
		}, run: func() error {
			return runRoundTrip(ctx, filepath.Join(t.dir, roundTripFile), roundTrips)
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
	d := w.describeFiles()
	if w.container != nil {
		for k, v := range w.container.describe() {
			d[k] = v
		}
	}
	for k := range d {
		if !slices.Contains(w.stepNames, k) {
			delete(d, k)
		}
	}
	return d
}

// describeFiles says what each file step runs.
func (w *mountWorkload) describeFiles() map[string]string {
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
		stepRoundTrip: fmt.Sprintf("vfsd bench round-trip, a fresh process: %d getxattr(2) of an attribute T/%s does not have (ENODATA); the kernel caches no xattrs, so each is one request to the file system: seconds ÷ %d ≈ one round trip (plus the process's start, about 1 ms in all)",
			roundTrips, roundTripFile, roundTrips),
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
