package ignore

import (
	"fmt"
	"math/rand/v2"
	"path"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// The differential tests build random trees with ignore files at several
// levels, walk them with Stacks as the importer does, and require git
// check-ignore to agree on every path the walk meets: the same decision, by
// the same line of the same file.

// chooser is a source of choices: math/rand for the fixed seeds, rapid for
// the property test (so that failures shrink).
type chooser interface {
	intn(n int) int
}

type randChooser struct{ r *rand.Rand }

func (c randChooser) intn(n int) int { return c.r.IntN(n) }

type rapidChooser struct{ t *rapid.T }

func (c rapidChooser) intn(n int) int { return rapid.IntRange(0, n-1).Draw(c.t, "choice") }

func pick[E any](c chooser, pool []E) E { return pool[c.intn(len(pool))] }

// chance is true with probability num/den.
func chance(c chooser, num, den int) bool { return c.intn(den) < num }

// namePool is the names of files and directories: ordinary names, and names
// that only escapes, classes or odd bytes can match. None starts with ':',
// which git check-ignore would read as pathspec magic.
var namePool = []string{
	"a", "b", "c", "ab", "abc", "ba", "foo", "bar", "doc", "build", "Build", "x.go", "foo.txt",
	"bar.log", "keep.log", "node_modules", ".hidden", "a.b", "1", "A", "-", "]", "[", "^", "!",
	"#a", "!a", " a", "a ", "a  ", "a b", "a\tb", "a\rb", "[ab]", "a*", "a?", "*", "**", "{a,b}",
	"a,b", "a\\b", "\\", "é", "a:b", "a\x01", "a\vb", "a\fb", ".log", "#", "a\\", "a[b", "a]b",
}

// segmentPool is the pieces patterns are made of.
var segmentPool = []string{
	// Literals.
	"a", "b", "c", "ab", "abc", "foo", "bar", "doc", "build", "Build", "foo.txt", "node_modules",
	".hidden", "a b", "a.b", "-", "1", "A", "é",
	// Escapes.
	"\\a", "\\#a", "\\!a", "a\\ ", "a\\  ", "a\\*", "a\\?", "\\[ab]", "a\\\\b", "\\*", "\\*\\*", "\\\\",
	"\\ a", "a\\\tb",
	// Wildcards.
	"*", "?", "a*", "*a", "*.txt", "*.log", "*.go", "a?", "?b", "b*", "*b*", ".*", "*.*", "??", "?*?",
	"a?b", "a*b", "a*?", "*?", "?*", "a*[bc]", "*[ab]",
	// Brackets.
	"[ab]", "[!a]*", "[^a]", "[a-c]*", "[a-]", "[-b]", "[]a]", "[!]]", "[[:alpha:]]*", "[[:space:]]*",
	"a[[:space:]]b", "*[[:punct:]]*", "[[:digit:]]", "[[:upper:]]*", "[[:cntrl:]]", "a[[:cntrl:]]b",
	"[[:bogus:]]", "[[:a]", "[ab", "[\\]]", "[a\\-c]", "[\\a-\\c]", "[[:alnum:]]?", "[!a-z]*",
	"[[:xdigit:]]", "[é]", "[^[:alpha:]]*", "[a[:bogus:]]", "[![:bogus:]]", "*[![:bogus:]]", "[a-", "[!",
	"[[:alpha:]", "[[:", "[[:]]", "[\\", "x[a\\]]", "[\\]a]",
	// Stars.
	"**", "**", "**", "***", "a**", "**a", "b**", "**.log", "a**b", "?**", "\\a**", "[ab]**", "*a**", "a*b**",
	// Braces are literal.
	"{a,b}", "*.{txt,log}",
}

// genPattern returns one line of an ignore file.
func genPattern(c chooser) string {
	switch c.intn(20) {
	case 0:
		return pick(c, []string{"", "# comment", "#a", " #a", "\\#a", "!", "/", "//", "\\", "a\\",
			"   ", "\t", "!/", "**", "/**", "**/", "!**/", "*/", "!*/", "\\!a", "!!a", "a/", "/a/", "a\x00b",
			"\x00a", "a/\x00/b"})
	case 1:
		return pick(c, namePool)
	}
	n := 1
	if chance(c, 2, 5) {
		n = 2 + c.intn(2)
	}
	segs := make([]string, n)
	for i := range segs {
		segs[i] = pick(c, segmentPool)
	}
	s := strings.Join(segs, "/")
	switch c.intn(10) {
	case 0, 1:
		s = "/" + s
	case 2:
		s = "**/" + s
	}
	switch c.intn(10) {
	case 0, 1:
		s += "/"
	case 2:
		s += "/**"
	}
	if chance(c, 1, 4) {
		s = "!" + s
	}
	if chance(c, 1, 8) {
		s += pick(c, []string{" ", "  ", "\\ ", "\\  ", " \\ ", "\t"})
	}
	return s
}

// genTree returns a tree up to three directories deep with ignore files at
// several levels. Half the patterns are drawn from the pools; the other half
// are paths of the tree below the ignore file, distorted (see derive) so that
// they match or nearly match.
func genTree(c chooser) *fsTree {
	tr := newTree()
	var fill func(dir string, depth int)
	fill = func(dir string, depth int) {
		n := 1 + c.intn(5)
		if depth == 0 {
			n += 2
		}
		for range n {
			p := path.Join(dir, pick(c, namePool))
			if tr.dirs[p] || tr.files[p] != nil {
				continue
			}
			if depth < 3 && chance(c, 1, 2) {
				tr.addDir(p)
				fill(p, depth+1)
			} else {
				tr.addFile(p, []byte{})
			}
		}
	}
	fill("", 0)
	all := tr.all()
	dirs := []string{""}
	for _, e := range all {
		if e.isDir {
			dirs = append(dirs, e.path)
		}
	}
	for _, dir := range dirs {
		if dir == "" && chance(c, 1, 4) || dir != "" && chance(c, 1, 2) {
			continue
		}
		var below []entry
		for _, e := range all {
			if dir == "" || strings.HasPrefix(e.path, dir+"/") {
				below = append(below, e)
			}
		}
		lines := make([]string, 1+c.intn(6))
		for i := range lines {
			if len(below) > 0 && chance(c, 1, 2) {
				e := pick(c, below)
				rel := e.path
				if dir != "" {
					rel = rel[len(dir)+1:]
				}
				lines[i] = derive(c, rel, e.isDir)
			} else {
				lines[i] = genPattern(c)
			}
		}
		tr.ignoreFile(dir, joinLines(c, lines))
	}
	return tr
}

// joinLines makes the content of an ignore file of lines, sometimes with
// CRLF line ends, a BOM or no final newline.
func joinLines(c chooser, lines []string) string {
	eol := "\n"
	if chance(c, 1, 10) {
		eol = "\r\n"
	}
	s := strings.Join(lines, eol)
	if chance(c, 4, 5) {
		s += eol
	}
	if chance(c, 1, 20) {
		s = "\xef\xbb\xbf" + s
	}
	return s
}

// derive turns rel, a path below an ignore file's directory, into a pattern
// that matches it or nearly does: it keeps the base name or the whole path
// (perhaps anchored), and replaces some bytes with wildcards, classes or
// escapes, some components with "*" or "**", then may negate the pattern,
// make it directory-only or add trailing spaces.
func derive(c chooser, rel string, isDir bool) string {
	segs := strings.Split(rel, "/")
	if chance(c, 1, 2) {
		segs = segs[len(segs)-1:]
	}
	for i, seg := range segs {
		switch c.intn(12) {
		case 0:
			segs[i] = "*"
			continue
		case 1:
			segs[i] = "**"
			continue
		case 2:
			segs[i] = seg[:c.intn(len(seg)+1)] + pick(c, []string{"*", "**", "?", "[[:alpha:]]", "*?"})
			continue
		}
		var b strings.Builder
		for j := 0; j < len(seg); j++ {
			ch := seg[j]
			if !chance(c, 1, 4) {
				b.WriteByte(ch)
				continue
			}
			switch c.intn(10) {
			case 0:
				b.WriteByte('?')
			case 1:
				b.WriteByte('*')
			case 2:
				b.Write([]byte{'[', ch, ']'})
			case 3:
				b.Write([]byte{'[', '!', ch, ']'})
			case 4:
				b.Write([]byte{'[', ch - 1, '-', ch + 1, ']'})
			case 5:
				b.Write([]byte{'[', ch, '-', ch + byte(c.intn(3)), ']'})
			case 6:
				b.WriteString(pick(c, []string{"[[:alpha:]]", "[[:space:]]", "[[:punct:]]", "[[:cntrl:]]", "[^[:alnum:]]", "[[:lower:]]"}))
			case 7:
				b.WriteByte('\\')
				b.WriteByte(ch)
			case 8:
				// Drop the byte.
			default:
				b.WriteString(pick(c, []string{"?", "*", "\\", "["}))
				b.WriteByte(ch)
			}
		}
		segs[i] = b.String()
	}
	if len(segs) > 1 && chance(c, 1, 4) {
		i := c.intn(len(segs))
		segs = append(segs[:i], append([]string{"**"}, segs[i:]...)...)
	}
	// Sometimes a wildcard stands for a slash, which it must not match.
	var b strings.Builder
	for i, seg := range segs {
		if i > 0 {
			if chance(c, 1, 6) {
				b.WriteString(pick(c, []string{"?", "*", "[/]", "[!a]", "[^[:alnum:]]", "[[:punct:]]", "[.-0]"}))
			} else {
				b.WriteByte('/')
			}
		}
		b.WriteString(seg)
	}
	s := b.String()
	if chance(c, 1, 4) {
		s = "/" + s
	}
	if chance(c, 1, 3) && (isDir || chance(c, 1, 4)) {
		s += "/"
	}
	if chance(c, 1, 3) {
		s = "!" + s
	}
	if chance(c, 1, 8) {
		s += pick(c, []string{" ", "  ", "\\ ", "\\  ", " \\ ", "\t"})
	}
	return s
}

// handTrees are trees written by hand: ignore files as real projects have
// them.
func handTrees() map[string]*fsTree {
	trees := map[string]*fsTree{}

	tr := newTree()
	tr.ignoreFile("", "node_modules/\n*.log\n!important.log\n/build\ndist/\n.env\n**/tmp/**\n!**/tmp/keep\n"+
		"docs/**/*.md\n!docs/README.md\n# generated\n*.pb.go\n")
	tr.ignoreFile("pkg", "!*.log\n/local\nbuild\n")
	tr.ignoreFile("pkg/sub", "*.go\n!keep.go\n")
	for _, f := range []string{
		"a.log", "important.log", "build/x", "src/build/y", ".env", "src/.env", "node_modules/m/index.js",
		"src/node_modules", "dist/d", "src/dist/d", "tmp/t", "tmp/keep", "src/tmp/a/b", "src/tmp/keep",
		"docs/README.md", "docs/a.md", "docs/x/y.md", "docs/x/README.md", "api.pb.go", "src/api.pb.go",
		"pkg/a.log", "pkg/local/x", "pkg/x/local", "pkg/build/z", "pkg/sub/a.go", "pkg/sub/keep.go",
		"pkg/sub/deeper/b.go", "pkg/sub/deeper/keep.go", "pkg/sub/x.log",
	} {
		tr.addFile(f, []byte{})
	}
	trees["project"] = tr

	tr = newTree()
	tr.ignoreFile("", "/*\n!/src/\n/src/*\n!/src/main/\n")
	for _, f := range []string{"top", "lib/l", "src/other/o", "src/s", "src/main/m", "src/main/deep/d"} {
		tr.addFile(f, []byte{})
	}
	trees["whitelist"] = tr

	tr = newTree()
	tr.ignoreFile("", "*\n!*/\n!*.go\n!.gitignore\n")
	tr.ignoreFile("a", "!*.txt\n*.go\n")
	tr.ignoreFile("a/b", "!x.go\n/*/\n")
	for _, f := range []string{"m.go", "m.txt", "a/n.go", "a/n.txt", "a/b/x.go", "a/b/y.go", "a/b/c/z.go", "a/b/t.txt"} {
		tr.addFile(f, []byte{})
	}
	trees["only go files"] = tr

	tr = newTree()
	tr.ignoreFile("", "**/foo\nfoo/**\n!foo/keep\na/**/b\n!a/**/b/\nx/a**/c\nlogs/\n!logs/\n")
	tr.ignoreFile("d", "foo\n!**/foo/\n")
	for _, f := range []string{
		"foo", "bar/foo", "bar/baz/foo", "a/b", "a/x/b", "a/x/y/b", "a/b2/b/f", "x/ab/c", "x/ab/d/c",
		"logs/l", "d/foo", "d/e/foo/f", "d/e/foo2",
	} {
		tr.addFile(f, []byte{})
	}
	tr.addDir("a/x/y/c/inner")
	trees["double stars"] = tr

	tr = newTree()
	tr.ignoreFile("", "trail   \ntrail2\\ \n\\#hash\n\\!bang\nsp ace\n*.{a,b}\n[[:digit:]]*\n!1keep\n")
	tr.ignoreFile("q", "\xef\xbb\xbf/x\r\ny\r\n")
	for _, f := range []string{
		"trail", "trail ", "trail2", "trail2 ", "#hash", "!bang", "sp ace", "sp", "f.{a,b}", "f.a", "1x",
		"1keep", "q/x", "q/y", "q/r/x", "q/r/y",
	} {
		tr.addFile(f, []byte{})
	}
	trees["syntax"] = tr

	return trees
}

func TestHandTreesAgainstGit(t *testing.T) {
	g := newGitRunner(t)
	for name, tr := range handTrees() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g.compare(t, tr)
		})
	}
}

// randomSeeds is the number of fixed seeds TestRandomTreesAgainstGit runs.
const randomSeeds = 300

func TestRandomTreesAgainstGit(t *testing.T) {
	g := newGitRunner(t)
	seeds := randomSeeds
	if testing.Short() {
		seeds /= 5
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			g.compare(t, genTree(randChooser{rand.New(rand.NewPCG(uint64(seed), 0x1917))}))
		})
	}
}

// TestRandomTreesAgainstGitRapid is the property version: rapid draws the
// trees (-rapid.checks sets how many, 100 by default) and shrinks a failure.
func TestRandomTreesAgainstGitRapid(t *testing.T) {
	g := newGitRunner(t)
	rapid.Check(t, func(rt *rapid.T) {
		g.compare(rt, genTree(rapidChooser{rt}))
	})
}
