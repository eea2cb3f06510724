package ui

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
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
		Row:    SessionRow{ID: "s1", Label: evil, Folders: []string{"/h/" + evil + " → /"}, Mounted: []string{evil}, CreatedAt: time.Now()},
		Timeline: []Entry{
			{Kind: "call", Title: evil, Status: "ok", Summary: "</script>" + evil, Paths: []string{evil}, Href: `javascript:alert(1)`,
				RewindKey: "call", RewindValue: `"><b>`, RewindText: evil},
			{Kind: "session", Op: "snapshot", Snapshot: "abc", Label: evil, Href: "/ui/s/s1?snap=abc"},
		},
		Earlier:   `/ui/s/s1?before=1&x="><b>`,
		Note:      evil,
		CanRewind: true,
		Diff: DiffView{Title: evil, Error: evil, Files: []FileView{{Anchor: "f-1", Path: evil, Change: "modified", Kind: "file",
			Notes: []string{evil}, Rows: fs[0].Rows}}, Params: evil, Result: "</script>"},
	}
	v.Diff.Tree = fileTree(v.Diff.Files)
	var b bytes.Buffer
	require.NoError(t, RenderSession(&b, v))
	out := b.String()
	for _, raw := range []string{"<img", "<svg", "</script><script>alert", `"><script>`, `"><b>`} {
		require.NotContains(t, out, raw)
	}
	require.Contains(t, out, "&lt;img src=x onerror=alert(1)&gt;")
	require.Contains(t, out, `data-path="&lt;img src=x onerror=alert(1)&gt;"`)
	require.NotContains(t, out, "javascript:", "a link to a script is not kept")
	require.NotContains(t, out, "<script>", "no inline script: the CSP allows none")
	require.Equal(t, 1, strings.Count(out, "<script "), "the one script is the embedded file")
}

func TestAgo(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		d    time.Duration
		want string
	}{
		{3 * time.Second, "just now"},
		{40 * time.Second, "40 s ago"},
		{3*time.Minute + 50*time.Second, "3 min ago"},
		{5*time.Hour + 59*time.Minute, "5 h ago"},
		{47 * time.Hour, "47 h ago"},
		{3 * 24 * time.Hour, "3 days ago"},
		{20 * 24 * time.Hour, "2026-11-02"},
		{-(23*time.Hour + 59*time.Minute), "in 23 h"},
		{-5 * time.Second, "in a moment"},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, Ago(now, now.Add(-tc.d)), "%s", tc.d)
	}
}

func TestShortID(t *testing.T) {
	require.Equal(t, "9c1e0a2b3c4d", ShortID("9c1e0a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7"))
	require.Equal(t, "review-42-a-long-name-the-user-gave", ShortID("review-42-a-long-name-the-user-gave"), "a name is kept whole")
	require.Equal(t, "abc", ShortID("abc"))
}

func TestFileTree(t *testing.T) {
	files := []FileView{{Path: "z.txt"}, {Path: "src/pkg/a.go"}, {Path: "src/pkg/b.go"}, {Path: "src/main.go"}, {Path: "docs/x/y/z.md"}}
	var show func(ns []*TreeNode, indent string) string
	show = func(ns []*TreeNode, indent string) string {
		var b strings.Builder
		for _, n := range ns {
			b.WriteString(indent + n.Name + "\n")
			if n.File != nil {
				require.Equal(t, n.Name, n.File.Path[strings.LastIndex(n.File.Path, "/")+1:])
			}
			b.WriteString(show(n.Children, indent+"  "))
		}
		return b.String()
	}
	require.Equal(t, "docs/x/y/\n  z.md\nsrc/\n  pkg/\n    a.go\n    b.go\n  main.go\nz.txt\n", show(fileTree(files), ""))
}

func TestEntryRewind(t *testing.T) {
	page := &api.Log{HistoryStart: 2, Seq: 9}
	tests := []struct {
		name            string
		le              api.LogEntry
		key, val, title string
	}{
		{"a call that changed the session", api.LogEntry{Kind: "call", Call: 3, Tool: "write_file", SeqBefore: 4, Seq: 5}, "call", "3", "#3 write_file"},
		{"a call that changed nothing", api.LogEntry{Kind: "call", Call: 4, Tool: "read_file", SeqBefore: 5, Seq: 5}, "", "", "#4 read_file"},
		{"a call older than the history kept", api.LogEntry{Kind: "call", Call: 1, Tool: "write_file", SeqBefore: 0, Seq: 1}, "", "", "#1 write_file"},
		{"a mount's run", api.LogEntry{Kind: "mount", Source: "fuse:/m", SeqBefore: 5, Seq: 7, Events: 2}, "seq", "5", "changes through fuse:/m"},
		{"a snapshot the session moved on from", api.LogEntry{Kind: "session", Tool: "snapshot", Snapshot: "ab12", SeqBefore: 7, Seq: 8}, "snapshot", "ab12", "snapshot"},
		{"the latest step is a snapshot", api.LogEntry{Kind: "session", Tool: "snapshot", Snapshot: "cd34", SeqBefore: 8, Seq: 9}, "", "", "snapshot"},
		{"a rewind", api.LogEntry{Kind: "session", Tool: "rewind", SeqBefore: 8, Seq: 9}, "seq", "8", "rewind"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := entry(tc.le, 0, page, map[string]string{"ab12": "before the refactor"})
			require.Equal(t, tc.key, e.RewindKey)
			require.Equal(t, tc.val, e.RewindValue)
			require.Equal(t, tc.title, e.Title)
			if tc.le.Snapshot == "ab12" {
				require.Equal(t, "before the refactor", e.Label)
			}
		})
	}
}

func TestHumanBytes(t *testing.T) {
	require.Equal(t, "512 B", HumanBytes(512))
	require.Equal(t, "1.5 KiB", HumanBytes(1536))
	require.Equal(t, "2.0 GiB", HumanBytes(2<<30))
}
