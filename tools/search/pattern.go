package search

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// matcher is a Grep pattern compiled for both engines. The pattern is parsed
// once, with Go's RE2 parser, rewritten so that it means the same to Go's
// regexp and to ripgrep's Rust regex (see the package documentation), and
// printed twice: once for each engine.
type matcher struct {
	re *regexp.Regexp // the rewritten pattern, for the native engine
	rg string         // the same pattern in Rust regex syntax, for rg
	// literal, when not nil, occurs in every match: the native engine
	// looks for it first and runs the regexp only on the lines holding it.
	literal []byte
	// exact is true when the pattern is literal itself: a line matches
	// exactly when it contains literal.
	exact bool
	// never is true when nothing can match: the pattern only matches line
	// breaks, or has an empty character class.
	never bool
}

// parseFlags are Perl's flags without OneLine, so that ^ and $ are line
// anchors, and without ClassNL (negated classes never match a line break;
// the rewrite removes it from every class anyway).
const parseFlags = syntax.PerlX | syntax.UnicodeGroups

// compileMatcher validates and compiles a Grep pattern. Every error is a
// *PatternError of kind KindInvalidRegex.
func compileMatcher(pattern string, fixed, caseInsensitive bool) (*matcher, error) {
	src := pattern
	if fixed {
		src = regexp.QuoteMeta(pattern)
	}
	flags := syntax.Flags(parseFlags)
	if caseInsensitive {
		flags |= syntax.FoldCase
	}
	tree, err := syntax.Parse(src, flags)
	if err != nil {
		return nil, &PatternError{Kind: KindInvalidRegex, Pattern: pattern, Msg: "not a valid RE2 regular expression", Err: err}
	}
	tree, err = lineSafe(tree)
	if err != nil {
		return nil, &PatternError{Kind: KindInvalidRegex, Pattern: pattern, Msg: err.Error()}
	}
	m := &matcher{}
	if tree.Op == syntax.OpNoMatch {
		m.never = true
		return m, nil
	}
	goSrc := emit(tree, dialectGo)
	m.re, err = regexp.Compile(goSrc)
	if err != nil {
		// The rewrite only produces what the parser accepted; failing here
		// is a bug, reported rather than hidden.
		return nil, &PatternError{Kind: KindInvalidRegex, Pattern: pattern, Msg: fmt.Sprintf("rewritten as %q, which does not compile", goSrc), Err: err}
	}
	m.rg = emit(tree, dialectRust)
	m.literal, m.exact = requiredLiteral(tree)
	return m, nil
}

// lineSafe rewrites a parsed pattern for line-by-line matching, as ripgrep
// does: line breaks leave every character class and "." (a pattern that
// needs one is refused), \A and \z become ^ and $ (each line is its own
// text), and parts that can never match are pruned. A pattern that can
// never match comes back as OpNoMatch.
func lineSafe(re *syntax.Regexp) (*syntax.Regexp, error) {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if r == '\n' {
				return nil, fmt.Errorf("the pattern matches a line break, but lines are searched one at a time; use ^ or $ to anchor at line ends")
			}
		}
	case syntax.OpCharClass:
		re.Rune = withoutNewline(re.Rune)
		if len(re.Rune) == 0 {
			return &syntax.Regexp{Op: syntax.OpNoMatch}, nil
		}
	case syntax.OpAnyChar:
		re.Op = syntax.OpAnyCharNotNL
	case syntax.OpBeginText:
		re.Op = syntax.OpBeginLine
	case syntax.OpEndText:
		re.Op = syntax.OpEndLine
	}
	for i, sub := range re.Sub {
		s, err := lineSafe(sub)
		if err != nil {
			return nil, err
		}
		re.Sub[i] = s
	}
	return pruneNoMatch(re), nil
}

