//go:build linux

package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The container steps of the mount benchmark: what an agent's container
// does in a workspace — clone a Go repository, ask git for its status,
// build it (caches warm, on native disk), search it, unpack a node_modules
// tree, du it, require() every package from it, commit, and remove it all.
const (
	stepGitClone   = "git_clone"
	stepGitStatus  = "git_status"
	stepGoBuild    = "go_build"
	stepRgRepo     = "rg_repo"
	stepNpmUntar   = "npm_untar"
	stepDu         = "du"
	stepRequire    = "require"
	stepGitCommit  = "git_commit"
	stepRmRfAgents = "rm_rf_container"
)

var containerSteps = []string{stepGitClone, stepGitStatus, stepGoBuild, stepRgRepo, stepNpmUntar, stepDu,
	stepRequire, stepGitCommit, stepRmRfAgents}

// The generated container workload's shape: a Go module of goPackages
// packages of goFiles files each (about 44,000 lines in all), and a
// node_modules tree of npmPackages packages of ten files each.
const (
	goPackages     = 40 // MountOptions.GoPackages's default
	goFiles        = 8
	goFuncsPerFile = 10
	npmPackages    = 1000 // MountOptions.NpmPackages's default
	npmLibFiles    = 7
	commitFiles    = 10
	repoName       = "repo"
	npmName        = "node_modules"
)

// containerFixture is what the container steps start from, made once per
// run outside the targets: a git repository to clone, the Go build cache
// it was built into, a node_modules tarball and the script that requires
// every package.
type containerFixture struct {
	repo       string // the origin repository (a plain directory)
	goCache    string // GOCACHE, warm: the origin was built into it
	npmTarball string
	goLines    int
	npmFiles   int
	goPkgs     int // packages of the Go module
	npmPkgs    int // packages of node_modules
	// skip says why the container steps cannot run, or "".
	skip string
}

// containerTools are the programs the container steps run.
var containerTools = []string{"git", "go", "node", "tar", "du", "rg"}

// newContainerFixture makes the fixture under work: it writes the Go
// module and commits it, builds it once to warm the cache, and packs the
// node_modules tree.
func newContainerFixture(ctx context.Context, work string, goPkgs, npmPkgs int) (*containerFixture, error) {
	f := &containerFixture{repo: filepath.Join(work, "origin-repo"), goCache: filepath.Join(work, "gocache"),
		npmTarball: filepath.Join(work, "node_modules.tar"), goPkgs: goPkgs, npmPkgs: npmPkgs}
	for _, tool := range containerTools {
		if _, err := exec.LookPath(tool); err != nil {
			f.skip = fmt.Sprintf("%s is not installed; the container steps run it (apt-get install git nodejs tar ripgrep, and Go)", tool)
			return f, nil
		}
	}
	lines, err := writeGoModule(f.repo, goPkgs)
	if err != nil {
		return nil, fmt.Errorf("go module: %w", err)
	}
	f.goLines = lines
	env := f.env()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "the generated module"}} {
		if err := runCmd(ctx, env, nil, "git", append([]string{"-C", f.repo}, args...)...); err != nil {
			return nil, err
		}
	}
	if err := runCmd(ctx, env, nil, "go", "-C", f.repo, "build", "./..."); err != nil {
		return nil, fmt.Errorf("warm the build cache: %w", err)
	}
	npm := filepath.Join(work, "npm-src")
	if f.npmFiles, err = writeNodeModules(filepath.Join(npm, npmName), npmPkgs); err != nil {
		return nil, fmt.Errorf("node_modules: %w", err)
	}
	if err := runCmd(ctx, nil, nil, "tar", "-C", npm, "-cf", f.npmTarball, npmName); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(npm); err != nil {
		return nil, err
	}
	return f, nil
}

// env is the environment of the container steps' commands: git with a
// fixed identity and no user or system configuration, Go offline with the
// warm cache.
func (f *containerFixture) env() []string {
	return append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=vfsd bench", "GIT_AUTHOR_EMAIL=bench@vfsd.invalid",
		"GIT_COMMITTER_NAME=vfsd bench", "GIT_COMMITTER_EMAIL=bench@vfsd.invalid",
		"GOCACHE="+f.goCache, "GOPROXY=off", "GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN=local",
		"GOTELEMETRY=off")
}

