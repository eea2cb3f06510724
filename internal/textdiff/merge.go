package textdiff

import (
	"strings"
	"unicode"

	"github.com/aymanbagabas/go-udiff/lcs"
)

// MergeResult is a three-way merge of text.
type MergeResult struct {
	// Text is the merged text, with conflict markers around each conflict.
	Text string
	// Conflicts is the number of conflicts (0: a clean merge).
	Conflicts int
}

// Merge merges the changes from base to theirs into ours, line by line, as
// git merge-file does (its default "zealous alnum" level): a change only
// one side made is taken; the same change on both sides is taken once;
// changes to the same or touching lines conflict, each conflict narrowed to
// the lines where the two sides differ, and conflicts at most three lines
// apart (or apart by lines without a letter or digit) joined. A conflict is
// written as git writes it:
//
//	<<<<<<< oursName
//	ours' lines
//	=======
//	theirs' lines
//	>>>>>>> theirsName
//
// Lines are compared with their line ends; a side's last line without one
// gets a newline before the marker that follows it.
func Merge(base, ours, theirs, oursName, theirsName string) MergeResult {
	o, a, b := splitLines(base), splitLines(ours), splitLines(theirs)
	ms := mergeScripts(o, a, b, lcs.DiffLines(o, a), lcs.DiffLines(o, b))
	ms = refineConflicts(a, b, ms)
	ms = simplifyNonConflicts(a, ms)

	var sb strings.Builder
	n := 0
	i := 0 // next line of ours to copy
	copyLines := func(lines []string, addNL bool) {
		for _, l := range lines {
			sb.WriteString(l)
		}
		if addNL && len(lines) > 0 && !strings.HasSuffix(lines[len(lines)-1], "\n") {
			sb.WriteByte('\n')
		}
	}
	marker := func(c byte, name string) {
		sb.WriteString(strings.Repeat(string(c), 7))
		if name != "" {
			sb.WriteByte(' ')
			sb.WriteString(name)
		}
		sb.WriteByte('\n')
	}
	for _, m := range ms {
		switch m.mode {
		case modeConflict:
			n++
			copyLines(a[i:m.i1], false)
			marker('<', oursName)
			copyLines(a[m.i1:m.i1+m.chg1], true)
			marker('=', "")
			copyLines(b[m.i2:m.i2+m.chg2], true)
			marker('>', theirsName)
		case modeOurs, modeTheirs:
			copyLines(a[i:m.i1], false)
			if m.mode == modeOurs {
				copyLines(a[m.i1:m.i1+m.chg1], false)
			} else {
				copyLines(b[m.i2:m.i2+m.chg2], false)
			}
		default: // the same change on both sides: ours' lines, as a gap
			continue
		}
		i = m.i1 + m.chg1
	}
	copyLines(a[i:], false)
	return MergeResult{Text: sb.String(), Conflicts: n}
}

// Merge chunk modes, as git's xdiff numbers them.
const (
	modeConflict = 0
	modeOurs     = 1
	modeTheirs   = 2
	modeSame     = 4
)

// chunk is one change in the merge: i0/chg0 in base, i1/chg1 in ours,
// i2/chg2 in theirs.
type chunk struct {
	mode             int
	i0, i1, i2       int
	chg0, chg1, chg2 int
}

// splitLines splits s into lines, each with its "\n" (the last may have
// none).
func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// appendMerge adds a chunk, joining it to the last one when they overlap
// (a join of two kinds is a conflict).
func appendMerge(ms []chunk, c chunk) []chunk {
	if k := len(ms); k > 0 {
		m := &ms[k-1]
		if c.i1 <= m.i1+m.chg1 || c.i2 <= m.i2+m.chg2 {
			if c.mode != m.mode {
				m.mode = modeConflict
			}
			m.chg0 = c.i0 + c.chg0 - m.i0
			m.chg1 = c.i1 + c.chg1 - m.i1
			m.chg2 = c.i2 + c.chg2 - m.i2
			return ms
		}
	}
	return append(ms, c)
}

