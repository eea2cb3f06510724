package hostmount

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// Options configure an Importer: the daemon's side of host mounts.
type Options struct {
	// Roots are the host directories mounts may read from; none means no
	// mount is allowed.
	Roots []string
	// CacheFile keeps the import cache across restarts; "" keeps it in
	// memory only.
	CacheFile string
	// ASCIIOnly skips host names that are not ASCII (the session policy of
	// some presets).
	ASCIIOnly bool
	// Workers read and hash files in parallel; 4 per CPU when 0.
	Workers int
	// Private are host paths that are never staged nor written by Apply,
	// whatever a mount asks: the daemon's data directory, socket and token
	// file. A mount inside one is refused; one inside a mount is skipped
	// (SkipPrivate). Paths that do not exist are ignored.
	Private []string
}

// Importer stages host folders into sessions. It holds the allow-listed
// roots open and the import cache; it is safe for concurrent use.
type Importer struct {
	roots     []root
	cache     *Cache
	asciiOnly bool
	workers   int
	private   privateSet
}

// New opens the allow-listed roots and the import cache.
func New(opts Options) (*Importer, error) {
	roots, err := openRoots(opts.Roots)
	if err != nil {
		return nil, err
	}
	cache, err := OpenCache(opts.CacheFile)
	if err != nil {
		closeRoots(roots)
		return nil, err
	}
	if opts.Workers <= 0 {
		opts.Workers = 4 * runtime.GOMAXPROCS(0)
	}
	return &Importer{roots: roots, cache: cache, asciiOnly: opts.ASCIIOnly, workers: opts.Workers,
		private: newPrivateSet(opts.Private)}, nil
}

// Close saves the cache and releases the roots.
func (im *Importer) Close() error {
	closeRoots(im.roots)
	im.roots = nil
	return im.cache.Save()
}

// Progress is what an import has done so far. During the scan the totals
// are not known yet (zero); during the import they are.
type Progress struct {
	Phase      string `json:"phase"` // "scan" or "import"
	Files      int64  `json:"files"`
	FilesTotal int64  `json:"files_total"`
	Bytes      int64  `json:"bytes"`
	BytesTotal int64  `json:"bytes_total"`
}

// MountReport is what one mount contributed.
type MountReport struct {
	HostPath  string `json:"host_path"`
	MountPath string `json:"mount_path"`
	Files     int64  `json:"files"`
	Bytes     int64  `json:"bytes"`
}

// Report tells what an import did.
type Report struct {
	Snapshot string        `json:"snapshot"`
	Files    int64         `json:"files"`
	Dirs     int64         `json:"dirs"`
	Symlinks int64         `json:"symlinks"`
	Special  int64         `json:"special,omitempty"` // fifos, sockets and devices
	Links    int64         `json:"links,omitempty"`   // further names of hard-linked entries
	Bytes    int64         `json:"bytes"`
	Cached   int64         `json:"cached"` // files whose content the cache knew: not read
	Skipped  []Skip        `json:"skipped"`
	Mounts   []MountReport `json:"mounts"`
	ScanMs   float64       `json:"scan_ms"`
	TotalMs  float64       `json:"total_ms"`
}

// progressEvery throttles progress callbacks (a variable for tests).
var progressEvery = 100 * time.Millisecond

// throttle calls fn at most every progressEvery, and always when forced.
type throttle struct {
	mu   sync.Mutex
	fn   func(Progress)
	last time.Time
}

func (t *throttle) report(p Progress, force bool) {
	if t.fn == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if now := time.Now(); force || now.Sub(t.last) >= progressEvery {
		t.last = now
		t.fn(p)
	}
}

// scanned is the result of scanning one mount.
type scanned struct {
	mp      *mountPlan
	root    root
	entries []entry
	bytes   int64
}

