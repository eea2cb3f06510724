// Package bench holds vfsd's benchmark commands: each times vfsd against the
// obvious alternative in the same run and prints one JSON object per line.
package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// CowOptions configure the copy-on-write benchmark.
type CowOptions struct {
	Sizes   []int  // workspace sizes, in files
	SizeKB  int    // size of each file
	Dir     string // where to build workspaces; the system temp dir when ""
	Repeats int    // timed repetitions per measurement (the median is reported)
	Log     io.Writer
	// Self is the vfsd binary, re-run as `vfsd bench reopen-read` to time
	// reopening the repository in a fresh process; without it the reopen
	// figures are left out.
	Self string
}

// CowResult is one line of `vfsd bench cow`.
type CowResult struct {
	Files    int     `json:"files"`
	Dirs     int     `json:"dirs"`
	SizeKB   int     `json:"size_kb"`
	Repeats  int     `json:"repeats"`
	BuildSec float64 `json:"build_s"`

	ForkMs            float64 `json:"fork_ms"`
	RestoreMs         float64 `json:"restore_ms"`
	SnapshotDirty10Ms float64 `json:"snapshot_dirty10_ms"`
	// SnapshotFullMs is the first snapshot of a session whose every file
	// was written through handles since it began: all content hashed and
	// stored, every manifest written.
	SnapshotFullMs float64 `json:"snapshot_full_ms"`
	// SnapshotFullBlobsMs is the first snapshot of a session whose every
	// file was written by tools: content is already in blobs, so only the
	// manifests are written.
	SnapshotFullBlobsMs float64 `json:"snapshot_full_blobs_ms"`
	// SnapshotFullOverlayMs is the first snapshot of a session mounted
	// with the kernel overlay backend, after n new files were written
	// through the mount: the ingest of the upper directory (every file's
	// content stored) and the snapshot, as the daemon's snapshot of a
	// mounted session does them. Left out where the backend cannot mount.
	SnapshotFullOverlayMs float64 `json:"snapshot_full_overlay_ms,omitempty"`
	// CpAMs is cp -a of a materialized copy of the workspace, timed in
	// the same rounds as the full snapshots.
	CpAMs            float64 `json:"cp_a_ms"`
	FullVsCpA        float64 `json:"snapshot_full_vs_cp_a"`
	FullOverlayVsCpA float64 `json:"snapshot_full_overlay_vs_cp_a,omitempty"`
	MetaBytesPerFile float64 `json:"meta_bytes_per_file"`
	// RecordBytesPerFile is the workspace's snapshot record in the store
	// (its manifests, packed) per file: the metadata a push uploads and a
	// fork on another machine fetches.
	RecordBytesPerFile float64 `json:"record_bytes_per_file"`
	// ReopenReadMs is a fresh process (vfsd bench reopen-read) opening the
	// closed repository and reading one file of a session whose base is
	// the workspace's snapshot: the median of Repeats runs, each timed
	// inside the process from before the store is opened to after the
	// read (process start-up not included).
	ReopenReadMs float64 `json:"reopen_read_ms,omitempty"`
	// ReopenRead100Ms is the same with 100 more sessions (forks of the
	// workspace, one write each) in the repository; rounds alternate with
	// ReopenReadMs's.
	ReopenRead100Ms float64 `json:"reopen_read_100_sessions_ms,omitempty"`
	// ReopenRepoMs and ReopenRepo100Ms are the part of those spent opening
	// the store and the repository, before the session is opened (its
	// journal replayed, its base loaded) and the file read.
	ReopenRepoMs    float64 `json:"reopen_repo_ms,omitempty"`
	ReopenRepo100Ms float64 `json:"reopen_repo_100_sessions_ms,omitempty"`
}

// fileLayout places file i of a workspace: 50 files per directory, 20
// directories per group, like a source tree.
func fileLayout(i int) vfs.Path {
	d := i / 50
	return vfs.Path(fmt.Sprintf("g%03d/d%04d/f%05d.txt", d/20, d, i))
}

// content returns file i's content: sizeKB KiB, distinct per file.
func content(block []byte, i int) []byte {
	b := slices.Clone(block)
	binary.LittleEndian.PutUint64(b, uint64(i))
	return b
}

