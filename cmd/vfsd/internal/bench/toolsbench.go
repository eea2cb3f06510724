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
	"time"

	"github.com/vfsd/vfsd/hostmount"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/vfs"
)

// ToolsOptions configure the tools benchmark.
type ToolsOptions struct {
	Tree    string // the host tree to import; the Go distribution's src when ""
	Dir     string // where to put the store; the system temp dir when ""
	Repeats int    // repetitions per measurement (the median is reported)
	Edits   int    // edit_file calls to time
	Pattern string // the grep pattern
	Log     io.Writer
}

// ToolsResult is the line `vfsd bench tools` prints.
type ToolsResult struct {
	Tree           string  `json:"tree"`
	Files          int64   `json:"files"`
	Bytes          int64   `json:"bytes"`
	Repeats        int     `json:"repeats"`
	Pattern        string  `json:"pattern"`
	GrepMatches    int     `json:"grep_matches"`
	GrepMs         float64 `json:"grep_ms"`
	GrepNativeMs   float64 `json:"grep_native_ms"`
	RgMs           float64 `json:"rg_ms"`
	GlobFiles      int     `json:"glob_files"`
	GlobMs         float64 `json:"glob_ms"`
	RgFilesMs      float64 `json:"rg_files_ms"`
	ReadAllMs      float64 `json:"read_all_ms"`
	NativeReadMs   float64 `json:"native_read_all_ms"`
	EditCalls      int     `json:"edit_calls"`
	EditCallsPerS  float64 `json:"edit_calls_per_s"`
	GrepVsRg       float64 `json:"grep_vs_rg"`
	GrepNativeVsRg float64 `json:"grep_native_vs_rg"`
	GlobVsRgFiles  float64 `json:"glob_vs_rg_files"`
	ReadAllVsOS    float64 `json:"read_all_vs_os"`
}

