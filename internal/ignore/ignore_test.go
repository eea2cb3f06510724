package ignore

import (
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// ruleCase is ignore files and what they must decide. Paths ending in "/"
// are directories. Every case respects the walker's contract: no listed
// path is inside an ignored directory.
type ruleCase struct {
	name    string
	files   map[string]string // directory ("" for the root) → .gitignore content
	ignored []string
	kept    []string
}

// root is the files of a case with only a root .gitignore.
func root(content string) map[string]string { return map[string]string{"": content} }

var ruleCases = []ruleCase{
	// Lines, comments, blanks.
	{name: "blank lines and comments",
		files:   root("\n# foo\n\n   \nfoo\n#bar\n"),
		ignored: []string{"foo"},
		kept:    []string{"# foo", "#bar", "bar", "   "}},
	{name: "comment only at the very start of a line",
		files:   root(" #a\n"),
		ignored: []string{" #a"},
		kept:    []string{"#a", "a"}},
	{name: "escaped hash", files: root("\\#a\n"), ignored: []string{"#a"}, kept: []string{"a", "\\#a"}},
	{name: "hash inside a pattern is literal", files: root("a#b\n"), ignored: []string{"a#b"}, kept: []string{"a"}},
	{name: "last line without a newline", files: root("a\nb"), ignored: []string{"a", "b"}},
	{name: "CRLF line ends", files: root("a\r\nb\r\n"), ignored: []string{"a", "b"}, kept: []string{"a\r"}},
	{name: "only one CR is dropped", files: root("a\r\r\n"), ignored: []string{"a\r"}, kept: []string{"a"}},
	{name: "lone CR is literal", files: root("a\rb\n"), ignored: []string{"a\rb"}, kept: []string{"a", "b"}},
	{name: "UTF-8 BOM at the start is skipped", files: root("\xef\xbb\xbfa\n\xef\xbb\xbfb\n"),
		ignored: []string{"a", "\xef\xbb\xbfb"}, kept: []string{"\xef\xbb\xbfa", "b"}},
	{name: "NUL ends the pattern", files: root("ab\x00cd\n"), ignored: []string{"ab"}, kept: []string{"abcd", "cd"}},

	// Trailing and leading whitespace.
	{name: "trailing spaces are trimmed", files: root("a   \n"), ignored: []string{"a"}, kept: []string{"a ", "a   "}},
	{name: "escaped trailing space is kept", files: root("a\\ \n"), ignored: []string{"a "}, kept: []string{"a", "a  "}},
	{name: "spaces after an escaped space are trimmed", files: root("a\\   \n"), ignored: []string{"a "}, kept: []string{"a", "a   "}},
	{name: "space before an escaped space is kept", files: root("a \\ \n"), ignored: []string{"a  "}, kept: []string{"a", "a "}},
	{name: "trailing tab is kept", files: root("a\t\n"), ignored: []string{"a\t"}, kept: []string{"a"}},
	{name: "leading spaces are kept", files: root("  a\n"), ignored: []string{"  a"}, kept: []string{"a"}},
	{name: "inner spaces are kept", files: root("a b\n"), ignored: []string{"a b"}, kept: []string{"a", "b"}},
	{name: "whitespace-only line matches nothing", files: root("  \n\t\n"), ignored: []string{"\t"}, kept: []string{"  ", " "}},

	// Backslash escapes.
	{name: "escaped letter", files: root("\\a\n"), ignored: []string{"a"}, kept: []string{"\\a"}},
	{name: "escaped backslash", files: root("a\\\\\n"), ignored: []string{"a\\"}, kept: []string{"a"}},
	{name: "trailing lone backslash matches nothing", files: root("a\\\n"), kept: []string{"a", "a\\"}},
	{name: "trailing backslash before the slash matches nothing", files: root("a\\/\n"), kept: []string{"a/", "a\\/"}},
	{name: "escaped wildcards", files: root("\\*\n\\?\n\\[ab]\n"),
		ignored: []string{"*", "?", "[ab]"}, kept: []string{"a", "x", "[ab"}},
	{name: "escaped slash still anchors", files: root("a\\/b\n"),
		ignored: []string{"a/b"}, kept: []string{"x/", "x/a/", "x/a/b"}},

	// Negation.
	{name: "escaped bang", files: root("\\!a\n"), ignored: []string{"!a"}, kept: []string{"a"}},
	{name: "negation alone ignores nothing", files: root("!a\n"), kept: []string{"a", "!a"}},
	{name: "negation re-includes", files: root("*.log\n!keep.log\n"),
		ignored: []string{"x.log", "d/x.log"}, kept: []string{"keep.log", "d/", "d/keep.log", "x.txt"}},
	{name: "last match wins", files: root("!keep.log\n*.log\n"), ignored: []string{"keep.log", "x.log"}},
	{name: "bang then slash", files: root("*\n!*/\n!*.go\n"),
		ignored: []string{"x.txt", "d/x.txt"}, kept: []string{"d/", "x.go", "d/x.go", "d/e/", "d/e/y.go"}},
	{name: "bang alone matches nothing", files: root("!\n!/\n/\n//\n"), kept: []string{"a", "b/"}},
	{name: "double bang is a negated literal bang", files: root("!!a\n!a\n"), kept: []string{"a", "!a"}},

	// Several files.
	{name: "deeper file wins",
		files:   map[string]string{"": "*.log\n", "d": "!keep.log\n"},
		ignored: []string{"keep.log", "x.log", "d/x.log", "e/keep.log"},
		kept:    []string{"d/", "d/keep.log", "d/f/", "d/f/keep.log", "e/"}},
	{name: "deeper file wins over a later shallower line",
		files:   map[string]string{"": "!x.log\n", "d": "*.log\n"},
		ignored: []string{"d/x.log", "d/f/x.log"},
		kept:    []string{"x.log", "d/", "d/f/"}},
	{name: "sibling files do not mix",
		files:   map[string]string{"a": "x\n", "b": "!y\n"},
		ignored: []string{"a/x", "a/c/x"},
		kept:    []string{"a/", "b/", "b/x", "x", "a/y", "ab/", "ab/x"}},

	// Directory-only patterns.
	{name: "trailing slash matches directories only", files: root("build/\n"),
		ignored: []string{"build/", "a/build/"}, kept: []string{"build.x", "a/", "b/", "b/build"}},
	{name: "negated directory-only", files: root("b*\n!build/\n"),
		ignored: []string{"bx", "x/build"}, kept: []string{"build/", "a/", "a/build/", "x/"}},
	{name: "directory-only with a middle slash is anchored", files: root("a/b/\n"),
		ignored: []string{"a/b/"}, kept: []string{"a/", "a/c/", "c/", "c/a/", "c/a/b/", "x/", "x/b"}},
	{name: "double trailing slash", files: root("a//\n"),
		kept: []string{"a/", "b/", "b/a/"}},
	{name: "star slash ignores every directory", files: root("*/\n"),
		ignored: []string{"d/", "e/"}, kept: []string{"f", "g"}},

	// Anchoring.
	{name: "leading slash anchors", files: root("/foo\n"),
		ignored: []string{"foo"}, kept: []string{"a/", "a/foo", "a/b/", "a/b/foo"}},
	{name: "middle slash anchors", files: root("a/foo\n"),
		ignored: []string{"a/foo"}, kept: []string{"a/", "b/", "b/a/", "b/a/foo", "foo"}},
	{name: "no slash matches at any depth", files: root("foo\n"),
		ignored: []string{"foo", "a/foo", "a/b/foo", "c/foo/"}, kept: []string{"a/", "a/b/", "c/", "foo.x"}},
	{name: "anchored to the ignore file's directory",
		files:   map[string]string{"sub": "/foo\nbar/baz\n"},
		ignored: []string{"sub/foo", "sub/bar/baz"},
		kept:    []string{"foo", "bar/", "bar/baz", "sub/", "sub/x/", "sub/x/foo", "sub/bar/", "sub/x/bar/", "sub/x/bar/baz"}},
	{name: "leading slash with a wildcard", files: root("/*.c\n"),
		ignored: []string{"x.c"}, kept: []string{"d/", "d/x.c"}},
	{name: "two leading slashes match nothing", files: root("//a\n"), kept: []string{"a", "d/", "d/a"}},

	// Wildcards.
	{name: "star", files: root("a*b\n"),
		ignored: []string{"ab", "axb", "axxb", "d/a.b"}, kept: []string{"a", "ba", "d/"}},
	{name: "star never matches a slash", files: root("a*/c\n"),
		ignored: []string{"ab/c", "a/c"}, kept: []string{"ab/", "a/", "ab/x/", "ab/x/c"}},
	{name: "star in a directory path", files: root("doc/*.txt\n"),
		ignored: []string{"doc/a.txt"}, kept: []string{"doc/", "doc/b/", "doc/b/a.txt", "a.txt"}},
	{name: "question mark", files: root("a?c\n"),
		ignored: []string{"abc", "a.c", "d/axc"}, kept: []string{"ac", "abbc", "d/"}},
	{name: "question mark never matches a slash", files: root("a?b/c\n"),
		ignored: []string{"axb/c"}, kept: []string{"axb/", "a/", "a/b/", "a/b/c"}},
	{name: "question mark matches one byte, not one character", files: root("?\n"),
		ignored: []string{"a", "dd/b"}, kept: []string{"é", "ab", "dd/"}},
	{name: "two question marks match a two-byte character", files: root("??\n"),
		ignored: []string{"é", "ab"}, kept: []string{"a", "abc"}},
	{name: "star matches dot files", files: root("*\n!/d/\n"),
		ignored: []string{".hidden", "d/.x"}, kept: []string{"d/"}},
	{name: "star followed by literal", files: root("*.tar.gz\n"),
		ignored: []string{"a.tar.gz", ".tar.gz"}, kept: []string{"a.tar", "a.gz"}},
	{name: "consecutive stars in a name are one star", files: root("a***b\n"),
		ignored: []string{"ab", "axb"}, kept: []string{"a", "b"}},

	// Brackets.
	{name: "bracket set", files: root("[ab]\n"), ignored: []string{"a", "b"}, kept: []string{"c", "ab", "[ab]"}},
	{name: "bracket range", files: root("x[a-c]\n"), ignored: []string{"xa", "xb", "xc"}, kept: []string{"xd", "x-"}},
	{name: "bracket negation with bang", files: root("[!ab]\n"), ignored: []string{"c", "!"}, kept: []string{"a", "b"}},
	{name: "bracket negation with caret", files: root("[^ab]\n"), ignored: []string{"c", "^"}, kept: []string{"a", "b"}},
	{name: "closing bracket first is literal", files: root("[]a]\n"), ignored: []string{"]", "a"}, kept: []string{"b"}},
	{name: "negated closing bracket", files: root("[!]]\n"), ignored: []string{"a"}, kept: []string{"]"}},
	{name: "dash at the end is literal", files: root("[a-]\n"), ignored: []string{"a", "-"}, kept: []string{"b"}},
	{name: "dash at the start is literal", files: root("[-a]\n"), ignored: []string{"a", "-"}, kept: []string{"b"}},
	{name: "escaped closing bracket", files: root("[\\]]\n"), ignored: []string{"]"}, kept: []string{"\\"}},
	{name: "escaped range ends", files: root("[\\a-\\c]\n"), ignored: []string{"b"}, kept: []string{"\\", "d"}},
	{name: "unclosed bracket matches nothing", files: root("[ab\n"), kept: []string{"a", "[ab"}},
	{name: "bracket never matches a slash", files: root("a[/]b\n"), kept: []string{"a/", "a/b"}},
	{name: "negated bracket never matches a slash", files: root("a[!x]b\n"),
		ignored: []string{"ayb"}, kept: []string{"a/", "a/b"}},
	{name: "classes", files: root("[[:digit:]]\n[[:upper:]]x\n[[:space:]]\ny[[:punct:]]\n"),
		ignored: []string{"1", "Ax", " ", "\t", "y.", "y]", "y{"},
		kept:    []string{"a", "ax", "yy", "y1", "\v"}},
	{name: "class next to members", files: root("[a[:digit:]]\n"), ignored: []string{"a", "5"}, kept: []string{"b", "["}},
	{name: "unknown class matches nothing", files: root("[[:bogus:]]\n"), kept: []string{"b", "["}},
	{name: "unknown class spoils its whole bracket", files: root("[a[:bogus:]]\n[![:bogus:]]\nx*[![:bogus:]]\n"),
		kept: []string{"a", "b", "xa"}},
	{name: "bracket colon without a class", files: root("x[[:a]\n"), ignored: []string{"x[", "x:", "xa"}, kept: []string{"xb"}},
	{name: "classes are ASCII only", files: root("[[:alpha:]]?\n"), ignored: []string{"ab"}, kept: []string{"é"}},
	{name: "cntrl includes tab in git", files: root("x[[:cntrl:]]\n"), ignored: []string{"x\t", "x\x01"}, kept: []string{"xa"}},

	// "**".
	{name: "leading double star", files: root("**/foo\n"),
		ignored: []string{"foo", "a/foo", "a/b/foo"}, kept: []string{"a/", "a/b/", "foox"}},
	{name: "leading double star with a path", files: root("**/foo/bar\n"),
		ignored: []string{"foo/bar", "a/foo/bar"}, kept: []string{"foo/", "a/", "a/foo/", "bar", "a/bar"}},
	{name: "trailing double star", files: root("a/**\n"),
		ignored: []string{"a/x", "a/y/"}, kept: []string{"a/", "b/", "b/a/", "b/a/x"}},
	{name: "trailing double star is inside only", files: root("a/**\n!a/keep\n"),
		ignored: []string{"a/x"}, kept: []string{"a/", "a/keep"}},
	{name: "middle double star", files: root("a/**/b\n"),
		ignored: []string{"a/b", "a/x/b", "a/x/y/b"}, kept: []string{"a/", "a/x/", "a/x/y/", "b", "a/xb"}},
	{name: "double star alone", files: root("**\n"), ignored: []string{"a", "b/"}},
	{name: "leading slash double star", files: root("/**/foo\n"),
		ignored: []string{"foo", "a/foo"}, kept: []string{"a/"}},
	{name: "triple star as a component", files: root("a/***/b\n"),
		ignored: []string{"a/b", "a/x/b"}, kept: []string{"a/", "a/x/"}},
	{name: "double star not a whole component is a star", files: root("x/a**b/c\n"),
		ignored: []string{"x/ab/c", "x/azzb/c"}, kept: []string{"x/", "x/ab/", "x/azzb/", "x/a/", "x/a/b/", "x/a/b/c"}},
	{name: "double star after the literal prefix acts as leading", files: root("x/a**/c\n"),
		ignored: []string{"x/ab/c", "x/ab/d/c", "x/a/c"}, kept: []string{"x/", "x/ab/", "x/ab/d/"}},
	{name: "double star after the literal prefix can match no directory", files: root("x/a**/b\n"),
		ignored: []string{"x/ab"}, kept: []string{"x/", "x/a/", "x/ac/"}},
	{name: "double star after a wildcard is a star", files: root("x/\\a**/c\n[ab]**/d\n"),
		ignored: []string{"x/ab/c", "x/a/c", "a/d", "bz/d"}, kept: []string{"x/", "x/ab/", "x/ab/e/", "x/ab/e/c", "a/", "a/e/", "a/e/d"}},
	{name: "trailing double star after a wildcard is a star", files: root("/?**\n!/a/\n"),
		ignored: []string{"b"}, kept: []string{"a/", "a/b"}},
	{name: "star stops at a slash before a wildcard", files: root("a*?/d\n"),
		ignored: []string{"ab/d", "abc/d"}, kept: []string{"ab/", "ab/c/", "ab/c/d"}},
	{name: "double star in a name is a star", files: root("**a\na**\n"),
		ignored: []string{"xa", "ax", "a"}, kept: []string{"b", "d/"}},
	{name: "double star directory-only", files: root("a/**/\n"),
		ignored: []string{"a/d/"}, kept: []string{"a/", "a/f"}},
	{name: "double star then escaped slash needs a directory", files: root("**\\/foo\n"),
		ignored: []string{"d/foo", "d/e/foo"}, kept: []string{"foo", "d/", "d/e/"}},

	// Braces are literal.
	{name: "braces are literal", files: root("{a,b}\n"), ignored: []string{"{a,b}"}, kept: []string{"a", "b", "{a"}},
	{name: "star with braces", files: root("*.{c,h}\n"), ignored: []string{"x.{c,h}"}, kept: []string{"x.c", "x.h"}},

	// Case.
	{name: "case-sensitive", files: root("Foo\n"), ignored: []string{"Foo"}, kept: []string{"foo", "FOO"}},

	// Ignore files are paths like any other.
	{name: "ignore file ignoring itself", files: root(".gitignore\n"), ignored: []string{".gitignore"}},
}

// ancestors lists the directories above p, the root ("") first.
func ancestors(p string) []string {
	dirs := []string{""}
	for i := 0; i < len(p); i++ {
		if p[i] == '/' {
			dirs = append(dirs, p[:i])
		}
	}
	return dirs
}

// caseStack is the Stack a walker has at p's directory.
func caseStack(files map[string]string, p string) *Stack {
	var s *Stack
	for _, d := range ancestors(p) {
		if content, ok := files[d]; ok {
			s = s.Push(d, Parse([]byte(content)))
		}
	}
	return s
}

// splitDir strips the "/" that marks a directory.
func splitDir(p string) (string, bool) {
	if strings.HasSuffix(p, "/") {
		return p[:len(p)-1], true
	}
	return p, false
}

func TestRules(t *testing.T) {
	for _, c := range ruleCases {
		t.Run(c.name, func(t *testing.T) {
			for want, paths := range map[bool][]string{true: c.ignored, false: c.kept} {
				for _, q := range paths {
					p, isDir := splitDir(q)
					require.Equal(t, want, caseStack(c.files, p).Ignored(p, isDir), "path %q, ignore files %q", q, c.files)
				}
			}
		})
	}
}

// TestRulesAgainstGit checks that git decides every case of TestRules the
// same way, and that a walker over each case's tree agrees with git on
// every path.
func TestRulesAgainstGit(t *testing.T) {
	g := newGitRunner(t)
	for _, c := range ruleCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tr := newTree()
			for d, content := range c.files {
				tr.ignoreFile(d, content)
			}
			var queries []string
			seen := map[string]bool{}
			for _, q := range append(append([]string{}, c.ignored...), c.kept...) {
				p, isDir := splitDir(q)
				if isDir {
					tr.addDir(p)
				} else if _, ok := tr.files[p]; !ok {
					tr.addFile(p, nil)
				}
				for _, d := range append(ancestors(p)[1:], p) {
					if !seen[d] {
						seen[d] = true
						queries = append(queries, d)
					}
				}
			}
			got := g.verdicts(t, tr, queries)
			for want, paths := range map[bool][]string{true: c.ignored, false: c.kept} {
				for _, q := range paths {
					p, _ := splitDir(q)
					for _, d := range ancestors(p)[1:] {
						require.False(t, got[d].ignored, "bad case: %q is inside ignored %q", q, d)
					}
					require.Equal(t, want, got[p].ignored, "git on %q: %v; ignore files %q", q, got[p], c.files)
				}
			}
			g.compare(t, tr)
		})
	}
}

