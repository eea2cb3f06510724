package search

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/hostmount"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// The benchmarks search a session imported from a real source tree — Go's
// own src ($GOROOT/src, about 12k files), or the directory named by
// $SEARCH_BENCH_DIR — against plain ripgrep on the same directory:
//
//	go test ./tools/search/ -run '^$' -bench . -benchtime 20x
//
// BenchmarkGrep/rg over BenchmarkGrep/plain-rg is the cost of searching a
// session instead of a directory; likewise for BenchmarkGlob.

const benchPattern = `func \w+Handler`

var bench struct {
	once sync.Once
	dir  string // the tree imported
	tmp  string // the store and session, removed by TestMain
	s    *vfs.Session
	err  error
}

// TestMain removes the benchmark's store, which benchmarks share.
func TestMain(m *testing.M) {
	code := m.Run()
	if bench.tmp != "" {
		os.RemoveAll(bench.tmp)
	}
	os.Exit(code)
}

// benchSession imports the benchmark tree into a session over a local store
// (once per process).
func benchSession(b *testing.B) (*vfs.Session, string) {
	b.Helper()
	bench.once.Do(func() {
		dir := os.Getenv("SEARCH_BENCH_DIR")
		if dir == "" {
			dir = filepath.Join(runtime.GOROOT(), "src")
		}
		if _, err := os.Stat(dir); err != nil {
			bench.err = err
			return
		}
		bench.dir = dir
		tmp, err := os.MkdirTemp("", "search-bench-")
		if err != nil {
			bench.err = err
			return
		}
		bench.tmp = tmp
		store, err := snapshot.OpenLocal(filepath.Join(tmp, "store"))
		if err != nil {
			bench.err = err
			return
		}
		repo, err := snapshot.OpenRepo(ctx, store, filepath.Join(tmp, "sessions"), snapshot.RepoOptions{})
		if err != nil {
			bench.err = err
			return
		}
		im, err := hostmount.New(hostmount.Options{Roots: []string{dir}})
		if err != nil {
			bench.err = err
			return
		}
		defer im.Close()
		snap, _, err := im.Import(ctx, repo, []hostmount.Mount{{HostPath: dir, MountPath: "/"}}, nil)
		if err != nil {
			bench.err = err
			return
		}
		bench.s, bench.err = repo.NewSession(ctx, snapshot.SessionOptions{ID: "bench", Base: snap.ID})
	})
	if bench.err != nil {
		b.Skipf("no benchmark tree: %v", bench.err)
	}
	return bench.s, bench.dir
}

func BenchmarkGrep(b *testing.B) {
	s, dir := benchSession(b)
	b.Logf("%s: %d files, %d MB", dir, s.Tree().Files(), s.Tree().Bytes()>>20)
	for _, eng := range []Engine{EngineRG, EngineNative} {
		b.Run(eng.String(), func(b *testing.B) {
			if eng == EngineRG {
				haveRG(b)
			}
			var res *GrepResult
			for b.Loop() {
				var err error
				res, err = Grep(ctx, s, GrepOptions{Pattern: benchPattern, Engine: eng})
				require.NoError(b, err)
			}
			b.ReportMetric(float64(len(res.Matches)), "matches")
			b.ReportMetric(float64(res.FilesSearched), "files")
		})
	}
	b.Run("plain-rg", func(b *testing.B) {
		haveRG(b)
		for b.Loop() {
			out, err := exec.Command("rg", "-n", benchPattern, dir).Output()
			require.NoError(b, err)
			require.NotEmpty(b, out)
		}
	})
}

func BenchmarkGlob(b *testing.B) {
	s, dir := benchSession(b)
	readFile := func(p vfs.Path) ([]byte, error) {
		data, _, err := s.ReadFile(ctx, p)
		return data, err
	}
	b.Run("tool", func(b *testing.B) {
		var res *GlobResult
		for b.Loop() {
			var err error
			res, err = Glob(ctx, s.Tree(), GlobOptions{Pattern: "**/*.go", ReadFile: readFile})
			require.NoError(b, err)
		}
		b.ReportMetric(float64(len(res.Entries)), "entries")
	})
	b.Run("plain-rg", func(b *testing.B) {
		haveRG(b)
		for b.Loop() {
			out, err := exec.Command("rg", "--files", "-g", "*.go", dir).Output()
			require.NoError(b, err)
			require.NotEmpty(b, out)
		}
	})
}

// TestRatios measures, when $SEARCH_RATIOS is set, the tool against plain
// rg on the benchmark tree, interleaving runs so that a noisy machine
// affects both alike, and logs the ratios of the medians:
//
//	SEARCH_RATIOS=1 go test ./tools/search/ -run TestRatios -v -count 1
func TestRatios(t *testing.T) {
	if os.Getenv("SEARCH_RATIOS") == "" {
		t.Skip("set SEARCH_RATIOS=1 to measure")
	}
	haveRG(t)
	b := &testing.B{}
	s, dir := benchSession(b)
	if s == nil {
		t.Skip("no benchmark tree")
	}
	readFile := func(p vfs.Path) ([]byte, error) {
		data, _, err := s.ReadFile(ctx, p)
		return data, err
	}
	const rounds = 41
	measure := func(name string, tool, plain func()) {
		var tt, pt []time.Duration
		for range rounds {
			start := time.Now()
			tool()
			tt = append(tt, time.Since(start))
			start = time.Now()
			plain()
			pt = append(pt, time.Since(start))
		}
		slices.Sort(tt)
		slices.Sort(pt)
		t.Logf("%s: tool median %v (min %v), plain rg median %v (min %v): ratio %.2f",
			name, tt[rounds/2].Round(time.Microsecond), tt[0].Round(time.Microsecond),
			pt[rounds/2].Round(time.Microsecond), pt[0].Round(time.Microsecond),
			float64(tt[rounds/2])/float64(pt[rounds/2]))
	}
	run := func(args ...string) func() {
		return func() {
			out, err := exec.Command("rg", args...).Output()
			require.NoError(t, err)
			require.NotEmpty(t, out)
		}
	}
	for _, pat := range []struct {
		pattern string
		icase   bool
	}{{benchPattern, false}, {benchPattern, true}, {`[A-Z]\w+Err[a-z]+\(`, false}} {
		for _, eng := range []Engine{EngineRG, EngineNative} {
			args := []string{"-n", pat.pattern, dir}
			if pat.icase {
				args = append(args, "-i")
			}
			measure(fmt.Sprintf("grep %s %q i=%v", eng, pat.pattern, pat.icase), func() {
				_, err := Grep(ctx, s, GrepOptions{Pattern: pat.pattern, CaseInsensitive: pat.icase, Engine: eng})
				require.NoError(t, err)
			}, run(args...))
		}
	}
	measure("glob", func() {
		_, err := Glob(ctx, s.Tree(), GlobOptions{Pattern: "**/*.go", ReadFile: readFile})
		require.NoError(t, err)
	}, run("--files", "-g", "*.go", dir))
}
