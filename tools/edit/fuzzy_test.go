package edit

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func pass(name string, lines ...int) []applied { return []applied{{name, lines}} }

func TestFuzzyPasses(t *testing.T) {
	runCases(t, []applyCase{
		{
			name: "trim_end", content: "func f() {   \n\treturn 1\t\n}\n",
			edits: one("func f() {\n\treturn 1\n}", "func f() {\n\treturn 2\n}"),
			want:  "func f() {\n\treturn 2\n}\n", applied: pass("trim_end", 1),
		},
		{
			name: "trim_end, trailing space in old", content: "a\nfoo\nb\n",
			edits: one("foo  \nb", "bar\nb"), want: "a\nbar\nb\n", applied: pass("trim_end", 2),
		},
		{
			name: "trim reindents (spaces added)", content: "class A:\n    def f(self):\n        return 1\n",
			edits: one("def f(self):\n    return 1\n", "def f(self):\n    x = 1\n\n    return x\n"),
			want:  "class A:\n    def f(self):\n        x = 1\n\n        return x\n", applied: pass("trim", 2),
		},
		{
			name: "trim reindents spaces to tabs", content: "func f() {\n\tif x {\n\t\ty()\n\t}\n}\n",
			edits: one("    if x {\n        y()\n    }", "    if x {\n        z()\n          w()\n    }"),
			want:  "func f() {\n\tif x {\n\t\tz()\n\t\t  w()\n\t}\n}\n", applied: pass("trim", 2),
		},
		{
			name: "trim reindents tabs to spaces", content: "a:\n  b:\n    c: 1\n",
			edits: one("\tb:\n\t\tc: 1", "\tb:\n\t\tc: 2\n\t\td: 3"),
			want:  "a:\n  b:\n    c: 2\n    d: 3\n", applied: pass("trim", 2),
		},
		{
			name: "trim reindents (spaces removed)", content: "if x:\n  y = 1\nz\n",
			edits: one("        y = 1", "        y = 2\n    w = 0"),
			want:  "if x:\n  y = 2\nw = 0\nz\n", applied: pass("trim", 2),
		},
		{
			name: "anchor is old's first non-blank line", content: "x\n\n\t\tfoo\n\t\tbar\n",
			edits: one("\nfoo\nbar", "\nfoo\n  baz"),
			want:  "x\n\n\t\tfoo\n\t\t  baz\n", applied: pass("trim", 2),
		},
		{
			name: "unicode_punctuation", content: "msg := “hello” — world\n",
			edits: one(`msg := "hello" - world`, `msg := "hi" - world`),
			want:  "msg := \"hi\" - world\n", applied: pass("unicode_punctuation", 1),
		},
		{
			name: "unicode_punctuation reindents, new as given", content: "def f():\n\tprint(‘x’)\n",
			edits: one("print('x')", "print('y')\nprint(‘z’)"),
			want:  "def f():\n\tprint('y')\n\tprint(‘z’)\n", applied: pass("unicode_punctuation", 2),
		},
		{
			name: "nbsp in file", content: "a\u00a0=\u00a01\n",
			edits: one("a = 1", "a = 2"), want: "a = 2\n", applied: pass("unicode_punctuation", 1),
		},
		{
			name: "old needs the final newline the file lacks", content: "a\nb",
			edits: one("b\n", "c\n"), want: "a\nc", applied: pass("exact", 2),
		},
		{
			name: "old needs the final newline, CRLF", content: "a\r\nb\r\nc",
			edits: one("b\nc\n", "x\ny\nz\n"), want: "a\r\nx\r\ny\r\nz", applied: pass("exact", 2),
		},
		{
			name: "trailing newline of old keeps the line's break", content: "a\n  b\nc\n",
			edits: one("b \n", "B"), want: "a\n  B\nc\n", applied: pass("trim", 2),
		},
		{
			name: "new with a newline old lacks", content: "a\n  b\nc\n",
			edits: one("b ", "B\n"), want: "a\n  B\n\nc\n", applied: pass("trim", 2),
		},
		{
			name: "blank new line stays blank", content: "a\n  b\nc\n",
			edits: one("b \n", "\n"), want: "a\n\nc\n", applied: pass("trim", 2),
		},
		{
			name: "delete whole lines", content: "a\n  b  \n  c\nd\n",
			edits: one("b\nc\n", ""), want: "a\nd\n", applied: pass("trim", 2),
		},
		{
			name: "delete last line without final newline", content: "a\n  b  ",
			edits: one("b\n", ""), want: "a", applied: pass("trim", 2),
		},
		{
			name: "delete the only line", content: "  b  ",
			edits: one("b\n", ""), want: "", applied: pass("trim", 1),
		},
		{
			name: "delete CRLF lines", content: "a\r\n  b\r\nc\r\n",
			edits: one("b \n", ""), want: "a\r\nc\r\n", applied: pass("trim", 2),
		},
		{
			name: "delete all at end without final newline", content: "x\t\nx\t\nx",
			edits: all("x \n", ""), want: "", applied: pass("trim_end", 1, 2, 3),
		},
		{
			name: "CRLF fuzzy keeps breaks", content: "if a {\r\n\t\tx()\r\n}\r\n",
			edits: one("    x()", "    y()\n    z()"), want: "if a {\r\n\t\ty()\r\n\t\tz()\r\n}\r\n", applied: pass("trim", 2),
		},
		{
			name: "fuzzy ambiguous", content: "  x()\n\ty()\n  x()\n",
			edits: one("x() \n", "z()\n"), err: &AmbiguousError{Lines: []int{1, 3}, Pass: "trim"},
		},
		{
			name: "fuzzy replace all reindents each", content: "  x()\n\ty()\n\t\tx()\n",
			edits: all("x() \n", "z()\nw()\n"), want: "  z()\n  w()\n\ty()\n\t\tz()\n\t\tw()\n", applied: pass("trim", 1, 3),
		},
		{
			name: "fuzzy overlapping is ambiguous", content: " a\n a\n a\n",
			edits: one("a\na", "b"), err: &AmbiguousError{Lines: []int{1, 2}, Pass: "trim"},
		},
		{
			name: "fuzzy overlapping replace all", content: " a\n a\n a\n",
			edits: all("a\na", "b"), want: " b\n a\n", applied: pass("trim", 1),
		},
		{
			name: "earlier pass wins over later", content: "foo  \n  foo\n",
			edits: one("foo \n", "bar\n"), want: "bar\n  foo\n", applied: pass("trim_end", 1),
		},
		{
			name: "fragment of a line does not match by lines", content: "x = foo(1)\n",
			edits: one("foo(1) \n", "bar"), err: &NotFoundError{Closest: &Region{StartLine: 1, EndLine: 1, Text: "x = foo(1)", Similarity: nf1("x = foo(1)", "foo(1) ")}},
		},
	})
}

