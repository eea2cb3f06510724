package patch_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/tools/patch"
	"github.com/vfsd/vfsd/tools/patch/patchtest"
)

// wrap puts hunks into a patch.
func wrap(hunks ...string) string {
	return "*** Begin Patch\n" + strings.Join(hunks, "\n") + "\n*** End Patch\n"
}

// plan parses text and plans it against a tree of files.
func plan(t *testing.T, files map[string]string, text string) (*patchtest.Tree, *patch.Result, error) {
	t.Helper()
	in := map[string][]byte{}
	for p, c := range files {
		in[p] = []byte(c)
	}
	tree := patchtest.NewTree(in, nil)
	p, err := patch.Parse(text)
	require.NoError(t, err)
	res, err := patch.Plan(p, tree)
	return tree, res, err
}

func TestPlanUpdates(t *testing.T) {
	tests := []struct {
		name  string
		old   string
		patch string
		want  string
	}{
		{"replace a line", "a\nb\nc\n", "@@\n a\n-b\n+B\n c", "a\nB\nc\n"},
		{"adds the final newline", "a\nb", "@@\n-a\n+A", "A\nb\n"},
		{"no-op update still ends with a newline", "a", "@@\n a", "a\n"},
		{"delete only", "1\n2\n3\n", "@@\n 1\n-2\n 3", "1\n3\n"},
		{"pure addition appends at the end, whatever the context", "def f():\n    pass\nx = 1\n", "@@ def f():\n+    return 2", "def f():\n    pass\nx = 1\n    return 2\n"},
		{"pure addition to an empty file", "", "@@\n+x", "x\n"},
		{"old lines of one empty line on an empty file", "", "@@\n-\n+x", "x\n"},
		{"trailing empty old line stands for the final newline", "a\nb\n", "@@\n a\n-b\n-\n+c\n+", "a\nc\n"},
		{"trailing blank file line is kept", "a\n\n", "@@\n-a\n+b", "b\n\n"},
		{"context jumps past the first occurrence", "x\nf()\nx\n", "@@ f()\n-x\n+y", "x\nf()\ny\n"},
		{"context matched fuzzily is kept as in the file", "  if a:  \n    b\n", "@@\n if a:\n-    b\n+    c", "  if a:  \n    c\n"},
		{"context keeps the file's punctuation", "s = “x” — y\nz\n", "@@\n s = \"x\" - y\n-z\n+w", "s = “x” — y\nw\n"},
		{"removed lines matched fuzzily are replaced", "a   \nb\n", "@@\n-a\n+A", "A\nb\n"},
		{"end of file picks the last occurrence", "x\ny\nx\n", "@@\n-x\n+z\n*** End of File", "x\ny\nz\n"},
		{"end of file falls back to the first occurrence", "x\ny\n", "@@\n-x\n+z\n*** End of File", "z\ny\n"},
		{"chunks in order", "a\nb\nc\nd\n", "@@\n-b\n+B\n@@\n-d\n+D", "a\nB\nc\nD\n"},
		{"second chunk searches after the first", "x\ny\nx\n", "@@\n-x\n+1\n@@\n-x\n+2", "1\ny\n2\n"},
		{"two pure additions keep their order", "a\n", "@@\n+1\n@@\n+2", "a\n1\n2\n"},
		{"CRLF kept, inserted lines CRLF", "a\r\nb\r\n", "@@\n a\n+x\n b", "a\r\nx\r\nb\r\n"},
		{"first ending decides for inserted lines", "a\nb\r\n", "@@\n a\n+x", "a\nx\nb\r\n"},
		{"CRLF file without final newline gets CRLF", "a\r\nb", "@@\n-b\n+c", "a\r\nc\r\n"},
		{"lone CR is text", "a\rb\n", "@@\n-a\rb\n+c", "c\n"},
		{"stacked contexts", "class A:\n  def f():\n    x\nclass B:\n  def f():\n    x\n", "@@ class B:\n@@   def f():\n-    x\n+    y", "class A:\n  def f():\n    x\nclass B:\n  def f():\n    y\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, res, err := plan(t, map[string]string{"f": tt.old}, wrap("*** Update File: f\n"+tt.patch))
			require.NoError(t, err)
			require.Len(t, res.Changes, 1)
			c := res.Changes[0]
			require.Equal(t, patch.OpUpdate, c.Op)
			require.Equal(t, tt.old, string(c.Old))
			require.Equal(t, tt.want, string(c.New))
		})
	}
}