func TestParseLen(t *testing.T) {
	for _, c := range []struct {
		data string
		want int
	}{
		{"", 0},
		{"\n\n\r\n", 0},
		{"# a\n#b", 0},
		{"   \n", 0},
		{"!\n/\n//\n!/\n!//\n", 0},
		{"a\\\n\\\nb\\/\n", 0},
		{"\x00a\n", 0},
		{"a\nb\n!c\n", 3},
		{"\xef\xbb\xbf# comment\na", 1},
		{"\\#a\n\\!b\n\\ \n", 3},
		{"[ab\n[[:bogus:]]\n", 2}, // never match, but git keeps them
	} {
		require.Equal(t, c.want, Parse([]byte(c.data)).Len(), "%q", c.data)
	}
	var r *Rules
	require.Zero(t, r.Len())
}

func TestStack(t *testing.T) {
	var s *Stack
	require.False(t, s.Ignored("a", false), "the nil stack ignores nothing")
	require.Same(t, s, s.Push("", nil))
	require.Same(t, s, s.Push("", Parse([]byte("# nothing\n"))))

	a := s.Push("", Parse([]byte("*.o\n")))
	b := a.Push("d", Parse([]byte("!x.o\n")))
	require.Same(t, b, b.Push("d/e", nil))
	require.True(t, a.Ignored("d/x.o", false))
	require.False(t, b.Ignored("d/x.o", false), "the deeper file wins")
	require.True(t, a.Ignored("d/x.o", false), "pushing does not change the parent")
	require.True(t, b.Ignored("x.o", false), "rules of d do not apply outside d")
	require.True(t, b.Ignored("dx/x.o", false), "rules of d do not apply to a sibling sharing its prefix")
	require.True(t, b.Ignored("e/d/x.o", false))
	require.False(t, b.Ignored("", true), "the root itself is never ignored")

	// Rules of a directory do not apply to the directory itself.
	c := s.Push("d", Parse([]byte("d\n")))
	require.False(t, c.Ignored("d", true))
	require.True(t, c.Ignored("d/d", true))

	// Directory names are accepted with stray slashes, and "." for the root.
	for _, dir := range []string{"d/", "/d", "/d/"} {
		require.True(t, s.Push(dir, Parse([]byte("/x\n"))).Ignored("d/x", false), "dir %q", dir)
	}
	require.True(t, s.Push(".", Parse([]byte("/x\n"))).Ignored("x", false))
}