// Cow runs the copy-on-write benchmark, writing one JSON object per size.
func Cow(ctx context.Context, opts CowOptions, out io.Writer) error {
	if opts.Repeats <= 0 {
		opts.Repeats = 5
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if _, err := exec.LookPath("cp"); err != nil {
		return fmt.Errorf("bench cow needs cp(1): %w", err)
	}
	for _, n := range opts.Sizes {
		res, err := cowOnce(ctx, opts, n)
		if err != nil {
			return fmt.Errorf("bench cow at %d files: %w", n, err)
		}
		if err := json.NewEncoder(out).Encode(res); err != nil {
			return err
		}
	}
	return nil
}

func cowOnce(ctx context.Context, opts CowOptions, n int) (CowResult, error) {
	res := CowResult{Files: n, SizeKB: opts.SizeKB, Repeats: opts.Repeats}
	root, err := os.MkdirTemp(opts.Dir, "vfsd-bench-cow-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(root)
	repo, err := snapshot.OpenLocalRepo(ctx, root, snapshot.RepoOptions{})
	if err != nil {
		return res, err
	}
	defer repo.Close()

	block := make([]byte, opts.SizeKB<<10)
	for i := range block {
		block[i] = byte(rand.IntN(256))
	}

	// The base workspace, imported in bulk as a host mount would be.
	start := time.Now()
	fmt.Fprintf(opts.Log, "building a workspace of %d files of %d KiB...\n", n, opts.SizeKB)
	base, err := buildBase(ctx, repo, repo.Store(), block, n, opts.Log)
	if err != nil {
		return res, err
	}
	res.BuildSec = time.Since(start).Seconds()
	res.Dirs = base.Tree.Len() - int(base.Tree.Files())

	s, err := repo.NewSession(ctx, snapshot.SessionOptions{Base: base.ID})
	if err != nil {
		return res, err
	}

	fmt.Fprintln(opts.Log, "timing fork, restore and snapshot...")
	res.ForkMs, err = median(opts.Repeats, func() (time.Duration, error) {
		time.Sleep(50 * time.Millisecond) // let the pool of prepared session dirs refill
		quiesce(root)
		t := time.Now()
		f, err := repo.Fork(ctx, snapshot.Source{Snapshot: base.ID}, snapshot.SessionOptions{})
		d := time.Since(t)
		if err == nil {
			err = repo.DeleteSession(f.ID())
		}
		return d, err
	})
	if err != nil {
		return res, fmt.Errorf("fork: %w", err)
	}
	rnd := rand.New(rand.NewPCG(1, uint64(n)))
	change := func(k int) error {
		for range k {
			i := rnd.IntN(n)
			if _, err := s.WriteFile(ctx, fileLayout(i), bytes.NewReader(content(block, n+rnd.IntN(1<<30))), vfs.WriteOptions{}); err != nil {
				return err
			}
		}
		return nil
	}
	res.RestoreMs, err = median(opts.Repeats, func() (time.Duration, error) {
		if err := change(10); err != nil {
			return 0, err
		}
		quiesce(root)
		t := time.Now()
		err := repo.Restore(ctx, s, base.ID)
		return time.Since(t), err
	})
	if err != nil {
		return res, fmt.Errorf("restore: %w", err)
	}
	res.SnapshotDirty10Ms, err = median(opts.Repeats, func() (time.Duration, error) {
		if err := change(10); err != nil {
			return 0, err
		}
		quiesce(root)
		t := time.Now()
		_, err := repo.Snapshot(ctx, s, "dirty10")
		return time.Since(t), err
	})
	if err != nil {
		return res, fmt.Errorf("snapshot after 10 changes: %w", err)
	}

	res.MetaBytesPerFile = metaBytesPerFile(base.Tree)
	if h, err := vfs.ParseHash(base.ID); err == nil {
		if size, err := repo.Store().Stat(ctx, snapshot.Records, h); err == nil {
			res.RecordBytesPerFile = round(float64(size) / float64(base.Tree.Files()))
		}
	}

	tree := filepath.Join(root, "materialized")
	if _, err := repo.Materialize(ctx, snapshot.Source{Snapshot: base.ID}, tree); err != nil {
		return res, err
	}
	if err := fullRounds(ctx, opts, &res, repo, root, tree, block, n); err != nil {
		return res, err
	}

	if opts.Self != "" {
		fmt.Fprintln(opts.Log, "timing reopening the repository and reading one file, in fresh processes...")
		few, many, err := reopenRead(ctx, opts, repo, root, base.ID, n)
		if err != nil {
			return res, fmt.Errorf("reopen and read: %w", err)
		}
		res.ReopenReadMs, res.ReopenRepoMs = few.ElapsedMs, few.OpenRepoMs
		res.ReopenRead100Ms, res.ReopenRepo100Ms = many.ElapsedMs, many.OpenRepoMs
	}
	return res, nil
}

// reopenExtraSessions is how many more sessions ReopenRead100Ms's
// repository holds.
const reopenExtraSessions = 100

// reopenRead sets up two session directories over repo's store — one with
// a session forked from base and changed once, the other with the same
// plus 100 forks — closes repo (releasing the store's lock), and times
// fresh processes opening each and reading one file of that session,
// alternating between the two. It returns the medians.
func reopenRead(ctx context.Context, opts CowOptions, repo *snapshot.Repo, root, base string, n int) (few, many ReopenReadResult, err error) {
	const target = "reopen-target"
	path := fileLayout(n / 2)
	prepare := func(r *snapshot.Repo, extra int) error {
		forks := []string{target}
		for i := range extra {
			forks = append(forks, fmt.Sprintf("extra-%03d", i))
		}
		for _, id := range forks {
			s, err := r.Fork(ctx, snapshot.Source{Snapshot: base}, snapshot.SessionOptions{ID: id})
			if err != nil {
				return err
			}
			if _, err := s.WriteFile(ctx, fileLayout(0), strings.NewReader(id), vfs.WriteOptions{}); err != nil {
				return err
			}
		}
		return nil
	}
	fewDir, manyDir := filepath.Join(root, "sessions-reopen"), filepath.Join(root, "sessions-reopen-100")
	for _, c := range []struct {
		dir   string
		extra int
	}{{fewDir, 0}, {manyDir, reopenExtraSessions}} {
		r, err := snapshot.OpenRepo(ctx, repo.Store(), c.dir, snapshot.RepoOptions{})
		if err != nil {
			return few, many, err
		}
		err = prepare(r, c.extra)
		if cerr := r.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return few, many, err
		}
	}
	if err := repo.Close(); err != nil { // the store too: the child takes its lock
		return few, many, err
	}
	run := func(sessions string) (ReopenReadResult, error) {
		quiesce(root)
		cmd := exec.CommandContext(ctx, opts.Self, "bench", "reopen-read", "--store", filepath.Join(root, "store"),
			"--sessions", sessions, "--session", target, "--path", string(path))
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			return ReopenReadResult{}, fmt.Errorf("%s bench reopen-read: %v: %s", opts.Self, err, bytes.TrimSpace(stderr))
		}
		var r ReopenReadResult
		if err := json.Unmarshal(out, &r); err != nil {
			return r, fmt.Errorf("bench reopen-read printed %q: %w", out, err)
		}
		return r, nil
	}
	var a, b []ReopenReadResult
	for range opts.Repeats {
		r, err := run(fewDir)
		if err != nil {
			return few, many, err
		}
		a = append(a, r)
		if r, err = run(manyDir); err != nil {
			return few, many, err
		}
		b = append(b, r)
	}
	return medianReopen(a), medianReopen(b), nil
}