func TestPlanHandBuiltChunkReplacesWholeRegion(t *testing.T) {
	tree := patchtest.NewTree(map[string][]byte{"f": []byte("  a\nb\n")}, nil)
	p := &patch.Patch{Hunks: []patch.Hunk{{Op: patch.OpUpdate, Path: "f", Line: 1, Chunks: []patch.Chunk{{
		Old: []string{"a", "b"}, New: []string{"a", "c"},
	}}}}}
	res, err := patch.Plan(p, tree)
	require.NoError(t, err)
	require.Equal(t, "a\nc\n", string(res.Changes[0].New))

	// Unchanged entries that do not pair equal lines are ignored.
	p.Hunks[0].Chunks[0].Unchanged = [][2]int{{1, 0}, {5, 9}}
	res, err = patch.Plan(p, tree)
	require.NoError(t, err)
	require.Equal(t, "a\nc\n", string(res.Changes[0].New))
}

func TestPlanChanges(t *testing.T) {
	tree, res, err := plan(t, map[string]string{"old.txt": "gone\n", "src/app.py": "print(1)\n"}, wrap(
		"*** Add File: new/file.txt\n+hello",
		"*** Delete File: old.txt",
		"*** Update File: src/app.py\n*** Move to: src/main.py\n@@\n-print(1)\n+print(2)",
	))
	require.NoError(t, err)
	require.Equal(t, []patch.Change{
		{Op: patch.OpAdd, Path: "new/file.txt", New: []byte("hello\n"),
			Diff: "--- /dev/null\n+++ b/new/file.txt\n@@ -0,0 +1 @@\n+hello\n"},
		{Op: patch.OpDelete, Path: "old.txt", Old: []byte("gone\n"),
			Diff: "--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n"},
		{Op: patch.OpUpdate, Path: "src/app.py", MoveTo: "src/main.py", Old: []byte("print(1)\n"), New: []byte("print(2)\n"),
			Diff: "--- a/src/app.py\n+++ b/src/main.py\n@@ -1 +1 @@\n-print(1)\n+print(2)\n"},
	}, res.Changes)
	// Plan changed nothing.
	require.Equal(t, map[string]string{"old.txt": "gone\n", "src/app.py": "print(1)\n"}, texts(tree.Files))
	require.NoError(t, tree.Apply(res))
	require.Equal(t, map[string]string{"new/file.txt": "hello\n", "src/main.py": "print(2)\n"}, texts(tree.Files))
	require.Equal(t, []string{"new", "src"}, tree.DirList())
}

func TestPlanSequence(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		hunks []string
		after map[string]string
	}{
		{
			name:  "update sees the add before it",
			hunks: []string{"*** Add File: a\n+1\n+2", "*** Update File: a\n@@\n-2\n+two"},
			after: map[string]string{"a": "1\ntwo\n"},
		},
		{
			name:  "two updates of one file",
			files: map[string]string{"a": "1\n2\n"},
			hunks: []string{"*** Update File: a\n@@\n-1\n+one", "*** Update File: ./a\n@@\n-2\n+two"},
			after: map[string]string{"a": "one\ntwo\n"},
		},
		{
			name:  "delete then add",
			files: map[string]string{"a": "old\n"},
			hunks: []string{"*** Delete File: a", "*** Add File: a\n+new"},
			after: map[string]string{"a": "new\n"},
		},
		{
			name:  "add then delete",
			hunks: []string{"*** Add File: a/b\n+x", "*** Delete File: a/b"},
			after: map[string]string{},
		},
		{
			name:  "move then update the destination",
			files: map[string]string{"a": "1\n"},
			hunks: []string{"*** Update File: a\n*** Move to: b\n@@\n-1\n+2", "*** Update File: b\n@@\n-2\n+3"},
			after: map[string]string{"b": "3\n"},
		},
		{
			name:  "move onto an existing file replaces it",
			files: map[string]string{"a": "1\n", "b": "other\n"},
			hunks: []string{"*** Update File: a\n*** Move to: b\n@@\n-1\n+2"},
			after: map[string]string{"b": "2\n"},
		},
		{
			name:  "move onto itself is an update in place",
			files: map[string]string{"a": "1\n"},
			hunks: []string{"*** Update File: a\n*** Move to: ./a\n@@\n-1\n+2"},
			after: map[string]string{"a": "2\n"},
		},
		{
			name:  "a deleted file's path can become a directory",
			files: map[string]string{"a": "file\n"},
			hunks: []string{"*** Delete File: a", "*** Add File: a/b\n+x"},
			after: map[string]string{"a/b": "x\n"},
		},
		{
			name:  "session-absolute and relative paths are one file",
			files: map[string]string{"d/a": "1\n"},
			hunks: []string{"*** Update File: /d/a\n@@\n-1\n+2", "*** Update File: d//a\n@@\n-2\n+3"},
			after: map[string]string{"d/a": "3\n"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree, res, err := plan(t, tt.files, wrap(tt.hunks...))
			require.NoError(t, err)
			require.Len(t, res.Changes, len(tt.hunks))
			require.NoError(t, tree.Apply(res))
			require.Equal(t, tt.after, texts(tree.Files))
		})
	}
}

