package edit

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzApply feeds arbitrary content and edits to Apply. It must not panic
// and must be deterministic; a failure is one of the typed errors for edit
// 0; a success replaced at least once, on lines of the content; the exact
// stage inserts new_string (in the file's line-ending style), and without
// any '\r' about equals strings.ReplaceAll; a file without
// '\r' stays without, a pure CRLF file stays pure CRLF; and a line-based
// match never drops a final newline (nor adds one unless new_string asks).
func FuzzApply(f *testing.F) {
	seeds := []struct {
		content, old, new string
		all               bool
	}{
		{"a\nfoo\nb\n", "foo", "bar", false},
		{"aaa", "aa", "X", false},
		{"aaa", "aa", "X", true},
		{"one\r\ntwo\r\nthree\r\n", "one\ntwo\n", "1\n2\n", false},
		{"a\r\nb\nc\r\nd\n", "c", "c1\nc2", false},
		{"a\nb", "b\n", "c\n", false},
		{"a\n  b  ", "b\n", "", false},
		{"func f() {\n\tif x {\n\t\ty()\n\t}\n}\n", "    if x {\n        y()\n    }", "    if x {\n        z()\n    }", false},
		{"msg := “hello” — world\n", `msg := "hello" - world`, `msg := "hi"`, false},
		{"  x()\n\ty()\n\t\tx()\n", "x() \n", "z()\nw()\n", true},
		{"x = $1.*\\n\n", "$1.*\\n", "${2}", false},
		{"", "x", "y", false},
		{"a\r\r\nb", "a\r", "q\r\n", false},
	}
	for _, s := range seeds {
		f.Add(s.content, s.old, s.new, s.all)
	}
	f.Fuzz(func(t *testing.T, content, old, new string, replaceAll bool) {
		edits := []Edit{{Old: old, New: new, ReplaceAll: replaceAll}}
		r, err := Apply(content, edits)
		r2, err2 := Apply(content, edits)
		require.Equal(t, r, r2, "not deterministic")
		require.Equal(t, err, err2, "not deterministic")
		if err != nil {
			require.Nil(t, r)
			var (
				empty *EmptyOldError
				same  *NoChangeError
				nf    *NotFoundError
				amb   *AmbiguousError
			)
			switch {
			case errors.As(err, &empty):
				require.Equal(t, 0, empty.Index)
			case errors.As(err, &same):
				require.Equal(t, 0, same.Index)
			case errors.As(err, &nf):
				require.Equal(t, 0, nf.Index)
				require.Equal(t, content == "", nf.Closest == nil)
				if c := nf.Closest; c != nil {
					require.True(t, 1 <= c.StartLine && c.StartLine <= c.EndLine && c.EndLine <= LineOf(content, len(content)))
					require.True(t, c.Similarity >= 0 && c.Similarity <= 1, "similarity %v", c.Similarity)
				}
			case errors.As(err, &amb):
				require.Equal(t, 0, amb.Index)
				require.Greater(t, len(amb.Lines), 1)
				require.False(t, replaceAll)
				require.True(t, slices.IsSorted(amb.Lines))
			default:
				t.Fatalf("untyped error %T: %v", err, err)
			}
			require.NotEmpty(t, err.Error())
			return
		}

		a := r.Edits[0]
		require.GreaterOrEqual(t, a.Count, 1)
		require.Equal(t, a.Count, r.Replacements)
		require.Len(t, a.Lines, a.Count)
		require.True(t, slices.IsSorted(a.Lines))
		require.GreaterOrEqual(t, a.Lines[0], 1)
		require.LessOrEqual(t, a.Lines[len(a.Lines)-1], LineOf(content, len(content)))
		require.Contains(t, []string{"exact", "trim_end", "trim", "unicode_punctuation"}, a.Pass)
		if !replaceAll {
			require.Equal(t, 1, a.Count)
		}

		lfOld, lfNew := toLF(old), toLF(new)
		styled := func(s string) string {
			if newText(content).crlf {
				return strings.ReplaceAll(s, "\n", "\r\n")
			}
			return s
		}
		byLines := !strings.Contains(toLF(content), lfOld)
		if !byLines {
			require.Equal(t, "exact", a.Pass)
			require.Contains(t, r.Content, styled(lfNew))
			if new != "" && !strings.ContainsRune(content+old+new, '\r') {
				require.Equal(t, strings.ReplaceAll(content, old, new), r.Content)
			}
		}
		if !strings.Contains(content, "\r") && !strings.Contains(lfNew, "\r") {
			require.NotContains(t, r.Content, "\r", "an LF file gained a CR")
		}
		if n := strings.Count(content, "\n"); n > 0 && n == strings.Count(content, "\r\n") {
			require.Equal(t, strings.Count(r.Content, "\n"), strings.Count(r.Content, "\r\n"), "a CRLF file gained a bare LF")
		}
		if byLines && r.Content != "" {
			if strings.HasSuffix(content, "\n") {
				require.True(t, strings.HasSuffix(r.Content, "\n"), "final newline dropped")
			} else {
				tail := lfNew
				if strings.HasSuffix(lfOld, "\n") {
					tail = strings.TrimSuffix(tail, "\n")
				}
				// An emptied last line (blank lines may be re-indented to
				// nothing) cannot be told from a final newline.
				lastLine := tail[strings.LastIndexByte(tail, '\n')+1:]
				if !isBlank(lastLine) {
					require.False(t, strings.HasSuffix(r.Content, "\n"), "final newline added")
				}
			}
		}
	})
}