// medianReopen returns the median of each figure of rs.
func medianReopen(rs []ReopenReadResult) ReopenReadResult {
	med := func(f func(ReopenReadResult) float64) float64 {
		ds := make([]time.Duration, len(rs))
		for i, r := range rs {
			ds[i] = time.Duration(f(r) * float64(time.Millisecond))
		}
		return medianMs(ds)
	}
	return ReopenReadResult{
		ElapsedMs:  med(func(r ReopenReadResult) float64 { return r.ElapsedMs }),
		OpenRepoMs: med(func(r ReopenReadResult) float64 { return r.OpenRepoMs }),
		SessionMs:  med(func(r ReopenReadResult) float64 { return r.SessionMs }),
		Bytes:      rs[0].Bytes,
	}
}

// ReopenReadResult is what `vfsd bench reopen-read` prints.
type ReopenReadResult struct {
	ElapsedMs  float64 `json:"elapsed_ms"`   // opening the store and the repository, the session, and reading
	OpenRepoMs float64 `json:"open_repo_ms"` // the part before the session is opened
	SessionMs  float64 `json:"session_ms"`   // opening the session (its snapshot's head, its journal)
	Bytes      int     `json:"bytes"`        // read
}

// ReopenRead opens the repository of store dir storeDir and sessions dir
// sessionsDir and reads file path of session id, timing it all: the body
// of `vfsd bench reopen-read`, run in a fresh process.
func ReopenRead(ctx context.Context, storeDir, sessionsDir, id, path string) (ReopenReadResult, error) {
	p, err := vfs.ParsePath(path)
	if err != nil {
		return ReopenReadResult{}, err
	}
	start := time.Now()
	store, err := snapshot.OpenLocal(storeDir)
	if err != nil {
		return ReopenReadResult{}, err
	}
	defer store.Close()
	repo, err := snapshot.OpenRepo(ctx, store, sessionsDir, snapshot.RepoOptions{})
	if err != nil {
		return ReopenReadResult{}, err
	}
	defer repo.Close()
	openRepo := time.Since(start)
	s, err := repo.Session(id)
	if err != nil {
		return ReopenReadResult{}, err
	}
	session := time.Since(start) - openRepo
	b, _, err := s.ReadFile(ctx, p)
	if err != nil {
		return ReopenReadResult{}, err
	}
	return ReopenReadResult{ElapsedMs: ms(time.Since(start)), OpenRepoMs: ms(openRepo), SessionMs: ms(session), Bytes: len(b)}, nil
}

