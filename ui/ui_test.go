package ui

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func text(segs []Seg) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteString(s.Text)
	}
	return b.String()
}

func changed(segs []Seg) string {
	var b strings.Builder
	for _, s := range segs {
		if s.Changed {
			b.WriteString(s.Text)
		}
	}
	return b.String()
}

func TestParseUnified(t *testing.T) {
	tests := []struct {
		name     string
		diff     string
		old, new string
		kinds    string // the rows' kinds, one letter each: h c d a x n
		added    int
		deleted  int
	}{
		{"one change", "--- a/m.go\n+++ b/m.go\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n", "m.go", "m.go", "hcxc", 1, 1},
		{"more added than deleted", "--- a/f\n+++ b/f\n@@ -2,2 +2,3 @@\n-x\n+y\n+z\n k\n", "f", "f", "hxac", 2, 1},
		{"added file", "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n", "", "new.txt", "haa", 2, 0},
		{"deleted file", "--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n", "old.txt", "", "hd", 0, 1},
		{"no newline", "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+a\n", "f", "f", "hdna", 1, 1},
		{"no newline at the end", "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n\\ No newline at end of file\n", "f", "f", "hxn", 1, 1},
		{"git header", "diff --git a/x b/x\nindex 1..2 100644\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-1\n+2\n", "x", "x", "hx", 1, 1},
		{"two hunks", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-a\n+b\n c\n@@ -10,1 +10,1 @@\n-d\n+e\n", "f", "f", "hxchx", 2, 2},
	}
	letter := map[string]string{"hunk": "h", "ctx": "c", "del": "d", "add": "a", "chg": "x", "note": "n"}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := ParseUnified(tc.diff)
			require.Len(t, fs, 1)
			f := fs[0]
			require.Equal(t, tc.old, f.OldPath)
			require.Equal(t, tc.new, f.NewPath)
			var kinds strings.Builder
			for _, r := range f.Rows {
				kinds.WriteString(letter[r.Kind])
			}
			require.Equal(t, tc.kinds, kinds.String())
			require.Equal(t, tc.added, f.Added)
			require.Equal(t, tc.deleted, f.Deleted)
		})
	}
}

func TestParseUnifiedLineNumbers(t *testing.T) {
	fs := ParseUnified("--- a/f\n+++ b/f\n@@ -10,3 +20,4 @@\n a\n-b\n+B\n+C\n c\n")
	require.Len(t, fs, 1)
	var got [][2]int
	for _, r := range fs[0].Rows[1:] {
		got = append(got, [2]int{r.LeftNo, r.RightNo})
	}
	require.Equal(t, [][2]int{{10, 20}, {11, 21}, {0, 22}, {12, 23}}, got)
}

func TestParseUnifiedSeveralFiles(t *testing.T) {
	d := "--- a/one.go\n+++ b/one.go\n@@ -1 +1 @@\n-a\n+b\n--- a/two.py\n+++ b/two.py\n@@ -1 +1 @@\n-c\n+d\n"
	fs := ParseUnified(d)
	require.Len(t, fs, 2)
	require.Equal(t, "one.go", fs[0].NewPath)
	require.Equal(t, "two.py", fs[1].NewPath)
	require.Empty(t, ParseUnified("not a diff\n"))
}

func TestMarkChanged(t *testing.T) {
	fs := ParseUnified("--- a/m.go\n+++ b/m.go\n@@ -1 +1 @@\n-\tx := compute(a, b)\n+\tx := compute(a, c)\n")
	r := fs[0].Rows[1]
	require.Equal(t, "chg", r.Kind)
	require.Equal(t, "b", changed(r.Left))
	require.Equal(t, "c", changed(r.Right))
	require.Equal(t, "\tx := compute(a, b)", text(r.Left), "tokens keep every byte")
	// Lines with nothing in common are not marked token by token.
	fs = ParseUnified("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-alpha\n+beta\n")
	require.Empty(t, changed(fs[0].Rows[1].Left))
}

