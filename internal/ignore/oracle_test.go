package ignore

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The helpers here build trees of directories, files and .gitignore files,
// decide every path the way a walker would with a Stack, and ask real git
// (git check-ignore) for its answers.

// fsTree is a tree to write to disk: every directory (the root excluded) and
// every file with its content, ignore files included. Paths are relative and
// "/"-separated.
type fsTree struct {
	dirs  map[string]bool
	files map[string][]byte
}

func newTree() *fsTree {
	return &fsTree{dirs: map[string]bool{}, files: map[string][]byte{}}
}

// addDir adds directory p and its ancestors.
func (tr *fsTree) addDir(p string) {
	for p != "" && p != "." && !tr.dirs[p] {
		tr.dirs[p] = true
		p = parentDir(p)
	}
}

// addFile adds file p, with its ancestors.
func (tr *fsTree) addFile(p string, data []byte) {
	tr.addDir(parentDir(p))
	tr.files[p] = data
}

// ignoreFile adds the .gitignore of directory dir ("" for the root).
func (tr *fsTree) ignoreFile(dir, content string) {
	tr.addFile(path.Join(dir, ".gitignore"), []byte(content))
}

func parentDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

// write materialises the tree under root.
func (tr *fsTree) write(t tb, root string) {
	for d := range tr.dirs {
		require.NoError(t, os.MkdirAll(filepath.Join(root, filepath.FromSlash(d)), 0o755))
	}
	for f, data := range tr.files {
		require.NoError(t, os.WriteFile(filepath.Join(root, filepath.FromSlash(f)), data, 0o644))
	}
}

// entry is one path of the tree.
type entry struct {
	path  string
	isDir bool
}

// children lists the entries directly in dir, sorted.
func (tr *fsTree) children(dir string) []entry {
	var out []entry
	for d := range tr.dirs {
		if parentDir(d) == dir {
			out = append(out, entry{d, true})
		}
	}
	for f := range tr.files {
		if parentDir(f) == dir {
			out = append(out, entry{f, false})
		}
	}
	slices.SortFunc(out, func(a, b entry) int { return strings.Compare(a.path, b.path) })
	return out
}

// all lists every path of the tree, sorted.
func (tr *fsTree) all() []entry {
	var out []entry
	for d := range tr.dirs {
		out = append(out, entry{d, true})
	}
	for f := range tr.files {
		out = append(out, entry{f, false})
	}
	slices.SortFunc(out, func(a, b entry) int { return strings.Compare(a.path, b.path) })
	return out
}

// describe shows every ignore file, line by line and quoted, for failure
// messages.
func (tr *fsTree) describe() string {
	var names []string
	for f := range tr.files {
		if path.Base(f) == ".gitignore" {
			names = append(names, f)
		}
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "--- %s\n", n)
		for i, line := range strings.Split(string(tr.files[n]), "\n") {
			fmt.Fprintf(&b, "%3d %q\n", i+1, line)
		}
	}
	return b.String()
}

// verdict is the decision on one path: whether it is ignored and by which
// line of which ignore file (src is "" when no pattern matched).
type verdict struct {
	ignored bool
	src     string
	line    int
}

func (v verdict) String() string {
	if v.src == "" {
		return "not matched"
	}
	what := "re-included"
	if v.ignored {
		what = "ignored"
	}
	return fmt.Sprintf("%s by %s:%d", what, v.src, v.line)
}

// stackVerdict decides p with s.
func stackVerdict(s *Stack, p string, isDir bool) verdict {
	f, pat := s.decide(p, isDir)
	if f == nil {
		return verdict{}
	}
	return verdict{
		ignored: pat.flags&flagNegative == 0,
		src:     path.Join(f.dir, ".gitignore"),
		line:    pat.line,
	}
}

// walk visits tr as the importer does: at each directory it pushes that
// directory's .gitignore, decides every entry, and descends only into the
// directories that are not ignored. It returns the verdict on every path it
// met, in the order met.
func walk(tr *fsTree) ([]entry, map[string]verdict) {
	var order []entry
	got := map[string]verdict{}
	var visit func(dir string, s *Stack)
	visit = func(dir string, s *Stack) {
		if data, ok := tr.files[path.Join(dir, ".gitignore")]; ok {
			s = s.Push(dir, Parse(data))
		}
		for _, e := range tr.children(dir) {
			v := stackVerdict(s, e.path, e.isDir)
			order = append(order, e)
			got[e.path] = v
			if e.isDir && !v.ignored {
				visit(e.path, s)
			}
		}
	}
	visit("", nil)
	return order, got
}

