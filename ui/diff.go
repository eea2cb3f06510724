package ui

import (
	"strconv"
	"strings"
)

// Seg is a run of text in one syntax class: "" plain, "k" keyword, "s"
// string, "c" comment, "n" number; Changed marks the part of a line that
// differs from its counterpart on the other side. Templates print Text
// escaped: a segment is never markup.
type Seg struct {
	Class   string
	Text    string
	Changed bool
}

// Row is one line of a side-by-side diff. Kind is "ctx" (the same on both
// sides), "del" (left only), "add" (right only), "chg" (a left line
// replaced by a right one), "hunk" (a hunk header, in Header) or "note"
// (a "\ No newline at end of file" marker). LeftNo and RightNo are 1-based
// line numbers, 0 for no line on that side.
type Row struct {
	Kind    string
	Header  string
	LeftNo  int
	RightNo int
	Left    []Seg
	Right   []Seg
}

// FileDiff is one file of a unified diff, side by side.
type FileDiff struct {
	OldPath, NewPath string
	Rows             []Row
	Added, Deleted   int
}

// ParseUnified reads a unified diff (one or more files, as git diff or
// vfsd's text diffs print it) and lays each file out side by side, with
// syntax classes chosen by the file's name and changed tokens marked
// within replaced lines. Text that is no diff yields no files.
func ParseUnified(text string) []FileDiff {
	var (
		files []FileDiff
		cur   *FileDiff
		oldNo int
		newNo int
		// the lines the current hunk still has on each side: a hunk
		// ends when both are used up, so a later "--- " line is a new
		// file's header, not a deletion
		oldLeft, newLeft int
		dels             []string
		adds             []string
		delNo            int
		addNo            int
		hl               *highlighter
	)
	flush := func() {
		if cur == nil {
			dels, adds = nil, nil
			return
		}
		cur.Rows = append(cur.Rows, pairRows(hl, dels, adds, delNo, addNo)...)
		dels, adds = nil, nil
	}
	startFile := func(oldPath string) {
		flush()
		files = append(files, FileDiff{OldPath: oldPath})
		cur = &files[len(files)-1]
		hl = nil
	}
	lines := strings.Split(text, "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	inHunk := false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "diff --git "):
			startFile("")
			inHunk = false
		case !inHunk && strings.HasPrefix(l, "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ "):
			if cur == nil || len(cur.Rows) > 0 || cur.OldPath != "" {
				startFile("")
			}
			cur.OldPath = diffPath(l[4:])
			cur.NewPath = diffPath(lines[i+1][4:])
			i++
		case strings.HasPrefix(l, "@@"):
			if cur == nil {
				startFile("")
			}
			flush()
			if hl == nil {
				name := cur.NewPath
				if name == "" {
					name = cur.OldPath
				}
				hl = newHighlighter(name)
			}
			oldNo, oldLeft, newNo, newLeft = hunkRanges(l)
			cur.Rows = append(cur.Rows, Row{Kind: "hunk", Header: l})
			inHunk = oldLeft > 0 || newLeft > 0
		case strings.HasPrefix(l, `\`) && cur != nil && len(cur.Rows) > 0:
			// "\ No newline at end of file", also after a hunk's last line.
			flush()
			cur.Rows = append(cur.Rows, Row{Kind: "note", Header: l})
		case !inHunk || cur == nil:
			// A header line (index, mode, rename ...): not shown as a row.
		case strings.HasPrefix(l, "-"):
			if len(dels) == 0 {
				delNo = oldNo
			}
			if len(adds) > 0 { // a deletion after additions: a new block
				flush()
				delNo = oldNo
			}
			dels = append(dels, l[1:])
			oldNo++
			oldLeft--
			cur.Deleted++
		case strings.HasPrefix(l, "+"):
			if len(adds) == 0 {
				addNo = newNo
			}
			adds = append(adds, l[1:])
			newNo++
			newLeft--
			cur.Added++
		default: // context: " text", or an empty line some tools emit
			flush()
			t := strings.TrimPrefix(l, " ")
			cur.Rows = append(cur.Rows, Row{Kind: "ctx", LeftNo: oldNo, RightNo: newNo,
				Left: hl.line(t, sideLeft), Right: hl.line(t, sideRight)})
			oldNo++
			newNo++
			oldLeft--
			newLeft--
		}
		if inHunk && oldLeft <= 0 && newLeft <= 0 && !strings.HasPrefix(l, "@@") {
			inHunk = false
		}
	}
	flush()
	return files
}

// diffPath strips a diff header's a/ or b/ prefix and a trailing tab
// and timestamp; /dev/null is "".
func diffPath(p string) string {
	if i := strings.IndexByte(p, '\t'); i >= 0 {
		p = p[:i]
	}
	if p == "/dev/null" {
		return ""
	}
	if strings.HasPrefix(p, "a/") || strings.HasPrefix(p, "b/") {
		return p[2:]
	}
	return p
}

// hunkRanges reads "@@ -a,b +c,d @@" into its starts and lengths (a
// length left out is 1).
func hunkRanges(h string) (oldStart, oldLen, newStart, newLen int) {
	f := strings.Fields(h)
	rng := func(s, sign string) (int, int) {
		s = strings.TrimPrefix(s, sign)
		a, b, hasLen := strings.Cut(s, ",")
		start, err := strconv.Atoi(a)
		if err != nil {
			return 1, 0
		}
		n := 1
		if hasLen {
			if n, err = strconv.Atoi(b); err != nil {
				n = 0
			}
		}
		if start == 0 {
			start = 1 // "-0,0": an empty side; its numbering is unused
		}
		return start, n
	}
	if len(f) < 3 {
		return 1, 0, 1, 0
	}
	oldStart, oldLen = rng(f[1], "-")
	newStart, newLen = rng(f[2], "+")
	return
}

// pairRows lays out a block of deleted and added lines: the i-th deleted
// line beside the i-th added one (a change, its differing tokens marked),
// the rest alone on their side.
func pairRows(hl *highlighter, dels, adds []string, delNo, addNo int) []Row {
	n := max(len(dels), len(adds))
	rows := make([]Row, 0, n)
	for i := range n {
		var r Row
		switch {
		case i < len(dels) && i < len(adds):
			r = Row{Kind: "chg", LeftNo: delNo + i, RightNo: addNo + i}
			r.Left, r.Right = markChanged(hl.line(dels[i], sideLeft), hl.line(adds[i], sideRight))
		case i < len(dels):
			r = Row{Kind: "del", LeftNo: delNo + i, Left: hl.line(dels[i], sideLeft)}
		default:
			r = Row{Kind: "add", RightNo: addNo + i, Right: hl.line(adds[i], sideRight)}
		}
		rows = append(rows, r)
	}
	return rows
}

// markChanged marks the tokens between the two lines' common prefix and
// common suffix (of tokens) as changed, unless that is all of both lines
// (then the whole row's colour says it).
func markChanged(a, b []Seg) ([]Seg, []Seg) {
	p := 0
	for p < len(a) && p < len(b) && a[p].Text == b[p].Text {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s].Text == b[len(b)-1-s].Text {
		s++
	}
	if p == 0 && s == 0 {
		return a, b
	}
	for i := p; i < len(a)-s; i++ {
		a[i].Changed = true
	}
	for i := p; i < len(b)-s; i++ {
		b[i].Changed = true
	}
	return a, b
}