// Import stages mounts into repo as a new snapshot, the base for a session.
// Later mounts overwrite earlier entries at the same paths; directories
// merge. A mount over its byte cap, an invalid pattern or a path outside
// the allowed roots fails the whole import, and nothing is imported.
// progress, if not nil, is called as the import goes.
func (im *Importer) Import(ctx context.Context, repo *snapshot.Repo, mounts []Mount, progress func(Progress)) (*snapshot.Snapshot, *Report, error) {
	start := time.Now()
	tp := &throttle{fn: progress}
	// Everything that can be checked without I/O is checked first.
	plans := make([]*mountPlan, len(mounts))
	for i, m := range mounts {
		mp, err := validate(m)
		if err != nil {
			return nil, nil, err
		}
		plans[i] = mp
	}
	rep := &Report{Skipped: []Skip{}}
	var all []scanned
	var files, bytes int64
	for _, mp := range plans {
		r, rel, err := findRoot(im.roots, mp.hostPath)
		if err != nil {
			return nil, nil, err
		}
		sc := &scanner{ctx: ctx, root: r, mp: mp, asciiOnly: im.asciiOnly, private: im.private, privileged: isRoot}
		if mp.FollowSymlinks {
			sc.visiting = make(map[[2]uint64]bool)
		}
		sc.progress = func(f, b int64) { tp.report(Progress{Phase: "scan", Files: files + f, Bytes: bytes + b}, false) }
		if err := sc.scan(rel); err != nil {
			return nil, nil, err
		}
		if mp.MaxBytes > 0 && sc.bytes > mp.MaxBytes {
			return nil, nil, tooLarge(mp, sc.bytes)
		}
		if len(mp.include) > 0 {
			sc.entries = pruneEmptyDirs(sc.entries, mp.mountPath)
		}
		files += sc.files
		bytes += sc.bytes
		rep.Skipped = append(rep.Skipped, sc.skipped...)
		all = append(all, scanned{mp: mp, root: r, entries: sc.entries, bytes: sc.bytes})
	}
	rep.ScanMs = msSince(start)
	tp.report(Progress{Phase: "scan", Files: files, Bytes: bytes}, true)

	imp := &contentImport{im: im, repo: repo, tp: tp, filesTotal: files, bytesTotal: bytes}
	defer imp.release()
	if err := imp.run(ctx, all); err != nil {
		return nil, nil, err
	}
	rep.Skipped = append(rep.Skipped, imp.skipped...)
	rep.Cached = imp.cached
	for _, s := range all {
		if s.mp.MaxBytes > 0 && imp.mountBytes[s.mp] > s.mp.MaxBytes {
			return nil, nil, tooLarge(s.mp, imp.mountBytes[s.mp])
		}
	}
	if err := repo.Blobs().Sync(ctx); err != nil {
		return nil, nil, fmt.Errorf("import: sync store: %w", err)
	}
	tree := assemble(all, imp.done, start.UnixMilli(), rep)
	label := make([]string, len(plans))
	for i, mp := range plans {
		label[i] = mp.hostPath
	}
	snap, err := repo.CommitTree(ctx, tree, "import "+strings.Join(label, " "))
	if err != nil {
		return nil, nil, fmt.Errorf("import: %w", err)
	}
	if err := im.cache.Save(); err != nil {
		return nil, nil, err
	}
	rep.Snapshot = snap.ID
	rep.TotalMs = msSince(start)
	return snap, rep, nil
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }

func tooLarge(mp *mountPlan, found int64) error {
	return &vfs.Error{Op: "stage folder", Path: mp.hostPath, Code: vfs.CodeTooLarge,
		Msg: fmt.Sprintf("holds %d bytes to import, over its max_bytes cap of %d; narrow it with include_glob/exclude_glob or raise the cap", found, mp.MaxBytes)}
}

// pruneEmptyDirs drops directories that hold nothing imported (below the
// mount point): with include patterns, only the directories leading to
// included files are imported. entries are in path order.
func pruneEmptyDirs(entries []entry, top vfs.Path) []entry {
	keep := make(map[vfs.Path]bool)
	for _, e := range entries {
		if e.kind != vfs.KindDir {
			e.path.Ancestors(func(a vfs.Path) bool {
				if keep[a] {
					return false
				}
				keep[a] = true
				return a.HasPrefix(top) && a != top
			})
		}
	}
	out := entries[:0]
	for _, e := range entries {
		if e.kind != vfs.KindDir || e.path == top || keep[e.path] {
			out = append(out, e)
		}
	}
	return out
}

