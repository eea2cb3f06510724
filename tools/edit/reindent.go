package edit

import "strings"

// maxSpacesPerTab bounds the tab width the tabs-for-spaces rule infers.
const maxSpacesPerTab = 8

// reindent rewrites the leading white space of every non-empty line of s
// so that old_string's anchor indentation from becomes the file's to, by
// the rule in the package documentation.
func reindent(s, from, to string) string {
	if from == to {
		return s
	}
	shift := indentShift(from, to)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l == "" {
			continue
		}
		ws := leading(l)
		lines[i] = shift(ws) + l[len(ws):]
	}
	return strings.Join(lines, "\n")
}

// indentShift returns the function mapping a line's leading white space
// from old_string's indentation convention to the file's.
func indentShift(from, to string) func(string) string {
	if unitFrom, unitTo, ok := tabUnits(from, to); ok {
		return func(ws string) string {
			n := 0
			for strings.HasPrefix(ws[n*len(unitFrom):], unitFrom) {
				n++
			}
			return strings.Repeat(unitTo, n) + ws[n*len(unitFrom):]
		}
	}
	fromRunes, toRunes := []rune(from), []rune(to)
	d := len(toRunes) - len(fromRunes)
	pad := ""
	if d > 0 {
		switch {
		case strings.HasPrefix(to, from):
			pad = to[len(from):]
		case strings.HasSuffix(to, from):
			pad = to[:len(to)-len(from)]
		default:
			pad = string(toRunes[:d])
		}
	}
	return func(ws string) string {
		switch {
		case strings.HasPrefix(ws, from):
			return to + ws[len(from):]
		case d > 0:
			return pad + ws
		case d < 0:
			r := []rune(ws)
			return string(r[min(-d, len(r)):])
		}
		return ws
	}
}

// tabUnits reports whether one of from and to is k tabs and the other k×n
// spaces (1 ≤ n ≤ maxSpacesPerTab), and if so the unit of indentation of
// each: "\t" or n spaces.
func tabUnits(from, to string) (unitFrom, unitTo string, ok bool) {
	unit := func(tabs, spaces string) (string, bool) {
		if !only(tabs, '\t') || !only(spaces, ' ') || len(spaces)%len(tabs) != 0 {
			return "", false
		}
		n := len(spaces) / len(tabs)
		return strings.Repeat(" ", n), n <= maxSpacesPerTab
	}
	if u, ok := unit(from, to); ok {
		return "\t", u, true
	}
	if u, ok := unit(to, from); ok {
		return u, "\t", true
	}
	return "", "", false
}

// only reports whether s is non-empty and made of c alone.
func only(s string, c byte) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] != c {
			return false
		}
	}
	return true
}

// Reindent rewrites the leading white space of every non-empty line of s
// so that the indentation from (old_string's) becomes to (the file's), by
// the rule in the package documentation: what edit_file does to
// new_string after a whitespace-insensitive match.
func Reindent(s, from, to string) string { return reindent(s, from, to) }