// Tools imports a tree into a session and times, in one run: grep through
// the tool (ripgrep engine, and the native one) against rg on the plain
// tree, glob **/*.go against rg --files -g '*.go', read_file of every file
// against os.ReadFile of every file, and a run of edit_file calls.
func Tools(ctx context.Context, opts ToolsOptions, out io.Writer) error {
	if opts.Repeats <= 0 {
		opts.Repeats = 5
	}
	if opts.Edits <= 0 {
		opts.Edits = 1000
	}
	if opts.Pattern == "" {
		opts.Pattern = `func \w+Handler`
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	for _, tool := range []string{"rg"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("bench tools: %s is not installed; it is the baseline (apt-get install ripgrep)", tool)
		}
	}
	tree, err := hostTree(opts.Tree)
	if err != nil {
		return fmt.Errorf("bench tools: %w", err)
	}
	work, err := os.MkdirTemp(opts.Dir, "vfsd-bench-tools-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	fmt.Fprintf(opts.Log, "importing %s...\n", tree)
	env, err := newToolsEnv(ctx, tree, work)
	if err != nil {
		return fmt.Errorf("bench tools: %w", err)
	}
	defer env.close()
	res := ToolsResult{Tree: tree, Files: env.report.Files, Bytes: env.report.Bytes, Repeats: opts.Repeats, Pattern: opts.Pattern, EditCalls: opts.Edits}
	if err := warm(tree); err != nil {
		return fmt.Errorf("bench tools: %w", err)
	}

	steps := []struct {
		name string
		into *float64
		run  func() error
	}{
		{"grep (tool, rg engine)", &res.GrepMs, func() error {
			r, err := env.call(ctx, env.rg, "grep", map[string]any{"pattern": opts.Pattern, "max_results": 1 << 30})
			if err == nil {
				res.GrepMatches = len(r["matches"].([]any))
			}
			return err
		}},
		{"grep (tool, native engine)", &res.GrepNativeMs, func() error {
			_, err := env.call(ctx, env.native, "grep", map[string]any{"pattern": opts.Pattern, "max_results": 1 << 30})
			return err
		}},
		{"rg", &res.RgMs, func() error { return runQuiet(ctx, "rg", "--no-config", "-n", "-e", opts.Pattern, tree) }},
		{"glob (tool)", &res.GlobMs, func() error {
			r, err := env.call(ctx, env.rg, "glob", map[string]any{"pattern": "**/*.go", "max_results": 1 << 30})
			if err == nil {
				res.GlobFiles = len(r["paths"].([]any))
			}
			return err
		}},
		{"rg --files", &res.RgFilesMs, func() error { return runQuiet(ctx, "rg", "--no-config", "--files", "-g", "*.go", tree) }},
		{"read_file of every file", &res.ReadAllMs, func() error { return env.readAll(ctx) }},
		{"os.ReadFile of every file", &res.NativeReadMs, func() error { return readTree(tree) }},
	}
	times := make([][]time.Duration, len(steps))
	for i := range opts.Repeats {
		fmt.Fprintf(opts.Log, "round %d/%d:", i+1, opts.Repeats)
		for j, st := range steps {
			fmt.Fprintf(opts.Log, " %s", st.name)
			t := time.Now()
			if err := st.run(); err != nil {
				return fmt.Errorf("bench tools: %s: %w", st.name, err)
			}
			times[j] = append(times[j], time.Since(t))
			fmt.Fprint(opts.Log, ",")
		}
		fmt.Fprintln(opts.Log)
	}
	for j, st := range steps {
		*st.into = medianMs(times[j])
	}
	fmt.Fprintf(opts.Log, "%d edit_file calls...\n", opts.Edits)
	d, err := env.edits(ctx, opts.Edits)
	if err != nil {
		return fmt.Errorf("bench tools: edits: %w", err)
	}
	res.EditCallsPerS = round(float64(opts.Edits) / d.Seconds())
	res.GrepVsRg = round(res.GrepMs / res.RgMs)
	res.GrepNativeVsRg = round(res.GrepNativeMs / res.RgMs)
	res.GlobVsRgFiles = round(res.GlobMs / res.RgFilesMs)
	res.ReadAllVsOS = round(res.ReadAllMs / res.NativeReadMs)
	return json.NewEncoder(out).Encode(res)
}

// toolsEnv is a session staged from the tree, with tools on both grep
// engines.
type toolsEnv struct {
	repo        *snapshot.Repo
	s           *vfs.Session
	rg, native  *tools.Toolset
	report      *hostmount.Report
	closeStores func()
}

func newToolsEnv(ctx context.Context, tree, work string) (*toolsEnv, error) {
	repo, err := snapshot.OpenLocalRepo(ctx, work, snapshot.RepoOptions{})
	if err != nil {
		return nil, err
	}
	im, err := hostmount.New(hostmount.Options{Roots: []string{tree}})
	if err != nil {
		return nil, err
	}
	defer im.Close()
	s, rep, err := im.Stage(ctx, repo, snapshot.SessionOptions{ID: "bench"}, []hostmount.Mount{{HostPath: tree, MountPath: "/"}}, nil)
	if err != nil {
		return nil, err
	}
	e := &toolsEnv{repo: repo, s: s, report: rep, closeStores: func() { repo.Close() }}
	if e.rg, err = tools.New(s, tools.Options{Blobs: repo.Blobs(), GrepEngine: "rg"}); err != nil {
		return nil, err
	}
	if e.native, err = tools.New(s, tools.Options{Blobs: repo.Blobs(), GrepEngine: "native"}); err != nil {
		return nil, err
	}
	return e, nil
}

func (e *toolsEnv) close() { e.closeStores() }

// call runs a tool and fails unless its receipt is ok.
func (e *toolsEnv) call(ctx context.Context, ts *tools.Toolset, name string, params any) (map[string]any, error) {
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	r := ts.Call(ctx, e.s.ID(), name, raw)
	if !r.OK() {
		return nil, fmt.Errorf("%s: %s", name, r.JSON())
	}
	var m map[string]any
	return m, json.Unmarshal(r.JSON(), &m)
}

// readAll calls read_file on every file of the session.
func (e *toolsEnv) readAll(ctx context.Context) error {
	var paths []string
	_ = e.s.Tree().Walk(vfs.Root, func(p vfs.Path, n vfs.Node) error {
		if n.IsFile() {
			paths = append(paths, string(p))
		}
		return nil
	})
	for _, p := range paths {
		raw, _ := json.Marshal(map[string]any{"path": p, "encoding": "bytes"})
		if r := e.rg.Call(ctx, e.s.ID(), "read_file", raw); !r.OK() {
			return fmt.Errorf("read_file %s: %s", p, r.JSON())
		}
	}
	return nil
}

// edits times n edit_file calls, each durable, on one scratch file.
func (e *toolsEnv) edits(ctx context.Context, n int) (time.Duration, error) {
	if _, err := e.call(ctx, e.rg, "write_file", map[string]any{"path": "bench/counter.go", "inline_text": "package bench\n\nconst counter = 0\n"}); err != nil {
		return 0, err
	}
	t := time.Now()
	for i := range n {
		if _, err := e.call(ctx, e.rg, "edit_file", map[string]any{"path": "bench/counter.go",
			"old_string": fmt.Sprintf("counter = %d\n", i), "new_string": fmt.Sprintf("counter = %d\n", i+1)}); err != nil {
			return 0, err
		}
	}
	return time.Since(t), nil
}

func runQuiet(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout = io.Discard
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 {
		return nil // no match
	}
	return err
}

// readTree reads every regular file of tree.
func readTree(tree string) error {
	return filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		_, err = os.ReadFile(p)
		return err
	})
}