// Stage imports mounts and creates a session on the result.
func (im *Importer) Stage(ctx context.Context, repo *snapshot.Repo, opts snapshot.SessionOptions, mounts []Mount, progress func(Progress)) (*vfs.Session, *Report, error) {
	snap, rep, err := im.Import(ctx, repo, mounts, progress)
	if err != nil {
		return nil, nil, err
	}
	opts.Base = snap.ID
	s, err := repo.NewSession(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	return s, rep, nil
}

// Restage imports a session's mounts again — fast through the cache for
// whatever did not change on the host — and resets the session to the
// result, which Reset returns to from then on.
func (im *Importer) Restage(ctx context.Context, repo *snapshot.Repo, s *vfs.Session, mounts []Mount, progress func(Progress)) (*Report, error) {
	snap, rep, err := im.Import(ctx, repo, mounts, progress)
	if err != nil {
		return nil, err
	}
	if err := s.Reinit(ctx, snap.Tree, snap.ID); err != nil {
		return nil, err
	}
	return rep, nil
}

// imported is a file's content, as stored.
type imported struct {
	hash vfs.Hash
	size int64
	enc  vfs.Encoding
}

// contentImport reads, hashes and stores the files of a scan, in parallel.
type contentImport struct {
	im                     *Importer
	repo                   *snapshot.Repo
	tp                     *throttle
	filesTotal, bytesTotal int64

	mu         sync.Mutex
	done       map[*entry]imported
	skipped    []Skip
	unpins     []func()
	cached     int64
	files      int64
	bytes      int64
	mountBytes map[*mountPlan]int64
}

func (ci *contentImport) release() {
	for _, u := range ci.unpins {
		u()
	}
}

type job struct {
	s *scanned
	e *entry
}

func (ci *contentImport) run(ctx context.Context, all []scanned) error {
	ci.done = make(map[*entry]imported)
	ci.mountBytes = make(map[*mountPlan]int64)
	jobs := make(chan job)
	errc := make(chan error, 1)
	var wg sync.WaitGroup
	for range ci.im.workers {
		wg.Go(func() {
			for j := range jobs {
				if err := ci.file(ctx, j.s, j.e); err != nil {
					select {
					case errc <- err:
					default:
					}
				}
			}
		})
	}
feed:
	for i := range all {
		for k := range all[i].entries {
			if e := &all[i].entries[k]; e.kind == vfs.KindFile && !e.second {
				select {
				case jobs <- job{&all[i], e}:
				case err := <-errc:
					errc <- err
					break feed
				case <-ctx.Done():
					break feed
				}
			}
		}
	}
	close(jobs)
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	ci.tp.report(Progress{Phase: "import", Files: ci.files, FilesTotal: ci.filesTotal, Bytes: ci.bytes, BytesTotal: ci.bytesTotal}, true)
	return nil
}

// reading returns r counting what is read of a file into the import's
// progress as it goes, so that a large file moves the byte count while it
// is copied rather than only once it is done; counted tells how much it
// counted, for finish or unread.
func (ci *contentImport) reading(r io.Reader) (io.Reader, *int64) {
	var counted int64
	return &progressReader{r: r, ci: ci, counted: &counted}, &counted
}

// unread takes back what a file that was not imported counted.
func (ci *contentImport) unread(counted int64) {
	ci.mu.Lock()
	ci.bytes -= counted
	ci.mu.Unlock()
}

// progressReader is contentImport.reading's reader.
type progressReader struct {
	r       io.Reader
	ci      *contentImport
	counted *int64
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		ci := p.ci
		ci.mu.Lock()
		*p.counted += int64(n)
		ci.bytes += int64(n)
		pr := Progress{Phase: "import", Files: ci.files, FilesTotal: ci.filesTotal, Bytes: ci.bytes, BytesTotal: ci.bytesTotal}
		ci.mu.Unlock()
		ci.tp.report(pr, false)
	}
	return n, err
}

// finish records a file's import; counted is what reading already added
// to the byte count for it.
func (ci *contentImport) finish(s *scanned, e *entry, c imported, unpin func(), cached bool, counted int64) {
	ci.mu.Lock()
	ci.done[e] = c
	ci.unpins = append(ci.unpins, unpin)
	ci.files++
	ci.bytes += c.size - counted
	ci.mountBytes[s.mp] += c.size
	if cached {
		ci.cached++
	}
	p := Progress{Phase: "import", Files: ci.files, FilesTotal: ci.filesTotal, Bytes: ci.bytes, BytesTotal: ci.bytesTotal}
	ci.mu.Unlock()
	ci.tp.report(p, false)
}

func (ci *contentImport) skip(s *scanned, e *entry, reason string) {
	ci.mu.Lock()
	defer ci.mu.Unlock()
	ci.skipped = append(ci.skipped, Skip{HostPath: hostJoin(s.root.path, e.openRel), Reason: reason})
}
