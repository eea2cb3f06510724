package ignore

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzParse feeds arbitrary ignore files and paths to Parse and Ignored:
// nothing may panic or hang, decisions must not depend on where the rules
// sit (the same rules one directory down decide the same on the same paths
// one directory down), and memoized matching must agree with git's plain
// recursion.
func FuzzParse(f *testing.F) {
	for _, c := range ruleCases {
		for _, content := range c.files {
			for _, q := range append(append([]string{}, c.ignored...), c.kept...) {
				p, isDir := splitDir(q)
				f.Add([]byte(content), p, isDir)
			}
		}
	}
	f.Add([]byte("**/**/**/**/**/x\n"), "a/a/a/a/a/a/a/a/y", false)
	f.Add([]byte("a/**/b/**/c/\n!a/**/c\n"), "a/x/b/y/c", true)

	f.Fuzz(func(t *testing.T, data []byte, p string, isDir bool) {
		r := Parse(data)
		require.LessOrEqual(t, r.Len(), bytes.Count(data, []byte{'\n'})+1)

		s := (*Stack)(nil).Push("", r)
		got := s.Ignored(p, isDir)
		require.Equal(t, got, s.Ignored(p, isDir), "not deterministic")
		if p != "" {
			sub := (*Stack)(nil).Push("sub", Parse([]byte("!never\n"))).Push("sub/d", r)
			require.Equal(t, got, sub.Ignored("sub/d/"+p, isDir), "depends on the rules' directory")
		}
		for _, q := range []string{"a", "a/b", ".gitignore", "x/y/z.txt", p + "/a", "a/" + p} {
			s.Ignored(q, true)
			s.Ignored(q, false)
		}

		// git's recursion is exponential in the number of "**": compare
		// only where it stays cheap.
		if len(p) > 64 {
			return
		}
		for i := range r.patterns {
			pat := &r.patterns[i]
			if pat.flags&flagNoDir != 0 || strings.Count(pat.text, "**") > 6 {
				continue
			}
			require.Equal(t, wildmatch(pat.text, p, true, false), wildmatch(pat.text, p, true, true),
				"memoization changes the match of %q on %q", pat.text, p)
		}
	})
}

// TestFuzzCorpusAgainstGit replays the checked-in fuzz corpus against git:
// each entry's ignore file goes at the root of a tree holding the entry's
// path, and git must agree with a walk of that tree.
func TestFuzzCorpusAgainstGit(t *testing.T) {
	g := newGitRunner(t)
	dir := filepath.Join("testdata", "fuzz", "FuzzParse")
	names, err := os.ReadDir(dir)
	require.NoError(t, err)
	compared := 0
	for _, n := range names {
		raw, err := os.ReadFile(filepath.Join(dir, n.Name()))
		require.NoError(t, err)
		data, p, isDir := parseCorpusEntry(t, raw)
		if !treePath(p) {
			continue
		}
		tr := newTree()
		tr.ignoreFile("", string(data))
		if isDir {
			tr.addDir(p)
		} else {
			tr.addFile(p, nil)
		}
		compared++
		t.Run(n.Name(), func(t *testing.T) {
			t.Parallel()
			g.compare(t, tr)
		})
	}
	t.Logf("%d of %d corpus entries have a path a tree can hold", compared, len(names))
}

// parseCorpusEntry reads a "go test fuzz v1" file of FuzzParse.
func parseCorpusEntry(t *testing.T, raw []byte) (data []byte, p string, isDir bool) {
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	require.Len(t, lines, 4, "%s", raw)
	require.Equal(t, "go test fuzz v1", lines[0])
	arg := func(line, prefix string) string {
		require.True(t, strings.HasPrefix(line, prefix) && strings.HasSuffix(line, ")"), "%s", line)
		s, err := strconv.Unquote(line[len(prefix) : len(line)-1])
		require.NoError(t, err, "%s", line)
		return s
	}
	data = []byte(arg(lines[1], "[]byte("))
	p = arg(lines[2], "string(")
	b, err := strconv.ParseBool(strings.TrimSuffix(strings.TrimPrefix(lines[3], "bool("), ")"))
	require.NoError(t, err)
	return data, p, b
}

// treePath reports whether p can be a path of a tree written to disk and
// given to git: relative, no empty, "." or ".." component, no NUL, not in
// .git, not an ignore file, and not starting with ':' (pathspec magic).
func treePath(p string) bool {
	if p == "" || strings.HasPrefix(p, ":") || strings.ContainsRune(p, 0) {
		return false
	}
	for _, c := range strings.Split(p, "/") {
		if c == "" || c == "." || c == ".." || c == ".git" || c == ".gitignore" || len(c) > 255 {
			return false
		}
	}
	return true
}
