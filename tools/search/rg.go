package search

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vfsd/vfsd/vfs"
)

// rgPath finds ripgrep on PATH, once.
var rgPath = sync.OnceValues(func() (string, error) { return exec.LookPath("rg") })

// chooseEngine resolves EngineAuto and checks that rg is there for EngineRG.
func chooseEngine(e Engine) (Engine, error) {
	switch e {
	case EngineAuto:
		if _, err := rgPath(); err == nil {
			return EngineRG, nil
		}
		return EngineNative, nil
	case EngineRG:
		if _, err := rgPath(); err != nil {
			return 0, fmt.Errorf("grep: the rg engine needs ripgrep on PATH: %w", err)
		}
		return EngineRG, nil
	case EngineNative:
		return EngineNative, nil
	}
	return 0, invalidInput("grep", fmt.Sprintf("unknown engine %d", e))
}

// rgThreads is the threads of each rg process. Given explicit files, rg
// stats each a few times and, on one thread, alternates that with
// searching; a second thread overlaps the two. Measured on Go's source
// tree: 1.5× plain rg on the directory with one thread per process, 1.1-1.2×
// with two.
const rgThreads = "2"

// rgProcs is how many rg processes search n files at once: two per
// GOMAXPROCS (each has rgThreads threads), fewer for few files, as starting
// a process costs about as much as searching a few hundred small files.
func rgProcs(n int) int {
	return max(1, min(2*runtime.GOMAXPROCS(0), n/256))
}

// batchArgBytes bounds the file arguments of one rg process, well below
// Linux's ARG_MAX (2 MiB by default, shared with the environment). Tests
// lower it.
var batchArgBytes = 512 << 10

// rgFile is one local file rg searches, and the session files it holds.
type rgFile struct {
	path  string
	size  int64
	files []int // indices into job.files
}

// searchRG searches j.files with ripgrep, reading each file in place at
// its LocalPath: rg processes over batches of explicit file arguments, in
// parallel (see rgProcs). Files without a local path — empty files, and
// files of stores without local files — are searched natively (an empty
// file has no line, so nothing to match); paths sharing one local file are
// searched once.
func searchRG(ctx context.Context, j *job) ([]fileHits, error) {
	rg, err := rgPath()
	if err != nil {
		return nil, fmt.Errorf("the rg engine needs ripgrep on PATH: %w", err)
	}
	hits := make([]fileHits, len(j.files))
	var (
		local  []*rgFile
		byPath = make(map[string]int)
		native []bool
	)
	for i, t := range j.files {
		lp, ok := j.s.LocalPath(t.node)
		if !ok {
			if native == nil {
				native = make([]bool, len(j.files))
			}
			native[i] = true
			continue
		}
		if k, ok := byPath[lp]; ok {
			local[k].files = append(local[k].files, i)
			continue
		}
		if t.node.Encoding == vfs.EncodingUnknown {
			text, err := sniffText(lp)
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", t.path, err)
			}
			if !text {
				continue // binary, or gone: not searched
			}
		}
		byPath[lp] = len(local)
		local = append(local, &rgFile{path: lp, size: t.node.Size, files: []int{i}})
	}
	if native != nil {
		if err := searchSubset(ctx, j, func(i int) bool { return native[i] }, hits); err != nil {
			return nil, err
		}
	}
	if len(local) == 0 {
		return hits, nil
	}

	procs := rgProcs(len(local))
	batches := makeBatches(local, procs)
	found := make([]fileHits, len(local))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Reading in place bypasses the session and so its policy: ask it
	// about every file, as the native engine's reads do, while rg runs,
	// and drop what it refuses before anything is reported.
	refused := make(chan []bool, 1)
	go func() { refused <- refusedFiles(ctx, j, local) }()
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
		sem      = make(chan struct{}, procs)
	)
	for _, b := range batches {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if ctx.Err() != nil {
				return
			}
			if err := runRG(ctx, rg, j, local, b, byPath, found); err != nil {
				errOnce.Do(func() { firstErr = err; cancel() })
			}
		})
	}
	wg.Wait()
	gone := <-refused
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for k, f := range local {
		h := found[k]
		h.searched = true
		// rg writes each file's lines in order, whatever its threads do;
		// sorting is a cheap guarantee.
		if !slices.IsSortedFunc(h.lines, cmpLine) {
			slices.SortStableFunc(h.lines, cmpLine)
		}
		for _, i := range f.files {
			if !gone[i] {
				hits[i] = h
			}
		}
	}
	return hits, nil
}