func TestPlanRejects(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		dirs  []string
		hunks []string
		err   error
		path  string
		line  int
		msg   string
	}{
		{name: "update of a missing file", hunks: []string{"*** Update File: nope\n@@\n-x"},
			err: fs.ErrNotExist, path: "nope", line: 2, msg: "Failed to read file to update nope: the file does not exist; check the path, or use '*** Add File: nope'"},
		{name: "delete of a missing file", hunks: []string{"*** Delete File: nope"},
			err: fs.ErrNotExist, path: "nope", line: 2, msg: "Failed to delete file nope: the file does not exist"},
		{name: "delete of a directory", dirs: []string{"d"}, hunks: []string{"*** Delete File: d"},
			err: patch.ErrIsDir, path: "d", line: 2, msg: "it is a directory"},
		{name: "delete twice", files: map[string]string{"a": "x"}, hunks: []string{"*** Delete File: a", "*** Delete File: a"},
			err: fs.ErrNotExist, path: "a", line: 3},
		{name: "update of a directory", files: map[string]string{"d/x": "x"}, hunks: []string{"*** Update File: d\n@@\n-x"},
			err: patch.ErrIsDir, path: "d", line: 2},
		{name: "update of the root", hunks: []string{"*** Update File: /\n@@\n-x"},
			err: patch.ErrIsDir, path: "/", line: 2},
		{name: "add over a directory", dirs: []string{"d"}, hunks: []string{"*** Add File: d\n+x"},
			err: patch.ErrIsDir, path: "d", line: 2},
		{name: "add over a directory an earlier hunk made", hunks: []string{"*** Add File: d/x\n+x", "*** Add File: d\n+x"},
			err: patch.ErrIsDir, path: "d", line: 4},
		{name: "add beneath a file", files: map[string]string{"f": "x"}, hunks: []string{"*** Add File: f/g/h\n+x"},
			err: patch.ErrNotDir, path: "f/g/h", line: 2, msg: "f is a file"},
		{name: "add beneath a file an earlier hunk added", hunks: []string{"*** Add File: f\n+x", "*** Add File: f/g\n+x"},
			err: patch.ErrNotDir, path: "f/g", line: 4},
		{name: "move to a directory", files: map[string]string{"a": "1\n"}, dirs: []string{"d"}, hunks: []string{"*** Update File: a\n*** Move to: d\n@@\n-1\n+2"},
			err: patch.ErrIsDir, path: "d", line: 2, msg: "Failed to move file to d: it is a directory"},
		{name: "move beneath itself", files: map[string]string{"a": "1\n"}, hunks: []string{"*** Update File: a\n*** Move to: a/b\n@@\n-1\n+2"},
			err: patch.ErrNotDir, path: "a/b", line: 2},
		{name: "update of a moved-away file", files: map[string]string{"a": "1\n"}, hunks: []string{"*** Update File: a\n*** Move to: b\n@@\n-1\n+2", "*** Update File: a\n@@\n-2"},
			err: fs.ErrNotExist, path: "a", line: 7},
		{name: "binary update", files: map[string]string{"b": "x\x00y\n"}, hunks: []string{"*** Update File: b\n@@\n-x"},
			err: patch.ErrBinary, path: "b", line: 2, msg: "binary file"},
		{name: "invalid UTF-8 update", files: map[string]string{"b": "x\xffy\n"}, hunks: []string{"*** Update File: b\n@@\n-x"},
			err: patch.ErrBinary, path: "b", line: 2},
		{name: "missing context", files: map[string]string{"f": "a\nb\n"}, hunks: []string{"*** Update File: f\n@@\n-a\n+A\n@@ nowhere\n-b"},
			err: patch.ErrNoMatch, path: "f", line: 6, msg: "Failed to find context 'nowhere' in f; the text after '@@ ' must be a whole line"},
		{name: "context only before the cursor", files: map[string]string{"f": "a\nb\nc\n"}, hunks: []string{"*** Update File: f\n@@\n-b\n+B\n@@ a\n-c"},
			err: patch.ErrNoMatch, path: "f", line: 6, msg: "Failed to find context 'a' in f after line 2, where the previous chunk ended; it occurs only earlier"},
		{name: "missing lines quote the closest region", files: map[string]string{"f": "one\ntwo\nthree\nfour\n"}, hunks: []string{"*** Update File: f\n@@\n two\n-tree\n+3"},
			err: patch.ErrNoMatch, path: "f", line: 3, msg: "Failed to find expected lines in f:\ntwo\n(and 1 more lines of this chunk)\nThe closest region starts at line 2 (1 of 2 lines match); the file reads there:\n2: two\n3: three\n4: four"},
		{name: "missing lines before the cursor", files: map[string]string{"f": "a\nb\n"}, hunks: []string{"*** Update File: f\n@@\n-b\n+B\n@@\n-a"},
			err: patch.ErrNoMatch, path: "f", line: 6, msg: "These lines appear at line 1, before line 3"},
		{name: "missing lines nowhere", files: map[string]string{"f": "a\n"}, hunks: []string{"*** Update File: f\n@@\n-zzz"},
			err: patch.ErrNoMatch, path: "f", line: 3, msg: "No line of this chunk appears in the file, which has 1 lines"},
		{name: "end of file never before the cursor", files: map[string]string{"f": "x\ny\n"}, hunks: []string{"*** Update File: f\n@@\n-y\n+Y\n@@\n-x\n*** End of File"},
			err: patch.ErrNoMatch, path: "f", line: 6},
		{name: "second file fails", files: map[string]string{"a": "1\n"}, hunks: []string{"*** Add File: new\n+n", "*** Update File: a\n@@\n-2"},
			err: patch.ErrNoMatch, path: "a", line: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := map[string][]byte{}
			for p, c := range tt.files {
				in[p] = []byte(c)
			}
			tree := patchtest.NewTree(in, tt.dirs)
			before := texts(tree.Files)
			p, err := patch.Parse(wrap(tt.hunks...))
			require.NoError(t, err)
			res, err := patch.Plan(p, tree)
			require.Nil(t, res)
			var re *patch.RejectError
			require.ErrorAs(t, err, &re)
			require.ErrorIs(t, err, tt.err)
			require.Equal(t, tt.path, re.Path)
			require.Equal(t, tt.line, re.Line)
			require.Contains(t, re.Msg, tt.msg)
			require.Contains(t, re.Error(), re.Msg)
			require.Equal(t, before, texts(tree.Files))
		})
	}
}