// buildBase writes n files' content to the store, deferred and in parallel,
// and commits the tree as a snapshot.
func buildBase(ctx context.Context, repo *snapshot.Repo, store snapshot.Store, block []byte, n int, log io.Writer) (*snapshot.Snapshot, error) {
	now := time.Now().UnixMilli()
	tb := vfs.NewTreeBuilder(vfs.Node{Kind: vfs.KindDir, Mode: vfs.DefaultDirMode, Version: 1, Ino: 1, Created: now, Updated: now})
	hashes := make([]vfs.Hash, n)
	err := parallel(n, func(i int) error {
		h, _, err := store.Put(ctx, snapshot.Blobs, bytes.NewReader(content(block, i)), snapshot.PutOptions{Deferred: true})
		hashes[i] = h
		if i > 0 && i%10000 == 0 {
			fmt.Fprintf(log, "  %d/%d files\n", i, n)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := store.Sync(ctx); err != nil {
		return nil, err
	}
	ino := uint64(1)
	for i := range n {
		p := fileLayout(i)
		p.Ancestors(func(a vfs.Path) bool {
			if _, ok := tb.Get(a); ok {
				return false
			}
			ino++
			tb.Set(a, vfs.Node{Kind: vfs.KindDir, Mode: vfs.DefaultDirMode, Version: 1, Ino: ino, Created: now, Updated: now})
			return true
		})
		ino++
		tb.Set(p, vfs.Node{Kind: vfs.KindFile, Mode: vfs.DefaultFileMode, Size: int64(len(block)), Version: 1,
			Ino: ino, Created: now, Updated: now, Blob: hashes[i], Encoding: vfs.EncodingBinary})
	}
	return repo.CommitTree(ctx, tb.Tree(), "bench base")
}

// Ways fullRounds fills a fresh session before timing its first snapshot.
const (
	fillHandles = "handles" // written through handles, as the FUSE mount writes
	fillTools   = "tools"   // whole-file writes: content already in blobs
	fillOverlay = "overlay" // written through a kernel overlay mount of the session
	fillCpA     = "cp -a"   // not a snapshot: cp -a of the materialized tree
)

// fullRounds times the first full snapshots and cp -a, in opts.Repeats
// rounds that interleave them (each round in another order, so that none
// always runs first on a filesystem busy with the last one's writeback),
// and stores the medians in res. The overlay figure is left out, with the
// reason on the log, where the overlay backend cannot mount.
func fullRounds(ctx context.Context, opts CowOptions, res *CowResult, repo *snapshot.Repo, root, tree string, block []byte, n int) error {
	kinds := []string{fillHandles, fillTools, fillCpA}
	if err := overlayUsable(); err != nil {
		fmt.Fprintf(opts.Log, "snapshot_full_overlay_ms left out: %v\n", err)
	} else {
		kinds = append(kinds, fillOverlay)
	}
	times := map[string][]time.Duration{}
	for r := range opts.Repeats {
		for k := range kinds {
			kind := kinds[(r+k)%len(kinds)]
			fmt.Fprintf(opts.Log, "round %d/%d: %s...\n", r+1, opts.Repeats, kind)
			// Content distinct from every earlier round's and kind's: no
			// snapshot finds its blobs stored already.
			offset := (2 + r*len(kinds) + k) * n
			var (
				d   time.Duration
				err error
			)
			switch kind {
			case fillCpA:
				d, err = timeCpA(ctx, root, tree)
			case fillOverlay:
				d, err = fullSnapshotOverlay(ctx, repo, root, block, n, offset)
			default:
				d, err = fullSnapshot(ctx, repo, block, n, offset, kind == fillHandles)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", kind, err)
			}
			times[kind] = append(times[kind], d)
		}
	}
	res.SnapshotFullMs = medianMs(times[fillHandles])
	res.SnapshotFullBlobsMs = medianMs(times[fillTools])
	res.CpAMs = medianMs(times[fillCpA])
	res.FullVsCpA = round(res.SnapshotFullMs / res.CpAMs)
	if ds := times[fillOverlay]; len(ds) > 0 {
		res.SnapshotFullOverlayMs = medianMs(ds)
		res.FullOverlayVsCpA = round(res.SnapshotFullOverlayMs / res.CpAMs)
	}
	return nil
}

// timeCpA times cp -a of tree, from a flushed filesystem, and removes the
// copy (untimed).
func timeCpA(ctx context.Context, root, tree string) (time.Duration, error) {
	dst := filepath.Join(root, "copy")
	quiesce(root)
	t := time.Now()
	if out, err := exec.CommandContext(ctx, "cp", "-a", tree, dst).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("cp -a: %v: %s", err, out)
	}
	d := time.Since(t)
	return d, os.RemoveAll(dst)
}

// fullSnapshot times the first snapshot of a fresh session holding n new
// files, written through handles (viaHandles) or by whole-file writes,
// file i holding content(block, offset+i).
func fullSnapshot(ctx context.Context, repo *snapshot.Repo, block []byte, n, offset int, viaHandles bool) (time.Duration, error) {
	s, err := repo.NewSession(ctx, snapshot.SessionOptions{})
	if err != nil {
		return 0, err
	}
	defer repo.DeleteSession(s.ID())
	rctx := vfs.Relaxed(ctx)
	for i := range n {
		p := fileLayout(i)
		if _, err := s.Mkdir(rctx, p.Parent(), vfs.MkdirOptions{Parents: true}); err != nil {
			return 0, err
		}
	}
	err = parallel(n, func(i int) error {
		data := content(block, offset+i)
		if !viaHandles {
			_, err := s.WriteFile(rctx, fileLayout(i), bytes.NewReader(data), vfs.WriteOptions{})
			return err
		}
		h, err := s.OpenFile(rctx, fileLayout(i), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		if _, err := h.WriteAt(data, 0); err != nil {
			return err
		}
		return h.Close()
	})
	if err != nil {
		return 0, err
	}
	if err := s.Sync(); err != nil {
		return 0, err
	}
	quiesce(filepath.Dir(s.Dir()))
	t := time.Now()
	_, err = repo.Snapshot(ctx, s, "full")
	return time.Since(t), err
}

// metaBytesPerFile measures the Go heap one session's tree takes, per file:
// the live heap with a private copy of the tree minus the live heap once the
// copy is dropped, both measured at the same point.
func metaBytesPerFile(t vfs.Tree) float64 {
	root, _, _ := t.Lookup(vfs.Root) // never beneath a lazy directory
	tb := vfs.NewTreeBuilder(root)
	_ = t.Walk(vfs.Root, func(p vfs.Path, n vfs.Node) error {
		tb.Set(vfs.Path(string([]byte(p))), n) // fresh path strings: count them too
		return nil
	})
	cp := tb.Tree()
	var with, without runtime.MemStats
	fullGC()
	runtime.ReadMemStats(&with)
	runtime.KeepAlive(cp)
	cp = vfs.Tree{}
	fullGC()
	runtime.ReadMemStats(&without)
	return round(float64(int64(with.HeapAlloc)-int64(without.HeapAlloc)) / float64(t.Files()))
}

// fullGC collects twice: objects kept by sync.Pool survive one collection.
func fullGC() {
	runtime.GC()
	runtime.GC()
}

// parallel runs fn for 0..n-1 on a few goroutines, returning the first error.
func parallel(n int, fn func(i int) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		ferr error
	)
	next := make(chan int)
	for range 4 * runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range next {
				if err := fn(i); err != nil {
					mu.Lock()
					if ferr == nil {
						ferr = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return ferr
}

// median runs fn k times and returns the median duration in milliseconds.
func median(k int, fn func() (time.Duration, error)) (float64, error) {
	var ds []time.Duration
	for range k {
		d, err := fn()
		if err != nil {
			return 0, err
		}
		ds = append(ds, d)
	}
	return medianMs(ds), nil
}

func ms(d time.Duration) float64 { return round(float64(d) / float64(time.Millisecond)) }

func round(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }

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

// quiesce flushes the filesystem holding dir, off the clock, so that a timed
// operation does not pay for the writes of the untimed setup before it (on
// ext4 an fdatasync commits every pending metadata change of the whole
// filesystem). It does not evict the page cache.
func quiesce(dir string) {
	syncfs(dir)
}