// pruneNoMatch folds the never-matching parts out of re, given that its
// subexpressions are already pruned.
func pruneNoMatch(re *syntax.Regexp) *syntax.Regexp {
	noMatch := func(s *syntax.Regexp) bool { return s.Op == syntax.OpNoMatch }
	switch re.Op {
	case syntax.OpConcat, syntax.OpCapture, syntax.OpPlus:
		for _, s := range re.Sub {
			if noMatch(s) {
				return &syntax.Regexp{Op: syntax.OpNoMatch}
			}
		}
	case syntax.OpStar, syntax.OpQuest:
		if noMatch(re.Sub[0]) {
			return &syntax.Regexp{Op: syntax.OpEmptyMatch}
		}
	case syntax.OpRepeat:
		if noMatch(re.Sub[0]) {
			if re.Min == 0 {
				return &syntax.Regexp{Op: syntax.OpEmptyMatch}
			}
			return &syntax.Regexp{Op: syntax.OpNoMatch}
		}
	case syntax.OpAlternate:
		kept := re.Sub[:0]
		for _, s := range re.Sub {
			if !noMatch(s) {
				kept = append(kept, s)
			}
		}
		switch len(kept) {
		case 0:
			return &syntax.Regexp{Op: syntax.OpNoMatch}
		case 1:
			return kept[0]
		}
		re.Sub = kept
	}
	return re
}

// withoutNewline removes '\n' from a class given as sorted range pairs.
func withoutNewline(ranges []rune) []rune {
	out := make([]rune, 0, len(ranges)+2)
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		if lo <= '\n' && '\n' <= hi {
			if lo < '\n' {
				out = append(out, lo, '\n'-1)
			}
			if hi > '\n' {
				out = append(out, '\n'+1, hi)
			}
			continue
		}
		out = append(out, lo, hi)
	}
	return out
}

// dialect is the regex syntax emit writes.
type dialect int

const (
	dialectGo   dialect = iota // Go's regexp (RE2)
	dialectRust                // Rust's regex crate, as ripgrep 13 uses it
)

// emit prints re in a subset of syntax that Go and Rust read alike. Every
// rune outside [0-9A-Za-z_] is written as \x{...}; case-insensitive
// literals as explicit classes of their simple case-folding orbit (both
// engines fold with simple folding, but from different Unicode versions);
// classes as explicit ranges without surrogates (Rust refuses them); \b and
// \B as ASCII assertions, which Go's are and Rust's are not by default; $
// as \r?$, so that it matches before CRLF line ends too.
func emit(re *syntax.Regexp, d dialect) string {
	var b strings.Builder
	emitTo(&b, re, d)
	return b.String()
}

func emitTo(b *strings.Builder, re *syntax.Regexp, d dialect) {
	switch re.Op {
	case syntax.OpNoMatch:
		// Pruned away by lineSafe unless it is the whole pattern, which
		// never reaches emit; written as a class of nothing for Go.
		b.WriteString(`[^\x{0}-\x{10FFFF}]`)
	case syntax.OpEmptyMatch:
		b.WriteString(`(?:)`)
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 {
				if orbit := foldOrbit(r); len(orbit) > 1 {
					emitClass(b, orbit)
					continue
				}
			}
			emitRune(b, r)
		}
	case syntax.OpCharClass:
		emitClass(b, re.Rune)
	case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		b.WriteString(`(?-s:.)`)
	case syntax.OpBeginLine, syntax.OpBeginText:
		b.WriteString(`(?m:^)`)
	case syntax.OpEndLine, syntax.OpEndText:
		b.WriteString(`(?:\x{D}?(?m:$))`)
	case syntax.OpWordBoundary:
		if d == dialectRust {
			b.WriteString(`(?-u:\b)`)
		} else {
			b.WriteString(`\b`)
		}
	case syntax.OpNoWordBoundary:
		if d == dialectRust {
			b.WriteString(`(?-u:\B)`)
		} else {
			b.WriteString(`\B`)
		}
	case syntax.OpCapture:
		b.WriteString(`(?:`)
		emitTo(b, re.Sub[0], d)
		b.WriteString(`)`)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		b.WriteString(`(?:`)
		emitTo(b, re.Sub[0], d)
		b.WriteString(`)`)
		switch re.Op {
		case syntax.OpStar:
			b.WriteByte('*')
		case syntax.OpPlus:
			b.WriteByte('+')
		case syntax.OpQuest:
			b.WriteByte('?')
		default:
			b.WriteByte('{')
			b.WriteString(strconv.Itoa(re.Min))
			switch {
			case re.Max < 0:
				b.WriteByte(',')
			case re.Max != re.Min:
				b.WriteByte(',')
				b.WriteString(strconv.Itoa(re.Max))
			}
			b.WriteByte('}')
		}
		if re.Flags&syntax.NonGreedy != 0 {
			b.WriteByte('?')
		}
	case syntax.OpConcat:
		for _, s := range re.Sub {
			emitTo(b, s, d)
		}
	case syntax.OpAlternate:
		b.WriteString(`(?:`)
		for i, s := range re.Sub {
			if i > 0 {
				b.WriteByte('|')
			}
			emitTo(b, s, d)
		}
		b.WriteString(`)`)
	}
}