func TestIndentShift(t *testing.T) {
	for _, c := range []struct{ from, to, ws, want string }{
		{"", "    ", "", "    "},
		{"", "\t", "  ", "\t  "},
		{"  ", "    ", "  ", "    "},
		{"  ", "    ", "", "  "},                                     // shallower than the anchor: shifted too
		{"    ", "  ", "  ", ""},                                     // stripped by the difference
		{"    ", "", " ", ""},                                        // stripped as far as it goes
		{"    ", "\t", "        ", "\t\t"},                           // units
		{"    ", "\t", "      ", "\t  "},                             // a partial unit kept
		{"        ", "\t\t", "    ", "\t"},                           // width 4 from two levels
		{"\t", "  ", "\t\t ", "     "},                               // tabs to 2 spaces
		{"\t\t", "    ", "\t", "  "},                                 // 2 levels of 2 spaces
		{"\t", "\t  ", "", "  "},                                     // F = O + "  ": its extra part
		{"\t", "  \t", "\t\t", "  \t\t"},                             // prefix replaced
		{"  ", "\t  ", "", "\t"},                                     // F ends with O: the part before it
		{" \t", "\t ", "\t", "\t"},                                   // same width, no prefix: unchanged
		{"\t", "                    ", "\t", "                    "}, // 20 spaces per tab is no unit: prefix
		{"\u00a0", "  ", "\u00a0\u00a0", "  \u00a0"},
	} {
		require.Equal(t, c.want, indentShift(c.from, c.to)(c.ws), "from %q to %q ws %q", c.from, c.to, c.ws)
	}
	require.Equal(t, "x\n\n  y", reindent("x\n\n  y", "\t", "\t"))
}
