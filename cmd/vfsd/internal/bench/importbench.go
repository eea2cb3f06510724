package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/vfsd/vfsd/hostmount"
	"github.com/vfsd/vfsd/snapshot"
)

// ImportOptions configure the import benchmark.
type ImportOptions struct {
	Tree    string // the host tree to import; the Go distribution's src when ""
	Dir     string // where to put stores and copies; the system temp dir when ""
	Repeats int    // repetitions per measurement (the median is reported)
	Log     io.Writer
}

// ImportResult is the line `vfsd bench import` prints.
type ImportResult struct {
	Tree           string   `json:"tree"`
	Files          int64    `json:"files"`
	Dirs           int64    `json:"dirs"`
	Bytes          int64    `json:"bytes"`
	Repeats        int      `json:"repeats"`
	ImportMs       float64  `json:"import_ms"`
	ReimportMs     float64  `json:"reimport_ms"`
	ReimportCached int64    `json:"reimport_cached"`
	CpAMs          float64  `json:"cp_a_ms"`
	RsyncMs        *float64 `json:"rsync_ms"` // null when rsync is not installed
	ImportVsCpA    float64  `json:"import_vs_cp_a"`
	ReimportVsCpA  float64  `json:"reimport_vs_cp_a"`
}

// Import times, in one run: importing a host tree into a fresh store (made
// durable), importing it again unchanged, cp -a and rsync -a of the same
// tree. The tree is read once beforehand so every contender starts from a
// warm page cache, and each timed step starts on a flushed filesystem.
func Import(ctx context.Context, opts ImportOptions, out io.Writer) error {
	if opts.Repeats <= 0 {
		opts.Repeats = 3
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	tree, err := hostTree(opts.Tree)
	if err != nil {
		return fmt.Errorf("bench import: %w", err)
	}
	res := ImportResult{Tree: tree, Repeats: opts.Repeats}
	fmt.Fprintf(opts.Log, "reading %s once to warm the page cache...\n", tree)
	if err := warm(tree); err != nil {
		return fmt.Errorf("bench import: %w", err)
	}
	work, err := os.MkdirTemp(opts.Dir, "vfsd-bench-import-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	var imports, reimports, cps, rsyncs []time.Duration
	for i := range opts.Repeats {
		fmt.Fprintf(opts.Log, "round %d/%d: import, re-import", i+1, opts.Repeats)
		d, r, rep, err := importTwice(ctx, tree, filepath.Join(work, fmt.Sprint("vfsd", i)))
		if err != nil {
			return fmt.Errorf("bench import: %w", err)
		}
		imports, reimports = append(imports, d), append(reimports, r)
		res.Files, res.Dirs, res.Bytes, res.ReimportCached = rep.Files, rep.Dirs, rep.Bytes, rep.Cached

		fmt.Fprint(opts.Log, ", cp -a")
		d, err = timeCmd(ctx, work, "cp", "-a", tree, filepath.Join(work, fmt.Sprint("cp", i)))
		if err != nil {
			return fmt.Errorf("bench import: %w", err)
		}
		cps = append(cps, d)
		if _, err := exec.LookPath("rsync"); err == nil {
			fmt.Fprint(opts.Log, ", rsync -a")
			d, err = timeCmd(ctx, work, "rsync", "-a", tree+"/", filepath.Join(work, fmt.Sprint("rsync", i))+"/")
			if err != nil {
				return fmt.Errorf("bench import: %w", err)
			}
			rsyncs = append(rsyncs, d)
		}
		fmt.Fprintln(opts.Log)
		for _, name := range []string{"vfsd", "cp", "rsync"} {
			os.RemoveAll(filepath.Join(work, fmt.Sprint(name, i)))
		}
	}
	res.ImportMs, res.ReimportMs, res.CpAMs = medianMs(imports), medianMs(reimports), medianMs(cps)
	if len(rsyncs) > 0 {
		v := medianMs(rsyncs)
		res.RsyncMs = &v
	}
	res.ImportVsCpA = round(res.ImportMs / res.CpAMs)
	res.ReimportVsCpA = round(res.ReimportMs / res.CpAMs)
	return json.NewEncoder(out).Encode(res)
}

// importTwice imports tree into a fresh store under dir, then again.
func importTwice(ctx context.Context, tree, dir string) (first, again time.Duration, rep *hostmount.Report, err error) {
	repo, err := snapshot.OpenLocalRepo(ctx, dir, snapshot.RepoOptions{})
	if err != nil {
		return 0, 0, nil, err
	}
	defer repo.Close()
	im, err := hostmount.New(hostmount.Options{Roots: []string{tree}, CacheFile: filepath.Join(dir, "import.cache")})
	if err != nil {
		return 0, 0, nil, err
	}
	defer im.Close()
	m := []hostmount.Mount{{HostPath: tree, MountPath: "/"}}
	quiesce(dir)
	t := time.Now()
	if _, _, err := im.Import(ctx, repo, m, nil); err != nil {
		return 0, 0, nil, err
	}
	first = time.Since(t)
	quiesce(dir)
	t = time.Now()
	_, rep, err = im.Import(ctx, repo, m, nil)
	return first, time.Since(t), rep, err
}

func timeCmd(ctx context.Context, dir string, name string, args ...string) (time.Duration, error) {
	quiesce(dir)
	t := time.Now()
	if out, err := exec.CommandContext(ctx, name, args...).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("%s: %v: %s", name, err, out)
	}
	return time.Since(t), nil
}

// warm reads every file of tree once.
func warm(tree string) error {
	buf := make([]byte, 1<<20)
	return filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return nil
		}
		defer f.Close()
		for {
			if _, err := f.Read(buf); err != nil {
				return nil
			}
		}
	})
}

// medianMs returns the median of ds in milliseconds.
func medianMs(ds []time.Duration) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	return ms(s[len(s)/2])
}

// hostTree resolves a benchmark's --tree: the Go distribution's src when
// empty, absolute and with symlinks resolved, so the importer's allowed
// root and every baseline name the same directory.
func hostTree(tree string) (string, error) {
	if tree == "" {
		tree = filepath.Join(runtime.GOROOT(), "src")
	}
	abs, err := filepath.Abs(tree)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}
