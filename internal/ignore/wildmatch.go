package ignore

import "strings"

// This file is a port of git's wildmatch.c (the matcher behind .gitignore),
// kept line for line close to the original so that every quirk carries over:
// which "**" are special, how brackets, ranges, classes and backslashes parse,
// and the abort codes that keep "*" from backtracking exponentially. Case
// folding (core.ignorecase) is left out: vfsd matches case-sensitively, as git
// does by default on Linux.

// Results of dowild, as in wildmatch.h.
const (
	wmMatch           = 0
	wmNoMatch         = 1
	wmAbortAll        = -1
	wmAbortToStarStar = -2
)

// Character kinds of git's locale-independent ctype table (ctype.c). Bytes
// from 0x80 up belong to no kind.
const (
	ctSpace = 1 << iota
	ctDigit
	ctAlpha
	ctGlob
	ctRegex
	ctMagic
	ctCntrl
	ctPunct
)

var ctype = func() (t [256]uint8) {
	const (
		s = ctSpace
		a = ctAlpha
		d = ctDigit
		g = ctGlob
		r = ctRegex
		p = ctMagic
		x = ctCntrl
		u = ctPunct
		z = ctCntrl | ctSpace
	)
	copy(t[:], []uint8{
		x, x, x, x, x, x, x, x, x, z, z, x, x, z, x, x, //   0.. 15
		x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, //  16.. 31
		s, p, p, p, r, p, p, p, r, r, g, r, p, p, r, p, //  32.. 47
		d, d, d, d, d, d, d, d, d, d, p, p, p, p, p, g, //  48.. 63
		p, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, //  64.. 79
		a, a, a, a, a, a, a, a, a, a, a, g, g, u, r, p, //  80.. 95
		p, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, //  96..111
		a, a, a, a, a, a, a, a, a, a, a, r, r, u, p, x, // 112..127
	})
	return t
}()

// isGlobSpecial reports whether c is one of the bytes git treats as a
// wildcard: * ? [ and backslash.
func isGlobSpecial(c byte) bool { return ctype[c]&ctGlob != 0 }

// inClass reports whether c belongs to the POSIX class named name, by git's
// definitions; ok is false for an unknown class name.
func inClass(name string, c byte) (in, ok bool) {
	k := ctype[c]
	switch name {
	case "alnum":
		return k&(ctAlpha|ctDigit) != 0, true
	case "alpha":
		return k&ctAlpha != 0, true
	case "blank":
		return c == ' ' || c == '\t', true
	case "cntrl":
		return k&ctCntrl != 0, true
	case "digit":
		return k&ctDigit != 0, true
	case "graph":
		return c > ' ' && c < 0x7f, true
	case "lower":
		return c >= 'a' && c <= 'z', true
	case "print":
		return c >= ' ' && c < 0x7f, true
	case "punct":
		return k&(ctPunct|ctRegex|ctGlob|ctMagic) != 0, true
	case "space":
		return k&ctSpace != 0, true
	case "upper":
		return c >= 'A' && c <= 'Z', true
	case "xdigit":
		return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F', true
	}
	return false, false
}

// at returns s[i], or 0 past the end: the C code reads its strings up to the
// terminating NUL.
func at(s string, i int) byte {
	if i < len(s) {
		return s[i]
	}
	return 0
}

// wildmatch reports whether pattern p matches text, as git's wildmatch does.
// pathname is WM_PATHNAME: wildcards other than "**" do not match '/'. memo
// makes the match remember its recursive calls, which bounds its time by a
// polynomial: git's matcher takes time exponential in the number of "**/"
// in a pattern (it retries the rest of the text after every one that could
// match no directory), and an ignore file with a dozen of them would hang a
// walk. The answers are the same either way.
func wildmatch(p, text string, pathname, memo bool) bool {
	w := wild{p: p, t: text, pathname: pathname}
	if memo {
		w.memo = map[int]int8{}
	}
	return w.dowild(0, 0) == wmMatch
}

// wild is one wildmatch call. Every recursive call of git's matcher gets a
// suffix of the pattern and a suffix of the text, so here it gets their
// offsets.
type wild struct {
	p, t     string
	pathname bool
	memo     map[int]int8 // results by start*(len(t)+1)+ti, if memoizing
}

// dowild matches p[start:] against t[ti:], remembering the result if w
// memoizes.
func (w *wild) dowild(start, ti int) int {
	if w.memo == nil {
		return w.match(start, ti)
	}
	k := start*(len(w.t)+1) + ti
	if r, ok := w.memo[k]; ok {
		return int(r)
	}
	r := w.match(start, ti)
	w.memo[k] = int8(r)
	return r
}

