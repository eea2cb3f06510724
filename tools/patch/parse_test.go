package patch

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name  string
		text  string
		hunks []Hunk
	}{
		{
			name:  "markers padded with white space",
			text:  "*** Begin Patch \n*** Add File: foo\n+hi\n *** End Patch",
			hunks: []Hunk{{Op: OpAdd, Path: "foo", Contents: "hi\n", Line: 2}},
		},
		{
			name: "every operation",
			text: "*** Begin Patch\n" +
				"*** Add File: path/add.py\n+abc\n+def\n" +
				"*** Delete File: path/delete.py\n" +
				"*** Update File: path/update.py\n*** Move to: path/update2.py\n@@ def f():\n-    pass\n+    return 123\n" +
				"*** End Patch",
			hunks: []Hunk{
				{Op: OpAdd, Path: "path/add.py", Contents: "abc\ndef\n", Line: 2},
				{Op: OpDelete, Path: "path/delete.py", Line: 5},
				{Op: OpUpdate, Path: "path/update.py", MoveTo: "path/update2.py", Line: 6, Chunks: []Chunk{{
					Context: "def f():", Old: []string{"    pass"}, New: []string{"    return 123"}, Line: 8,
				}}},
			},
		},
		{
			name: "update followed by add",
			text: "*** Begin Patch\n*** Update File: file.py\n@@\n+line\n*** Add File: other.py\n+content\n*** End Patch",
			hunks: []Hunk{
				{Op: OpUpdate, Path: "file.py", Line: 2, Chunks: []Chunk{{New: []string{"line"}, Line: 3}}},
				{Op: OpAdd, Path: "other.py", Contents: "content\n", Line: 5},
			},
		},
		{
			name: "first chunk without @@",
			text: "*** Begin Patch\n*** Update File: file2.py\n import foo\n+bar\n*** End Patch",
			hunks: []Hunk{{Op: OpUpdate, Path: "file2.py", Line: 2, Chunks: []Chunk{{
				Old: []string{"import foo"}, New: []string{"import foo", "bar"}, Unchanged: [][2]int{{0, 0}}, Line: 3,
			}}}},
		},
		{
			name: "context, empty and changed lines",
			text: "*** Begin Patch\n*** Update File: f\n@@ change_context\n\n context\n-remove\n+add\n context2\n*** End Patch",
			hunks: []Hunk{{Op: OpUpdate, Path: "f", Line: 2, Chunks: []Chunk{{
				Context:   "change_context",
				Old:       []string{"", "context", "remove", "context2"},
				New:       []string{"", "context", "add", "context2"},
				Unchanged: [][2]int{{0, 0}, {1, 1}, {3, 3}},
				Line:      3,
			}}}},
		},
		{
			name:  "end of file",
			text:  "*** Begin Patch\n*** Update File: f\n@@\n+line\n*** End of File\n*** End Patch",
			hunks: []Hunk{{Op: OpUpdate, Path: "f", Line: 2, Chunks: []Chunk{{New: []string{"line"}, EOF: true, Line: 3}}}},
		},
		{
			name: "several chunks, blank lines between them",
			text: "*** Begin Patch\n*** Update File: f\n@@ a\n-1\n+2\n*** End of File\n\n  \n@@\n-3\n+4\n*** End Patch",
			hunks: []Hunk{{Op: OpUpdate, Path: "f", Line: 2, Chunks: []Chunk{
				{Context: "a", Old: []string{"1"}, New: []string{"2"}, EOF: true, Line: 3},
				{Old: []string{"3"}, New: []string{"4"}, Line: 9},
			}}},
		},
		{
			name: "stacked @@ lines",
			text: "*** Begin Patch\n*** Update File: f\n@@ class B\n@@     def run(self):\n-x\n+y\n*** End Patch",
			hunks: []Hunk{{Op: OpUpdate, Path: "f", Line: 2, Chunks: []Chunk{
				{Context: "class B", Line: 3},
				{Context: "    def run(self):", Old: []string{"x"}, New: []string{"y"}, Line: 4},
			}}},
		},
		{
			name:  "@@ with only white space after it is bare",
			text:  "*** Begin Patch\n*** Update File: f\n@@   \n-x\n*** End Patch",
			hunks: []Hunk{{Op: OpUpdate, Path: "f", Line: 2, Chunks: []Chunk{{Old: []string{"x"}, Line: 3}}}},
		},
		{
			name:  "context text kept as written",
			text:  "*** Begin Patch\n*** Update File: f\n@@  def f():  \n-x\n*** End Patch",
			hunks: []Hunk{{Op: OpUpdate, Path: "f", Line: 2, Chunks: []Chunk{{Context: " def f():  ", Old: []string{"x"}, Line: 3}}}},
		},
		{
			name:  "add without lines is an empty file",
			text:  "*** Begin Patch\n*** Add File: empty.txt\n*** Delete File: x\n*** End Patch",
			hunks: []Hunk{{Op: OpAdd, Path: "empty.txt", Line: 2}, {Op: OpDelete, Path: "x", Line: 3}},
		},
		{
			name:  "add keeps white space of its lines",
			text:  "*** Begin Patch\n*** Add File: a\n+  x  \n+\n+\t\n*** End Patch",
			hunks: []Hunk{{Op: OpAdd, Path: "a", Contents: "  x  \n\n\t\n", Line: 2}},
		},
		{
			name:  "CRLF patch",
			text:  "*** Begin Patch\r\n*** Update File: f\r\n@@\r\n-a\r\n+b\r\n*** End Patch\r\n",
			hunks: []Hunk{{Op: OpUpdate, Path: "f", Line: 2, Chunks: []Chunk{{Old: []string{"a"}, New: []string{"b"}, Line: 3}}}},
		},
		{
			name:  "lone CR stays in the line",
			text:  "*** Begin Patch\n*** Add File: f\n+a\rb\n*** End Patch",
			hunks: []Hunk{{Op: OpAdd, Path: "f", Contents: "a\rb\n", Line: 2}},
		},
		{
			name:  "surrounding white space and numbering",
			text:  "\n\n  *** Begin Patch\n\t*** Delete File:  spaced name.txt \n*** End Patch\n\n",
			hunks: []Hunk{{Op: OpDelete, Path: "spaced name.txt", Line: 4}},
		},
		{
			name:  "blank lines between hunks",
			text:  "*** Begin Patch\n*** Delete File: a\n\n   \n*** Add File: b\n+b\n\n*** End Patch",
			hunks: []Hunk{{Op: OpDelete, Path: "a", Line: 2}, {Op: OpAdd, Path: "b", Contents: "b\n", Line: 5}},
		},
		{
			name:  "indented and padded move",
			text:  "*** Begin Patch\n*** Update File: a\n  *** Move to:  b/c.txt \n@@\n-x\n*** End Patch",
			hunks: []Hunk{{Op: OpUpdate, Path: "a", MoveTo: "b/c.txt", Line: 2, Chunks: []Chunk{{Old: []string{"x"}, Line: 4}}}},
		},
		{
			name:  "end of file marker with trailing white space",
			text:  "*** Begin Patch\n*** Update File: f\n@@\n-x\n*** End of File \t\n*** End Patch",
			hunks: []Hunk{{Op: OpUpdate, Path: "f", Line: 2, Chunks: []Chunk{{Old: []string{"x"}, EOF: true, Line: 3}}}},
		},
		{
			name: "indented marker inside a chunk is a context line",
			text: "*** Begin Patch\n*** Update File: f\n@@\n-x\n *** Add File: y\n*** End Patch",
			hunks: []Hunk{{Op: OpUpdate, Path: "f", Line: 2, Chunks: []Chunk{{
				Old: []string{"x", "*** Add File: y"}, New: []string{"*** Add File: y"}, Unchanged: [][2]int{{1, 0}}, Line: 3,
			}}}},
		},
		{
			name:  "heredoc",
			text:  "<<EOF\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF\n",
			hunks: []Hunk{{Op: OpDelete, Path: "a", Line: 3}},
		},
		{
			name:  "single-quoted heredoc",
			text:  "<<'EOF'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF\n",
			hunks: []Hunk{{Op: OpDelete, Path: "a", Line: 3}},
		},
		{
			name:  "double-quoted heredoc",
			text:  "<<\"EOF\"\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF",
			hunks: []Hunk{{Op: OpDelete, Path: "a", Line: 3}},
		},
		{
			name:  "shell heredoc with the command",
			text:  "apply_patch <<'PATCH'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nPATCH\n",
			hunks: []Hunk{{Op: OpDelete, Path: "a", Line: 3}},
		},
		{
			name:  "applypatch << EOF",
			text:  "applypatch << EOF\n*** Begin Patch\n*** Delete File: a\n*** End Patch\n  EOF  \n",
			hunks: []Hunk{{Op: OpDelete, Path: "a", Line: 3}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse(tt.text)
			require.NoError(t, err)
			require.Equal(t, tt.hunks, p.Hunks)
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		text string
		line int
		msg  string
	}{
		{"not a patch", "bad", 1, "the first line of the patch must be '*** Begin Patch'"},
		{"no end", "*** Begin Patch\nbad", 2, "the last line of the patch must be '*** End Patch'"},
		{"begin only", "*** Begin Patch", 1, "the last line of the patch must be '*** End Patch'"},
		{"empty", "", 1, "the patch is empty"},
		{"white space only", "  \n\n \n", 3, "the patch is empty"},
		{"no hunks", "*** Begin Patch\n*** End Patch", 2, "no file operations"},
		{"only blank lines inside", "*** Begin Patch\n\n  \n*** End Patch", 4, "no file operations"},
		{"empty update", "*** Begin Patch\n*** Update File: test.py\n*** End Patch", 2, "Update file hunk for path 'test.py' is empty"},
		{"empty update before a hunk", "*** Begin Patch\n*** Update File: a\n*** Delete File: b\n*** End Patch", 2, "Update file hunk for path 'a' is empty"},
		{"invalid hunk header", "*** Begin Patch\n*** Frobnicate File: foo\n*** End Patch", 2, "'*** Frobnicate File: foo' is not a valid hunk header. Valid hunk headers: '*** Add File: {path}'"},
		{"header without path", "*** Begin Patch\n*** Add File:   \n*** End Patch", 2, "'*** Add File:' is not a valid hunk header"},
		{"add line without +", "*** Begin Patch\n*** Add File: a\n+x\ny\n*** End Patch", 4, "'y' is not a valid hunk header"},
		{"@@ without lines", "*** Begin Patch\n*** Update File: a\n@@\n*** End Patch", 3, "Update hunk does not contain any lines"},
		{"@@ context without lines", "*** Begin Patch\n*** Update File: a\n@@ ctx\n*** End Patch", 3, "Update hunk does not contain any lines"},
		{"end of file first", "*** Begin Patch\n*** Update File: a\n@@\n*** End of File\n*** End Patch", 4, "Update hunk does not contain any lines before '*** End of File'"},
		{"unexpected line", "*** Begin Patch\n*** Update File: a\n@@\nbad\n*** End Patch", 4, "Unexpected line found in update hunk: 'bad'. Every line should start with ' ' (context line), '+' (added line), or '-' (removed line)"},
		{"unexpected first line", "*** Begin Patch\n*** Update File: a\nbad\n*** End Patch", 3, "Unexpected line found in update hunk: 'bad'"},
		{"second chunk without @@", "*** Begin Patch\n*** Update File: a\n@@\n-x\n*** End of File\nbad\n*** End Patch", 6, "Expected update hunk to start with a @@ context marker, got: 'bad'"},
		{"tab-indented line ends the chunk", "*** Begin Patch\n*** Update File: a\n@@\n-x\n\ty\n*** End Patch", 5, "Expected update hunk to start with a @@ context marker, got: '\ty'"},
		{"star line in an update", "*** Begin Patch\n*** Update File: a\n@@\n-x\n*oops\n*** End Patch", 5, "'*oops' is not a valid hunk header"},
		{"move without path", "*** Begin Patch\n*** Update File: a\n*** Move to: \n@@\n-x\n*** End Patch", 3, "'*** Move to:' needs the destination path"},
		{"move after chunks", "*** Begin Patch\n*** Update File: a\n@@\n-x\n*** Move to: b\n*** End Patch", 5, "'*** Move to: b' is not a valid hunk header"},
		{"end patch in the middle", "*** Begin Patch\n*** Delete File: a\n*** End Patch\n*** Delete File: b\n*** End Patch", 3, "'*** End Patch' is not a valid hunk header"},
		{"text after end", "*** Begin Patch\n*** Delete File: a\n*** End Patch\ntrailing", 4, "the last line of the patch must be '*** End Patch', got 'trailing'"},
		{"mismatched heredoc quotes", "<<\"EOF'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF\n", 1, "the first line of the patch must be '*** Begin Patch'"},
		{"heredoc without end patch", "<<EOF\n*** Begin Patch\n*** Update File: file2.py\nEOF\n", 3, "the last line of the patch must be '*** End Patch'"},
		{"heredoc too short", "<<EOF\n*** Begin Patch\nEOF\n", 1, "the first line of the patch must be '*** Begin Patch'"},
		{"heredoc with the wrong end", "<<EOF\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEND\n", 1, "the first line of the patch must be '*** Begin Patch'"},
		{"line numbers after leading blank lines", "\n\n*** Begin Patch\n*** Nope\n*** End Patch", 4, "'*** Nope' is not a valid hunk header"},
		{"line numbers inside a heredoc", "\n<<'EOF'\n*** Begin Patch\n\n*** Nope\n*** End Patch\nEOF", 5, "'*** Nope' is not a valid hunk header"},
		{"invalid UTF-8", "*** Begin Patch\n*** Add File: a\n+\xff\n*** End Patch", 3, "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse(tt.text)
			require.Nil(t, p)
			var pe *ParseError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, tt.line, pe.Line)
			require.Contains(t, pe.Msg, tt.msg)
			require.Contains(t, pe.Error(), pe.Msg)
		})
	}
}