// emitRune writes one rune outside a class.
func emitRune(b *strings.Builder, r rune) {
	if isPlain(r) {
		b.WriteRune(r)
		return
	}
	fmt.Fprintf(b, `\x{%X}`, r)
}

// emitClass writes a class given as sorted range pairs, surrogates left out.
func emitClass(b *strings.Builder, ranges []rune) {
	b.WriteByte('[')
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		if lo < 0xD800 && hi > 0xDFFF {
			emitRange(b, lo, 0xD7FF)
			emitRange(b, 0xE000, hi)
			continue
		}
		if lo >= 0xD800 && lo <= 0xDFFF {
			lo = 0xE000
		}
		if hi >= 0xD800 && hi <= 0xDFFF {
			hi = 0xD7FF
		}
		if lo <= hi {
			emitRange(b, lo, hi)
		}
	}
	b.WriteByte(']')
}

func emitRange(b *strings.Builder, lo, hi rune) {
	emitRune(b, lo)
	if hi != lo {
		b.WriteByte('-')
		emitRune(b, hi)
	}
}

// isPlain reports whether r is written as itself: ASCII letters, digits
// and '_' mean themselves everywhere in both syntaxes.
func isPlain(r rune) bool {
	return r < utf8.RuneSelf && (r == '_' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z')
}

// foldOrbit returns r and every rune simple case folding equates with it,
// as sorted range pairs.
func foldOrbit(r rune) []rune {
	runes := []rune{r}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		runes = append(runes, f)
	}
	if len(runes) == 1 {
		return nil
	}
	// Orbits are tiny: sort by insertion.
	for i := 1; i < len(runes); i++ {
		for j := i; j > 0 && runes[j] < runes[j-1]; j-- {
			runes[j], runes[j-1] = runes[j-1], runes[j]
		}
	}
	out := make([]rune, 0, 2*len(runes))
	for _, r := range runes {
		if n := len(out); n > 0 && out[n-1]+1 == r {
			out[n-1] = r
			continue
		}
		out = append(out, r, r)
	}
	return out
}

// requiredLiteral finds a case-sensitive literal every match contains:
// the whole pattern (exact) or the longest literal of a top-level
// concatenation.
func requiredLiteral(re *syntax.Regexp) (lit []byte, exact bool) {
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	literal := func(re *syntax.Regexp) []byte {
		if re.Op != syntax.OpLiteral || re.Flags&syntax.FoldCase != 0 {
			return nil
		}
		return []byte(string(re.Rune))
	}
	switch re.Op {
	case syntax.OpLiteral:
		if l := literal(re); l != nil {
			return l, true
		}
	case syntax.OpConcat:
		var best []byte
		for _, s := range re.Sub {
			for s.Op == syntax.OpCapture {
				s = s.Sub[0]
			}
			if l := literal(s); len(l) > len(best) {
				best = l
			}
		}
		return best, false
	}
	return nil, false
}
