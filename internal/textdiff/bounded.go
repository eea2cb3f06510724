package textdiff

import (
	"fmt"
	"strconv"
	"strings"
)

// context is the lines of context Unified shows around each change.
const context = 3

// Bounded is Unified for texts of any size, at a cost bounded by the
// changed region rather than the texts: the lines old and new share at
// their start and end (beyond the context a hunk shows) are left out of
// the diff's computation, and the hunk headers are shifted back to the
// texts' line numbers. When the changed region (both sides) is larger
// than maxBytes, it returns "" and false without diffing; maxBytes <= 0 is
// unbounded.
func Bounded(oldName, newName, old, new string, maxBytes int) (string, bool) {
	if old == new {
		return "", true
	}
	// Common prefix, cut back to a line start and then by the context.
	p := 0
	for p < len(old) && p < len(new) && old[p] == new[p] {
		p++
	}
	p = strings.LastIndexByte(old[:p], '\n') + 1
	skipped := 0
	for p > 0 && skipped < context {
		p = strings.LastIndexByte(old[:p-1], '\n') + 1
		skipped++
	}
	// Common suffix after p, cut forward to a line start and then by the
	// context; the region before it then ends with a line break on both
	// sides, so "no newline at end of file" marks stay right.
	s := 0
	for s < len(old)-p && s < len(new)-p && old[len(old)-1-s] == new[len(new)-1-s] {
		s++
	}
	cut := len(old) - s // first byte of the common suffix in old
	if cut > 0 && old[cut-1] != '\n' {
		if i := strings.IndexByte(old[cut:], '\n'); i >= 0 {
			cut += i + 1
		} else {
			cut = len(old)
		}
	}
	for k := 0; k < context && cut < len(old); k++ {
		if i := strings.IndexByte(old[cut:], '\n'); i >= 0 {
			cut += i + 1
		} else {
			cut = len(old)
		}
	}
	tail := len(old) - cut
	o, n := old[p:len(old)-tail], new[p:len(new)-tail]
	if maxBytes > 0 && len(o)+len(n) > maxBytes {
		return "", false
	}
	d := Unified(oldName, newName, o, n)
	shift := strings.Count(old[:p], "\n")
	if shift == 0 || d == "" {
		return d, true
	}
	return shiftHunks(d, shift), true
}

// shiftHunks adds shift to both start lines of every "@@ -a,b +c,d @@"
// header of a unified diff.
func shiftHunks(d string, shift int) string {
	var b strings.Builder
	b.Grow(len(d) + 64)
	for line := range strings.SplitAfterSeq(d, "\n") {
		if !strings.HasPrefix(line, "@@ -") {
			b.WriteString(line)
			continue
		}
		var a, c string
		rest := strings.TrimPrefix(line, "@@ -")
		a, rest, _ = strings.Cut(rest, " +")
		c, rest, _ = strings.Cut(rest, " @@")
		fmt.Fprintf(&b, "@@ -%s +%s @@%s", shiftRange(a, shift), shiftRange(c, shift), rest)
	}
	return b.String()
}

// shiftRange shifts "start[,count]"; a start of 0 (an empty side) moves
// to the line before the change, as diff(1) numbers it.
func shiftRange(r string, shift int) string {
	start, count, hasCount := strings.Cut(r, ",")
	n, err := strconv.Atoi(start)
	if err != nil {
		return r
	}
	out := strconv.Itoa(n + shift)
	if hasCount {
		out += "," + count
	}
	return out
}