// containerSteps returns the container steps on target t; they need f to
// be usable (f.skip == "").
func (w *mountWorkload) containerSteps(ctx context.Context, t *target, f *containerFixture) []mountStep {
	repo := filepath.Join(t.dir, repoName)
	npm := filepath.Join(t.dir, npmName)
	script := filepath.Join(w.work, fmt.Sprintf("require-%s.js", t.name))
	env := f.env()
	git := func(args ...string) error {
		return runCmd(ctx, env, nil, "git", append([]string{"-C", repo}, args...)...)
	}
	var (
		status   bytes.Buffer
		du       bytes.Buffer
		required bytes.Buffer
	)
	return []mountStep{
		{name: stepGitClone, run: func() error {
			return runCmd(ctx, env, nil, "git", "clone", "-q", "--no-local", f.repo, repo)
		}},
		{name: stepGitStatus, prep: func() error { status.Reset(); return nil }, run: func() error {
			return runCmd(ctx, env, &status, "git", "-C", repo, "status", "--porcelain")
		}, check: func() error {
			if status.Len() != 0 {
				return fmt.Errorf("git status of a fresh clone is not clean: %q", status.String())
			}
			return nil
		}},
		{name: stepGoBuild, run: func() error {
			return runCmd(ctx, env, nil, "go", "-C", repo, "build", "./...")
		}},
		{name: stepRgRepo, run: func() error {
			return runCmd(ctx, env, nil, "rg", "--no-config", "-n", mountGrepExpr, repo)
		}},
		{name: stepNpmUntar, run: func() error {
			return runCmd(ctx, nil, nil, "tar", "--no-same-owner", "-C", t.dir, "-xf", f.npmTarball)
		}},
		{name: stepDu, prep: func() error { du.Reset(); return nil }, run: func() error {
			return runCmd(ctx, nil, &du, "du", "-s", "--inodes", npm)
		}, check: func() error {
			// Every file and directory: ten files and two directories a
			// package, and node_modules itself.
			want := fmt.Sprintf("%d\t%s\n", f.npmFiles+2*f.npmPkgs+1, npm)
			if du.String() != want {
				return fmt.Errorf("du --inodes: got %q, want %q", du.String(), want)
			}
			return nil
		}},
		{name: stepRequire, prep: func() error {
			required.Reset()
			return os.WriteFile(script, []byte(requireScript(npm, f.npmPkgs)), 0o644)
		}, run: func() error {
			return runCmd(ctx, nil, &required, "node", script)
		}, check: func() error {
			if want := fmt.Sprintf("%d\n", f.npmPkgs); required.String() != want {
				return fmt.Errorf("node required %q packages, want %q", required.String(), want)
			}
			return nil
		}},
		{name: stepGitCommit, prep: func() error { return touchGoFiles(repo, commitFiles, f.goPkgs) }, run: func() error {
			if err := git("add", "-A"); err != nil {
				return err
			}
			return git("commit", "-q", "-m", "change ten files")
		}},
		{name: stepRmRfAgents, run: func() error {
			return runCmd(ctx, nil, nil, "rm", "-rf", repo, npm)
		}, check: func() error {
			for _, p := range []string{repo, npm} {
				if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
					return fmt.Errorf("%s is still there after rm -rf (%v)", p, err)
				}
			}
			return nil
		}},
	}
}

// describeContainer says what each container step runs.
func (f *containerFixture) describe() map[string]string {
	return map[string]string{
		stepGitClone:   fmt.Sprintf("git clone -q --no-local ORIGIN T/%s (a generated Go module: %d packages, %d lines, one commit)", repoName, f.goPkgs, f.goLines),
		stepGitStatus:  "git -C T/" + repoName + " status --porcelain",
		stepGoBuild:    "go -C T/" + repoName + " build ./... (GOCACHE warm, on native disk; offline)",
		stepRgRepo:     "rg --no-config -n '" + mountGrepExpr + "' T/" + repoName,
		stepNpmUntar:   fmt.Sprintf("tar --no-same-owner -C T -xf node_modules.tar (%d packages, %d files)", f.npmPkgs, f.npmFiles),
		stepDu:         "du -s --inodes T/" + npmName,
		stepRequire:    fmt.Sprintf("node: require() of each of the %d packages by path (package.json main, then its lib files)", f.npmPkgs),
		stepGitCommit:  fmt.Sprintf("%d .go files changed (off the clock), then git add -A and git commit", commitFiles),
		stepRmRfAgents: "rm -rf T/" + repoName + " T/" + npmName,
	}
}