func TestPlanEmptyAndInvalidPatches(t *testing.T) {
	for _, p := range []*patch.Patch{nil, {}} {
		_, err := patch.Plan(p, patchtest.NewTree(nil, nil))
		require.ErrorIs(t, err, patch.ErrEmpty)
		var re *patch.RejectError
		require.ErrorAs(t, err, &re)
		require.Contains(t, re.Msg, "No files were modified")
		require.Equal(t, re.Msg, err.Error(), "no line or path to show")
	}
	_, err := patch.Plan(&patch.Patch{Hunks: []patch.Hunk{{Op: patch.OpAdd, Line: 3}}}, nil)
	require.ErrorIs(t, err, fs.ErrInvalid)
	_, err = patch.Plan(&patch.Patch{Hunks: []patch.Hunk{{Op: "rename", Path: "a"}}}, nil)
	require.ErrorIs(t, err, fs.ErrInvalid)
	_, err = patch.Plan(&patch.Patch{Hunks: []patch.Hunk{{Op: patch.OpUpdate, Path: "a"}}}, patchtest.NewTree(map[string][]byte{"a": nil}, nil))
	require.ErrorIs(t, err, fs.ErrInvalid)
}

func TestPlanWithoutFiles(t *testing.T) {
	p, err := patch.Parse(wrap("*** Add File: a/b\n+x", "*** Update File: a/b\n@@\n-x\n+y"))
	require.NoError(t, err)
	res, err := patch.Plan(p, nil)
	require.NoError(t, err)
	require.Equal(t, "y\n", string(res.Changes[1].New))
	p, err = patch.Parse(wrap("*** Delete File: a"))
	require.NoError(t, err)
	_, err = patch.Plan(p, nil)
	require.ErrorIs(t, err, fs.ErrNotExist)
}

func TestPlanKeepsPathsAsWritten(t *testing.T) {
	_, res, err := plan(t, map[string]string{"a.txt": "1\n"}, wrap("*** Update File: ./a.txt\n*** Move to: sub//b.txt\n@@\n-1\n+2"))
	require.NoError(t, err)
	require.Equal(t, "./a.txt", res.Changes[0].Path)
	require.Equal(t, "sub//b.txt", res.Changes[0].MoveTo)
}