// refusedFiles asks the session about each file rg searches, by index into
// j.files: true for those it refuses to read (its policy) or no longer has.
func refusedFiles(ctx context.Context, j *job, local []*rgFile) []bool {
	gone := make([]bool, len(j.files))
	for _, f := range local {
		for _, i := range f.files {
			if ctx.Err() != nil {
				return gone
			}
			if _, err := j.s.Stat(ctx, j.files[i].path); err != nil && skippable(err) {
				gone[i] = true
			}
		}
	}
	return gone
}

// searchSubset searches natively the files keep accepts, into hits.
func searchSubset(ctx context.Context, j *job, keep func(int) bool, hits []fileHits) error {
	sub := &job{s: j.s, m: j.m, mode: j.mode, before: j.before, after: j.after, maxLine: j.maxLine}
	var idx []int
	for i, t := range j.files {
		if keep(i) {
			sub.files = append(sub.files, t)
			idx = append(idx, i)
		}
	}
	h, err := searchNative(ctx, sub)
	if err != nil {
		return err
	}
	for k, i := range idx {
		hits[i] = h[k]
	}
	return nil
}

// sniffText reports whether the first sniffBytes of the file at lp are
// free of NUL bytes; false, without error, when the file is gone.
func sniffText(lp string) (bool, error) {
	f, err := os.Open(lp)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, err
	}
	defer f.Close()
	buf := make([]byte, sniffBytes)
	n, err := io.ReadFull(f, buf)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return false, err
	}
	return bytes.IndexByte(buf[:n], 0) < 0, nil
}

// makeBatches splits files (indices into local) into procs (or more)
// batches of balanced work (bytes, plus a per-file cost), each within
// batchArgBytes of arguments: the longest-processing-time rule.
func makeBatches(local []*rgFile, procs int) [][]int {
	const perFile = 4 << 10 // opening a file costs about as much as reading 4 KiB
	var argBytes int
	order := make([]int, len(local))
	for k, f := range local {
		order[k] = k
		argBytes += len(f.path) + 1
	}
	slices.SortStableFunc(order, func(a, b int) int { return -cmpInt64(local[a].size, local[b].size) })
	n := max(procs, (argBytes+batchArgBytes-1)/batchArgBytes)
	n = max(1, min(n, len(local)))
	type batch struct {
		files []int
		work  int64
		args  int
	}
	bs := make([]batch, n)
	for _, k := range order {
		f := local[k]
		best := -1
		for b := range bs {
			if bs[b].args+len(f.path)+1 > batchArgBytes && len(bs[b].files) > 0 {
				continue
			}
			if best < 0 || bs[b].work < bs[best].work {
				best = b
			}
		}
		if best < 0 {
			bs = append(bs, batch{})
			best = len(bs) - 1
		}
		bs[best].files = append(bs[best].files, k)
		bs[best].work += f.size + perFile
		bs[best].args += len(f.path) + 1
	}
	out := make([][]int, 0, len(bs))
	for _, b := range bs {
		if len(b.files) > 0 {
			out = append(out, b.files)
		}
	}
	return out
}

func cmpLine(a, b hitLine) int { return a.no - b.no }

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// rgArgs are the arguments of every rg run: no configuration, ignore files
// or hidden-file rules (the walk already selected the files), every file
// searched as text (binary ones are already left out), and output that
// names each line's file, NUL-terminated.
func rgArgs(j *job) []string {
	args := []string{"--no-config", "--no-ignore", "--hidden", "--no-messages", "--text",
		"--color", "never", "--with-filename", "--null", "--no-heading", "--line-number", "--threads", rgThreads}
	switch j.mode {
	case OutputCount:
		args = append(args, "--count")
	case OutputFilesWithMatches:
		args = append(args, "--files-with-matches")
	default:
		if j.before > 0 {
			args = append(args, "--before-context", strconv.Itoa(j.before))
		}
		if j.after > 0 {
			args = append(args, "--after-context", strconv.Itoa(j.after))
		}
		if j.maxMatches > 0 {
			// As the native engine: no file contributes more matching
			// lines than the result can hold.
			args = append(args, "--max-count", strconv.Itoa(j.maxMatches))
		}
	}
	return append(args, "--regexp", j.m.rg, "--")
}

// rgWaitDelay bounds how long reaping rg waits for its output to close
// once it has exited or been killed. Generous: on a loaded machine (the
// race detector, dozens of runnable threads) the goroutine copying rg's
// output may wait a second for a CPU, and a search that completed must
// not fail for that; rg's process group is killed on cancel, so nothing
// holds the pipe open longer than that.
const rgWaitDelay = 10 * time.Second