// tb is what the comparison helpers need of a test: a *testing.T or a
// *rapid.T.
type tb interface {
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	FailNow()
}

// gitRunner asks real git, isolated from every configuration and ignore file
// outside its repositories: no system or global config, no
// core.excludesFile, no info/exclude, and case-sensitive matching.
type gitRunner struct {
	git      string
	base     string // the directory repositories are made in
	template string // an empty directory
	env      []string
}

// newGitRunner finds git, or skips the test.
func newGitRunner(t *testing.T) *gitRunner {
	t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not on PATH: the comparisons with real git need it")
	}
	home := t.TempDir()
	return &gitRunner{
		git:      git,
		base:     t.TempDir(),
		template: t.TempDir(),
		env: []string{
			"PATH=" + os.Getenv("PATH"),
			"HOME=" + home,
			"XDG_CONFIG_HOME=" + home,
			"GIT_CONFIG_NOSYSTEM=1",
			"GIT_CONFIG_GLOBAL=/dev/null",
			"LC_ALL=C",
		},
	}
}

// run runs git in dir with stdin.
func (g *gitRunner) run(t tb, dir string, stdin []byte, args ...string) []byte {
	cmd := exec.Command(g.git, append([]string{"-c", "core.ignorecase=false"}, args...)...)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Env = g.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 && args[0] == "check-ignore" {
		err = nil // 1 only means that no path is ignored
	}
	require.NoError(t, err, "git %v: %s", args, stderr.String())
	return stdout.Bytes()
}

// verdicts writes tr to a fresh repository and returns git's verdict on
// each of paths (git check-ignore --no-index -v -n -z --stdin).
func (g *gitRunner) verdicts(t tb, tr *fsTree, paths []string) map[string]verdict {
	root, err := os.MkdirTemp(g.base, "repo")
	require.NoError(t, err)
	defer os.RemoveAll(root)
	// An empty template: no hooks to copy, no info/exclude.
	g.run(t, root, nil, "init", "-q", "--template="+g.template)
	tr.write(t, root)
	var in bytes.Buffer
	for _, p := range paths {
		in.WriteString(p)
		in.WriteByte(0)
	}
	out := g.run(t, root, in.Bytes(), "check-ignore", "--no-index", "-v", "-n", "-z", "--stdin")
	fields := bytes.Split(out, []byte{0})
	require.Len(t, fields, 4*len(paths)+1, "check-ignore output: %q", out)
	got := map[string]verdict{}
	for i := 0; i+4 <= len(fields); i += 4 {
		src, line, pat, p := string(fields[i]), string(fields[i+1]), string(fields[i+2]), string(fields[i+3])
		v := verdict{src: src}
		if src != "" {
			n, err := strconv.Atoi(line)
			require.NoError(t, err)
			v.line = n
			// A pattern that is not negated cannot start with '!'.
			v.ignored = !strings.HasPrefix(pat, "!")
		}
		got[p] = v
	}
	require.Len(t, got, len(paths))
	return got
}

// compare walks tr with Stacks and requires git to agree on every path the
// walk meets: the same decision, by the same line of the same file.
func (g *gitRunner) compare(t tb, tr *fsTree) {
	order, ours := walk(tr)
	paths := make([]string, len(order))
	for i, e := range order {
		paths[i] = e.path
	}
	theirs := g.verdicts(t, tr, paths)
	var bad []string
	for _, e := range order {
		if ours[e.path] != theirs[e.path] {
			kind := "file"
			if e.isDir {
				kind = "dir"
			}
			bad = append(bad, fmt.Sprintf("%s %q: git: %v, ours: %v", kind, e.path, theirs[e.path], ours[e.path]))
		}
	}
	if len(bad) > 0 {
		t.Fatalf("%d of %d paths differ from git:\n%s\nignore files:\n%s\nall paths: %q",
			len(bad), len(order), strings.Join(bad, "\n"), tr.describe(), paths)
	}
}
