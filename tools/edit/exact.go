package edit

import "strings"

// findAll returns, ascending, the first keep byte offsets at which pat
// occurs in s, overlapping occurrences included, and how many occurrences
// there are in all, in O(len(s)+len(pat)) time and O(keep+len(pat)) memory.
func findAll(s, pat string, keep int) (at []int, total int) {
	m := len(pat)
	if m == 0 || m > len(s) {
		return nil, 0
	}
	border := borders(pat)
	add := func(p int) {
		if total < keep {
			at = append(at, p)
		}
		total++
	}
	if border[m-1] == 0 {
		// pat has no proper border, so two occurrences cannot overlap:
		// the fast non-overlapping search finds them all.
		for off := 0; ; {
			j := strings.Index(s[off:], pat)
			if j < 0 {
				return at, total
			}
			add(off + j)
			off += j + m
		}
	}
	// Knuth–Morris–Pratt, linear even for periodic patterns like "aaaa".
	k := 0
	for i := 0; i < len(s); i++ {
		for k > 0 && s[i] != pat[k] {
			k = border[k-1]
		}
		if s[i] == pat[k] {
			k++
		}
		if k == m {
			add(i - m + 1)
			k = border[m-1]
		}
	}
	return at, total
}

// indexAll returns, ascending, the offsets of the n occurrences of pat in
// s that strings.Count counts (leftmost, not overlapping): those
// strings.ReplaceAll would replace.
func indexAll(s, pat string, n int) []int {
	at := make([]int, 0, n)
	for off := 0; len(at) < n; {
		j := strings.Index(s[off:], pat)
		if j < 0 {
			break
		}
		at = append(at, off+j)
		off += j + len(pat)
	}
	return at
}

// borders returns KMP's failure function: border[i] is the length of the
// longest proper prefix of pat[:i+1] that is also its suffix.
func borders(pat string) []int {
	border := make([]int, len(pat))
	k := 0
	for i := 1; i < len(pat); i++ {
		for k > 0 && pat[i] != pat[k] {
			k = border[k-1]
		}
		if pat[i] == pat[k] {
			k++
		}
		border[i] = k
	}
	return border
}

// nonOverlapping picks, left to right, the positions of at (ascending) that
// do not overlap an earlier pick, each match being width long: the
// occurrences strings.ReplaceAll would replace.
func nonOverlapping(at []int, width int) []int {
	picked := make([]int, 0, len(at))
	next := 0
	for _, p := range at {
		if p >= next {
			picked = append(picked, p)
			next = p + width
		}
	}
	return picked
}

// lineNumbers returns the 1-based line of each offset in at (ascending)
// within s, in one pass over s.
func lineNumbers(s string, at []int) []int {
	lines := make([]int, len(at))
	line, last := 1, 0
	for i, p := range at {
		line += strings.Count(s[last:p], "\n")
		last = p
		lines[i] = line
	}
	return lines
}
