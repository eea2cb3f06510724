package edit

import "strings"

// findAll returns, ascending, every byte offset at which pat occurs in s,
// overlapping occurrences included, in O(len(s)+len(pat)).
func findAll(s, pat string) []int {
	m := len(pat)
	if m == 0 || m > len(s) {
		return nil
	}
	border := borders(pat)
	var at []int
	if border[m-1] == 0 {
		// pat has no proper border, so two occurrences cannot overlap:
		// the fast non-overlapping search finds them all.
		for off := 0; ; {
			j := strings.Index(s[off:], pat)
			if j < 0 {
				return at
			}
			at = append(at, off+j)
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
			at = append(at, i-m+1)
			k = border[m-1]
		}
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