func TestPlanAddOverExistingFile(t *testing.T) {
	_, res, err := plan(t, map[string]string{"a": "old\n", "e": ""}, wrap("*** Add File: a\n+new", "*** Add File: e\n+x"))
	require.NoError(t, err)
	require.Equal(t, []byte("old\n"), res.Changes[0].Old)
	require.Equal(t, "--- a/a\n+++ b/a\n@@ -1 +1 @@\n-old\n+new\n", res.Changes[0].Diff)
	require.NotNil(t, res.Changes[1].Old, "an existing empty file has non-nil Old")
	require.Empty(t, res.Changes[1].Old)
}

func TestPlanBinaryDiff(t *testing.T) {
	_, res, err := plan(t, map[string]string{"b.bin": "\x00\x01"}, wrap("*** Delete File: b.bin"))
	require.NoError(t, err)
	require.Equal(t, "Binary files a/b.bin and /dev/null differ\n", res.Changes[0].Diff)
}

// errFiles fails every read with err.
type errFiles struct{ err error }

func (f errFiles) ReadFile(string) ([]byte, error) { return nil, f.err }

func TestPlanReadErrors(t *testing.T) {
	boom := errors.New("permission denied")
	p, err := patch.Parse(wrap("*** Update File: a\n@@\n-x"))
	require.NoError(t, err)
	_, err = patch.Plan(p, errFiles{boom})
	require.ErrorIs(t, err, boom)
	require.ErrorContains(t, err, "Failed to read file to update a: permission denied")

	p, err = patch.Parse(wrap("*** Add File: d/a\n+x"))
	require.NoError(t, err)
	_, err = patch.Plan(p, errFiles{boom})
	require.ErrorIs(t, err, boom)
}

// diskFiles reads a directory on disk, as a caller's Files would.
type diskFiles string

func (d diskFiles) ReadFile(p string) ([]byte, error) {
	name := filepath.Join(string(d), filepath.FromSlash(p))
	b, err := os.ReadFile(name)
	if err != nil {
		// EISDIR on Unix; Windows reads a directory with "Incorrect function".
		if fi, serr := os.Stat(name); serr == nil && fi.IsDir() {
			return nil, fmt.Errorf("%s: %w", p, patch.ErrIsDir)
		}
	}
	return b, err
}

// applyToDisk applies a result under root the way a file system tool
// would.
func applyToDisk(t *testing.T, root string, res *patch.Result) {
	t.Helper()
	write := func(p string, b []byte) {
		full := filepath.Join(root, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, b, 0o644))
	}
	for _, c := range res.Changes {
		switch {
		case c.Op == patch.OpDelete:
			require.NoError(t, os.Remove(filepath.Join(root, c.Path)))
		case c.MoveTo != "":
			write(c.MoveTo, c.New)
			require.NoError(t, os.Remove(filepath.Join(root, c.Path)))
		default:
			write(c.Path, c.New)
		}
	}
}

func TestPlanOnDisk(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "src", "pkg"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "src", "app.py"), []byte("def greet():\r\n    print(\"hi\")\r\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "old.txt"), []byte("old\n"), 0o644))

	p, err := patch.Parse(wrap(
		"*** Add File: path/new.txt\n+line one",
		"*** Update File: src/app.py\n*** Move to: src/main.py\n@@ def greet():\n-    print(\"hi\")\n+    print(\"hello\")",
		"*** Delete File: old.txt",
	))
	require.NoError(t, err)
	res, err := patch.Plan(p, diskFiles(root))
	require.NoError(t, err)
	applyToDisk(t, root, res)

	got := map[string]string{}
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		got[filepath.ToSlash(rel)] = string(b)
		return err
	}))
	require.Equal(t, map[string]string{
		"path/new.txt": "line one\n",
		"src/main.py":  "def greet():\r\n    print(\"hello\")\r\n",
	}, got)
	_, err = os.Stat(filepath.Join(root, "src", "pkg"))
	require.NoError(t, err, "untouched directories stay")

	// The directory is a directory to Plan as well.
	p, err = patch.Parse(wrap("*** Delete File: src"))
	require.NoError(t, err)
	_, err = patch.Plan(p, diskFiles(root))
	require.ErrorIs(t, err, patch.ErrIsDir)
}

func TestCheckPath(t *testing.T) {
	for _, p := range []string{"a", "a/b.txt", "./a", "/a/b", "a/../b", "a/b/../../c", "a//b", ".", "/"} {
		require.NoError(t, patch.CheckPath(p), p)
	}
	for _, p := range []string{"", "  ", "..", "../x", "a/../../x", "/../x", "/a/../..", "./.."} {
		require.Error(t, patch.CheckPath(p), p)
	}
}