// match is git's dowild on p[start:] and t[ti:]. The start counts as the
// start of a pattern for the "**/" rule, exactly as in git.
func (w *wild) match(start, ti int) int {
	p, text, pathname := w.p, w.t, w.pathname
	pi := start
	for ; pi < len(p); pi, ti = pi+1, ti+1 {
		pch := p[pi]
		tch := at(text, ti)
		if tch == 0 && pch != '*' {
			return wmAbortAll
		}
		switch pch {
		case '\\':
			// Literal match with the next byte; a trailing backslash
			// matches nothing.
			pi++
			if tch != at(p, pi) {
				return wmNoMatch
			}
		default:
			if tch != pch {
				return wmNoMatch
			}
		case '?':
			if pathname && tch == '/' {
				return wmNoMatch
			}
		case '*':
			var matchSlash bool
			pi++
			if at(p, pi) == '*' {
				prev := pi - 2
				for pi++; at(p, pi) == '*'; pi++ {
				}
				switch {
				case !pathname:
					matchSlash = true
				case (prev < start || p[prev] == '/') &&
					(pi == len(p) || p[pi] == '/' || (p[pi] == '\\' && at(p, pi+1) == '/')):
					// "**/" may match no directory at all: try the rest
					// of the pattern right here first.
					if at(p, pi) == '/' && w.dowild(pi+1, ti) == wmMatch {
						return wmMatch
					}
					matchSlash = true
				default:
					matchSlash = false
				}
			} else {
				matchSlash = !pathname
			}
			if pi == len(p) {
				// A trailing "**" matches everything, a trailing "*"
				// only what has no more slashes.
				if !matchSlash && strings.IndexByte(text[ti:], '/') >= 0 {
					return wmNoMatch
				}
				return wmMatch
			} else if !matchSlash && p[pi] == '/' {
				// One star followed by a slash matches the rest of
				// this path component.
				slash := strings.IndexByte(text[ti:], '/')
				if slash < 0 {
					return wmNoMatch
				}
				ti += slash // the slash itself is matched by the loop
				continue
			}
			for {
				if tch == 0 {
					break
				}
				// Skip ahead to the next occurrence of a literal
				// that follows the star.
				if c := p[pi]; !isGlobSpecial(c) {
					for {
						tch = at(text, ti)
						if tch == 0 || (!matchSlash && tch == '/') || tch == c {
							break
						}
						ti++
					}
					if tch != c {
						return wmNoMatch
					}
				}
				if m := w.dowild(pi, ti); m != wmNoMatch {
					if !matchSlash || m != wmAbortToStarStar {
						return m
					}
				} else if !matchSlash && tch == '/' {
					return wmAbortToStarStar
				}
				ti++
				tch = at(text, ti)
			}
			return wmAbortAll
		case '[':
			pi++
			pch = at(p, pi)
			if pch == '^' {
				pch = '!'
			}
			negated := pch == '!'
			if negated {
				pi++
				pch = at(p, pi)
			}
			var prev byte
			matched := false
			for {
				switch {
				case pch == 0:
					return wmAbortAll
				case pch == '\\':
					pi++
					pch = at(p, pi)
					if pch == 0 {
						return wmAbortAll
					}
					if tch == pch {
						matched = true
					}
				case pch == '-' && prev != 0 && at(p, pi+1) != 0 && at(p, pi+1) != ']':
					pi++
					pch = p[pi]
					if pch == '\\' {
						pi++
						pch = at(p, pi)
						if pch == 0 {
							return wmAbortAll
						}
					}
					if tch <= pch && tch >= prev {
						matched = true
					}
					pch = 0 // a range cannot start a range
				case pch == '[' && at(p, pi+1) == ':':
					pi += 2
					s := pi
					for pch = at(p, pi); pch != 0 && pch != ']'; pch = at(p, pi) {
						pi++
					}
					if pch == 0 {
						return wmAbortAll
					}
					n := pi - s - 1
					if n < 0 || p[pi-1] != ':' {
						// No ":]": the '[' is an ordinary member.
						pi = s - 2
						pch = '['
						if tch == pch {
							matched = true
						}
						break
					}
					in, ok := inClass(p[s:s+n], tch)
					if !ok {
						return wmAbortAll // malformed [:class:]
					}
					if in {
						matched = true
					}
					pch = 0
				default:
					if tch == pch {
						matched = true
					}
				}
				prev = pch
				pi++
				pch = at(p, pi)
				if pch == ']' {
					break
				}
			}
			if matched == negated || (pathname && tch == '/') {
				return wmNoMatch
			}
		}
	}
	if ti < len(text) {
		return wmNoMatch
	}
	return wmMatch
}