func TestParseClipsLongLines(t *testing.T) {
	long := strings.Repeat("é", 200)
	_, err := Parse("*** Begin Patch\n*** " + long + "\n*** End Patch")
	var pe *ParseError
	require.ErrorAs(t, err, &pe)
	require.Contains(t, pe.Msg, "…'")
	require.Less(t, len(pe.Msg), 300)
}

func TestHeredocStart(t *testing.T) {
	tests := []struct {
		line  string
		delim string
		ok    bool
	}{
		{"<<EOF", "EOF", true},
		{"<<'EOF'", "EOF", true},
		{`<<"EOF"`, "EOF", true},
		{"<< 'END_PATCH'", "END_PATCH", true},
		{"apply_patch <<'EOF'", "EOF", true},
		{"apply_patch<<EOF", "EOF", true},
		{"applypatch <<\"X\"", "X", true},
		{"<<\"EOF'", "", false},
		{"<<''", "", false},
		{"<<", "", false},
		{"cat <<EOF", "", false},
		{"apply_patchx <<EOF", "", false},
		{"<<EOF extra", "", false},
		{"<<EOF;", "", false},
		{"*** Begin Patch", "", false},
	}
	for _, tt := range tests {
		delim, ok := heredocStart(tt.line)
		require.Equal(t, tt.ok, ok, tt.line)
		require.Equal(t, tt.delim, delim, tt.line)
	}
}