func TestHighlight(t *testing.T) {
	tests := []struct {
		file, line string
		want       map[string]string // token → class
	}{
		{"a.go", `func f() string { return "x // y" } // done`, map[string]string{"func": "k", "return": "k", `"x // y"`: "s", "// done": "c", "f": ""}},
		{"a.py", `def f(): return 'a#b'  # note`, map[string]string{"def": "k", "'a#b'": "s", "# note": "c"}},
		{"a.sql", `SELECT 1 -- c`, map[string]string{"1": "n", "-- c": "c"}},
		{"a.js", `let s = "a\"b"; /* c */ x = 3.14`, map[string]string{"let": "k", `"a\"b"`: "s", "/*": "c", " c */": "c", "3.14": "n"}},
		{"README", `func "x"`, map[string]string{"func": "", `"`: ""}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			segs := newHighlighter(tc.file).line(tc.line, sideLeft)
			require.Equal(t, tc.line, text(segs))
			got := map[string]string{}
			for _, s := range segs {
				got[s.Text] = s.Class
			}
			for tok, class := range tc.want {
				c, ok := got[tok]
				require.True(t, ok, "token %q not found in %v", tok, segs)
				require.Equal(t, class, c, "token %q", tok)
			}
		})
	}
	// A block comment carries to the next line, on its own side.
	h := newHighlighter("a.c")
	h.line("int x; /* start", sideLeft)
	require.Equal(t, "c", h.line("still comment", sideLeft)[0].Class)
	require.Equal(t, "", h.line("code", sideRight)[0].Class)
	segs := h.line("end */ int y;", sideLeft)
	require.Equal(t, "c", segs[0].Class)
	require.Equal(t, "end */", segs[0].Text)
}

func TestRenderEscapes(t *testing.T) {
	evil := `<img src=x onerror=alert(1)>`
	fs := ParseUnified("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-</script><script>alert(1)</script>\n+\"><svg onload=alert(2)>\n")
	v := &SessionView{
		Common: Common{Title: evil, CSRF: `"><script>`, Admin: true},
		Row:    SessionRow{ID: "s1", Folders: []string{"/h/" + evil + " → /"}, CreatedAt: time.Now()},
		Calls:  []CallRow{{N: 1, Tool: evil, Status: "ok", Summary: "</script>" + evil}},
		Log:    []LogRow{{What: evil, Summary: evil, Paths: []string{evil}, Ref: `"><b>`}},
		HasLog: true, CanRewind: true,
		Snapshots: []SnapRow{{ID: "abc", Label: evil}},
		Diff: DiffView{Title: evil, Error: evil, Files: []FileView{{Path: evil, Change: "modified", Kind: "file",
			Notes: []string{evil}, Rows: fs[0].Rows}}, Params: evil, Result: "</script>"},
	}
	var b bytes.Buffer
	require.NoError(t, RenderSession(&b, v))
	out := b.String()
	for _, raw := range []string{"<img", "<svg", "</script><script>alert", `"><script>`, `"><b>`} {
		require.NotContains(t, out, raw)
	}
	require.Contains(t, out, "&lt;img src=x onerror=alert(1)&gt;")
	require.Contains(t, out, `data-path="&lt;img src=x onerror=alert(1)&gt;"`)
	require.NotContains(t, out, "<script>", "no inline script: the CSP allows none")
	require.Equal(t, 1, strings.Count(out, "<script "), "the one script is the embedded file")
}

func TestHumanBytesAge(t *testing.T) {
	require.Equal(t, "512 B", HumanBytes(512))
	require.Equal(t, "1.5 KiB", HumanBytes(1536))
	require.Equal(t, "2.0 GiB", HumanBytes(2<<30))
	require.Equal(t, "45s", Age(45*time.Second))
	require.Equal(t, "12m", Age(12*time.Minute))
	require.Equal(t, "3h20m", Age(3*time.Hour+20*time.Minute))
	require.Equal(t, "2d4h", Age(52*time.Hour))
}