// mergeScripts walks the two edit scripts (base→ours, base→theirs) in base
// order, as xdl_do_merge does.
func mergeScripts(o, a, b []string, da, db []lcs.Diff) []chunk {
	var ms []chunk
	x, y := 0, 0
	for x < len(da) && y < len(db) {
		s1, s2 := da[x], db[y]
		// s.Start/End are base lines, ReplStart/ReplEnd the side's.
		switch {
		case s1.End < s2.Start:
			ms = appendMerge(ms, chunk{mode: modeOurs, i0: s1.Start, chg0: s1.End - s1.Start,
				i1: s1.ReplStart, chg1: s1.ReplEnd - s1.ReplStart,
				i2: s2.ReplStart - s2.Start + s1.Start, chg2: s1.End - s1.Start})
			x++
			continue
		case s2.End < s1.Start:
			ms = appendMerge(ms, chunk{mode: modeTheirs, i0: s2.Start, chg0: s2.End - s2.Start,
				i1: s1.ReplStart - s1.Start + s2.Start, chg1: s2.End - s2.Start,
				i2: s2.ReplStart, chg2: s2.ReplEnd - s2.ReplStart})
			y++
			continue
		}
		if s1.Start != s2.Start || s1.End != s2.End || s1.ReplEnd-s1.ReplStart != s2.ReplEnd-s2.ReplStart ||
			!equalLines(a[s1.ReplStart:s1.ReplEnd], b[s2.ReplStart:s2.ReplEnd]) {
			off := s1.Start - s2.Start
			ffo := off + (s1.End - s1.Start) - (s2.End - s2.Start)
			i0, i1, i2 := s1.Start, s1.ReplStart, s2.ReplStart
			if off > 0 {
				i0 -= off
				i1 -= off
			} else {
				i2 += off
			}
			chg0 := s1.End - i0
			chg1 := s1.ReplEnd - i1
			chg2 := s2.ReplEnd - i2
			if ffo < 0 {
				chg0 -= ffo
				chg1 -= ffo
			} else {
				chg2 += ffo
			}
			ms = appendMerge(ms, chunk{mode: modeConflict, i0: i0, chg0: chg0, i1: i1, chg1: chg1, i2: i2, chg2: chg2})
		}
		e1, e2 := s1.End, s2.End
		if e1 >= e2 {
			y++
		}
		if e2 >= e1 {
			x++
		}
	}
	for ; x < len(da); x++ {
		s1 := da[x]
		ms = appendMerge(ms, chunk{mode: modeOurs, i0: s1.Start, chg0: s1.End - s1.Start,
			i1: s1.ReplStart, chg1: s1.ReplEnd - s1.ReplStart,
			i2: s1.Start + len(b) - len(o), chg2: s1.End - s1.Start})
	}
	for ; y < len(db); y++ {
		s2 := db[y]
		ms = appendMerge(ms, chunk{mode: modeTheirs, i0: s2.Start, chg0: s2.End - s2.Start,
			i1: s2.Start + len(a) - len(o), chg1: s2.End - s2.Start,
			i2: s2.ReplStart, chg2: s2.ReplEnd - s2.ReplStart})
	}
	return ms
}

func equalLines(x, y []string) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}

// refineConflicts narrows each conflict to the lines where ours and theirs
// differ, splitting it where they agree (xdl_refine_conflicts).
func refineConflicts(a, b []string, ms []chunk) []chunk {
	var out []chunk
	for _, m := range ms {
		if m.mode != modeConflict || m.chg1 == 0 || m.chg2 == 0 {
			out = append(out, m)
			continue
		}
		d := lcs.DiffLines(a[m.i1:m.i1+m.chg1], b[m.i2:m.i2+m.chg2])
		if len(d) == 0 {
			m.mode = modeSame
			out = append(out, m)
			continue
		}
		for _, h := range d {
			out = append(out, chunk{mode: modeConflict, i0: m.i0, chg0: m.chg0,
				i1: m.i1 + h.Start, chg1: h.End - h.Start, i2: m.i2 + h.ReplStart, chg2: h.ReplEnd - h.ReplStart})
		}
	}
	return out
}

// simplifyNonConflicts joins two conflicts separated by at most three
// lines, or by lines without a letter or digit (xdl_simplify_non_conflicts
// at the zealous alnum level): one conflict reads more easily than two.
func simplifyNonConflicts(a []string, ms []chunk) []chunk {
	for k := 0; k+1 < len(ms); {
		m, next := &ms[k], ms[k+1]
		begin, end := m.i1+m.chg1, next.i1
		if m.mode != modeConflict || next.mode != modeConflict || end-begin > 3 && hasAlnum(a[begin:end]) {
			k++
			continue
		}
		m.chg1 = next.i1 + next.chg1 - m.i1
		m.chg2 = next.i2 + next.chg2 - m.i2
		ms = append(ms[:k+1], ms[k+2:]...)
	}
	return ms
}

func hasAlnum(lines []string) bool {
	for _, l := range lines {
		for _, r := range l {
			if r < 0x80 && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
				return true
			}
		}
	}
	return false
}