// runCmd runs a command with env (the process's when nil), its output to
// stdout (discarded when nil). Like runIn, it runs in this process's
// working directory, never in a target's: commands get the targets'
// paths as arguments (or -C).
func runCmd(ctx context.Context, env []string, stdout *bytes.Buffer, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if stdout != nil {
		cmd.Stdout = stdout
	}
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 && name == "rg" && stderr.Len() == 0 {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return nil
}

// writeGoModule writes a Go module of goPkgs packages, each importing
// the one before, and a command importing the last; it returns the lines
// written.
func writeGoModule(dir string, goPkgs int) (int, error) {
	lines := 0
	write := func(rel, content string) error {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		lines += strings.Count(content, "\n")
		return os.WriteFile(p, []byte(content), 0o644)
	}
	if err := write("go.mod", "module example.com/benchrepo\n\ngo 1.22\n"); err != nil {
		return 0, err
	}
	if err := write("README.md", "# benchrepo\n\nGenerated by vfsd bench mount.\n"); err != nil {
		return 0, err
	}
	for p := range goPkgs {
		for f := range goFiles {
			var b strings.Builder
			fmt.Fprintf(&b, "// Package p%02d is generated.\npackage p%02d\n\nimport (\n\t\"fmt\"\n\t\"sort\"\n\t\"strings\"\n", p, p)
			if p > 0 {
				fmt.Fprintf(&b, "\n\tprev \"example.com/benchrepo/pkg/p%02d\"\n", p-1)
			}
			b.WriteString(")\n\n")
			for fn := range goFuncsPerFile {
				name := fmt.Sprintf("F%d_%d", f, fn)
				fmt.Fprintf(&b, "// %s sorts, joins and formats its input.\nfunc %s(in []string) string {\n", name, name)
				b.WriteString("\tout := make([]string, 0, len(in))\n\tfor i, s := range in {\n")
				b.WriteString("\t\tif i%2 == 0 {\n\t\t\tout = append(out, strings.ToUpper(s))\n\t\t} else {\n\t\t\tout = append(out, s)\n\t\t}\n\t}\n")
				b.WriteString("\tsort.Strings(out)\n")
				if p > 0 {
					fmt.Fprintf(&b, "\treturn fmt.Sprint(len(out)) + prev.F%d_%d(out)\n}\n\n", f, fn)
				} else {
					b.WriteString("\treturn fmt.Sprint(len(out)) + strings.Join(out, \",\")\n}\n\n")
				}
			}
			fmt.Fprintf(&b, "func serve%d%dHandler() string { return F%d_0(nil) }\n", p, f, f)
			if err := write(fmt.Sprintf("pkg/p%02d/f%d.go", p, f), b.String()); err != nil {
				return 0, err
			}
		}
	}
	main := fmt.Sprintf("package main\n\nimport (\n\t\"fmt\"\n\n\tlast \"example.com/benchrepo/pkg/p%02d\"\n)\n\nfunc main() { fmt.Println(last.F0_0([]string{\"a\", \"b\"})) }\n", goPkgs-1)
	return lines, write("cmd/app/main.go", main)
}

// touchGoFiles appends a line to the first n .go files of the repository.
func touchGoFiles(repo string, n, goPkgs int) error {
	for i := range n {
		p := filepath.Join(repo, "pkg", fmt.Sprintf("p%02d", i%goPkgs), fmt.Sprintf("f%d.go", (i/goPkgs)%goFiles))
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		_, err = f.WriteString("\n// changed by the benchmark\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// writeNodeModules writes npmPkgs packages of ten files each (a
// package.json, an index.js requiring its lib files, npmLibFiles lib files
// and a README) under dir; it returns the files written.
func writeNodeModules(dir string, npmPkgs int) (int, error) {
	files := 0
	for p := range npmPkgs {
		pkg := filepath.Join(dir, fmt.Sprintf("pkg%04d", p))
		if err := os.MkdirAll(filepath.Join(pkg, "lib"), 0o755); err != nil {
			return 0, err
		}
		var index strings.Builder
		index.WriteString("'use strict';\nmodule.exports = {\n")
		put := func(rel, content string) error {
			files++
			return os.WriteFile(filepath.Join(pkg, rel), []byte(content), 0o644)
		}
		for l := range npmLibFiles {
			fmt.Fprintf(&index, "  m%d: require('./lib/m%d'),\n", l, l)
			lib := fmt.Sprintf("'use strict';\n// pkg%04d lib m%d\nfunction f(x) {\n  return [x, %d, %d].join('-');\n}\nmodule.exports = { f, id: %d };\n", p, l, p, l, l)
			if err := put(fmt.Sprintf("lib/m%d.js", l), lib); err != nil {
				return 0, err
			}
		}
		index.WriteString("};\n")
		pj := fmt.Sprintf("{\n  \"name\": \"pkg%04d\",\n  \"version\": \"1.0.%d\",\n  \"main\": \"index.js\",\n  \"license\": \"MIT\"\n}\n", p, p)
		for rel, content := range map[string]string{"index.js": index.String(), "package.json": pj,
			"README.md": fmt.Sprintf("# pkg%04d\n\nGenerated by vfsd bench mount.\n", p)} {
			if err := put(rel, content); err != nil {
				return 0, err
			}
		}
	}
	return files, nil
}

// requireScript is a node program that requires every package under npm
// by its path and prints how many it loaded.
func requireScript(npm string, npmPkgs int) string {
	return fmt.Sprintf(`'use strict';
const path = require('path');
let n = 0;
for (let i = 0; i < %d; i++) {
  const m = require(path.join(%q, 'pkg' + String(i).padStart(4, '0')));
  if (m.m0.f(i)) n++;
}
console.log(n);
`, npmPkgs, npm)
}