// runRG runs rg on one batch and parses its output into found.
func runRG(ctx context.Context, rg string, j *job, local []*rgFile, batch []int, byPath map[string]int, found []fileHits) error {
	args := rgArgs(j)
	for _, k := range batch {
		args = append(args, local[k].path)
	}
	cmd := exec.CommandContext(ctx, rg, args...)
	// rg runs in a process group of its own, killed whole when ctx ends:
	// nothing it may start outlives the search or holds its output open.
	killGroupOnCancel(cmd)
	cmd.WaitDelay = rgWaitDelay
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("run rg: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("run rg: %w", err)
	}
	// Stop reading when ctx ends, whoever still holds the pipe's other end.
	stop := context.AfterFunc(ctx, func() { out.Close() })
	defer stop()
	perr := parseRG(bufio.NewReaderSize(out, 64<<10), j, byPath, found)
	if perr != nil && ctx.Err() != nil {
		cmd.Wait()
		return ctx.Err()
	}
	if perr != nil {
		// Drain so that rg is not blocked writing when Wait reaps it.
		_, _ = io.Copy(io.Discard, out)
	}
	werr := cmd.Wait()
	if perr != nil {
		return perr
	}
	if werr != nil {
		var ee *exec.ExitError
		if !errors.As(werr, &ee) {
			return fmt.Errorf("run rg: %w", werr)
		}
		switch code := ee.ExitCode(); {
		case code == 1: // no match
		case code == 2 && stderr.Len() == 0:
			// --no-messages: a file vanished since the tree was taken.
		default:
			if err := ctx.Err(); err != nil {
				return err
			}
			return fmt.Errorf("rg exited with status %d: %s", code, strings.TrimSpace(truncate(stderr.String(), 1000)))
		}
	}
	return nil
}

// parseRG reads rg's output: "PATH\0N:text" for a matching line and
// "PATH\0N-text" for a context line, "--" between groups (OutputContent);
// "PATH\0N" (OutputCount); "PATH\0" (OutputFilesWithMatches).
func parseRG(r *bufio.Reader, j *job, byPath map[string]int, found []fileHits) error {
	if j.mode == OutputFilesWithMatches {
		for {
			p, err := readRecord(r, 0)
			if len(p) > 0 {
				k, ok := byPath[string(bytes.TrimSuffix(p, []byte{0}))]
				if !ok {
					return fmt.Errorf("parse rg output: unknown file %q", p)
				}
				found[k].count = 1
			}
			if err != nil {
				return ignoreEOF(err)
			}
		}
	}
	for {
		line, err := readRecord(r, '\n')
		if len(line) > 0 {
			if perr := parseRGLine(bytes.TrimSuffix(line, []byte{'\n'}), j, byPath, found); perr != nil {
				return perr
			}
		}
		if err != nil {
			return ignoreEOF(err)
		}
	}
}

// parseRGLine parses one line of rg's output (without its '\n').
func parseRGLine(line []byte, j *job, byPath map[string]int, found []fileHits) error {
	nul := bytes.IndexByte(line, 0)
	if nul < 0 {
		return nil // "--", between context groups
	}
	k, ok := byPath[string(line[:nul])]
	if !ok {
		return fmt.Errorf("parse rg output: unknown file %q", line[:nul])
	}
	rest := line[nul+1:]
	d := 0
	for d < len(rest) && '0' <= rest[d] && rest[d] <= '9' {
		d++
	}
	n, err := strconv.Atoi(string(rest[:d]))
	if err != nil {
		return fmt.Errorf("parse rg output: bad number in %q", truncate(string(line), 200))
	}
	if j.mode == OutputCount {
		found[k].count = n
		return nil
	}
	if d == len(rest) || (rest[d] != ':' && rest[d] != '-') {
		return fmt.Errorf("parse rg output: bad line %q", truncate(string(line), 200))
	}
	context := rest[d] == '-'
	if !context {
		found[k].count++
	}
	found[k].lines = append(found[k].lines, hitLine{no: n, text: cleanLine(rest[d+1:], j.maxLine), context: context})
	return nil
}

// readRecord reads up to and including delim, however long the record;
// the slice is valid until the next read.
func readRecord(r *bufio.Reader, delim byte) ([]byte, error) {
	line, err := r.ReadSlice(delim)
	if err != bufio.ErrBufferFull {
		return line, err
	}
	long := append([]byte(nil), line...)
	for err == bufio.ErrBufferFull {
		line, err = r.ReadSlice(delim)
		long = append(long, line...)
	}
	return long, err
}

func ignoreEOF(err error) error {
	if err == io.EOF {
		return nil
	}
	return fmt.Errorf("read rg output: %w", err)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