// TestStackConcurrent shares one stack between goroutines; run with -race.
func TestStackConcurrent(t *testing.T) {
	s := (*Stack)(nil).Push("", Parse([]byte("*.o\n!keep.o\nbuild/\n")))
	done := make(chan bool)
	for i := 0; i < 8; i++ {
		go func() {
			ok := true
			for j := 0; j < 1000; j++ {
				ok = ok && s.Ignored(path.Join("a", "x.o"), false) && !s.Ignored("keep.o", false) && s.Ignored("build", true)
			}
			done <- ok
		}()
	}
	for i := 0; i < 8; i++ {
		require.True(t, <-done)
	}
}

// TestManyDoubleStars checks that patterns with many "**" take polynomial
// time (git's matcher takes exponential time: thirty of them would not
// finish) and still agree with git where git finishes.
func TestManyDoubleStars(t *testing.T) {
	deep := strings.Repeat("a/", 40)
	for _, pat := range []string{strings.Repeat("**/", 30) + "x", "a" + strings.Repeat("/**/a", 15) + "/**/x"} {
		s := (*Stack)(nil).Push("", Parse([]byte(pat)))
		require.True(t, s.Ignored(deep+"x", false), pat)
		require.False(t, s.Ignored(deep+"y", false), pat)
	}

	g := newGitRunner(t)
	tr := newTree()
	tr.ignoreFile("", "**/**/**/**/**/**/x\na/**/b/**/a/**/b/**/y\n!**/a/**/**/b/z/\n")
	for _, p := range []string{"a/b/a/b/a/b/a/b/x", "a/b/a/b/a/b/a/b/y", "a/a/b/a/b/y", "a/b/z/w", "a/c/b/z/w", "b/a/b/a/y"} {
		tr.addFile(p, nil)
	}
	g.compare(t, tr)
}
