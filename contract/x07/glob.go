package x07

import (
	"fmt"
	"regexp"
	"strings"
)

// compileGlob turns walk_glob_sorted_text_v1's glob into a matcher of
// relative '/'-separated paths. The document names no glob syntax; this is
// the X07 runner's (Rust globset with its defaults): '*' and '?' also match
// '/', "**/" matches zero or more directories, "/**" at the end matches
// everything beneath, "[...]" and "[!...]" are classes, "{a,b}" are
// alternatives and '\' escapes the next character. The whole path must
// match.
func compileGlob(glob string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString(`^(?s:`)
	inAlt := false
	for i := 0; i < len(glob); i++ {
		c := glob[i]
		switch c {
		case '*':
			switch {
			case strings.HasPrefix(glob[i:], "**/") && (i == 0 || glob[i-1] == '/'):
				b.WriteString(`(?:.*/)?`)
				i += 2
			case glob[i:] == "**" && i > 0 && glob[i-1] == '/':
				b.WriteString(`.*`)
				i++
			default:
				for i+1 < len(glob) && glob[i+1] == '*' {
					i++
				}
				b.WriteString(`.*`)
			}
		case '?':
			b.WriteString(`.`)
		case '[':
			end, class, err := globClass(glob, i)
			if err != nil {
				return nil, err
			}
			b.WriteString(class)
			i = end
		case '{':
			if inAlt {
				return nil, fmt.Errorf("glob %q nests '{' alternatives; use one level", glob)
			}
			inAlt = true
			b.WriteString(`(?:`)
		case '}':
			if !inAlt {
				return nil, fmt.Errorf("glob %q has '}' without '{'", glob)
			}
			inAlt = false
			b.WriteString(`)`)
		case ',':
			if inAlt {
				b.WriteString(`|`)
			} else {
				b.WriteString(`,`)
			}
		case '\\':
			if i+1 == len(glob) {
				return nil, fmt.Errorf("glob %q ends with a dangling '\\'", glob)
			}
			i++
			b.WriteString(regexp.QuoteMeta(glob[i : i+1]))
		default:
			b.WriteString(regexp.QuoteMeta(glob[i : i+1]))
		}
	}
	if inAlt {
		return nil, fmt.Errorf("glob %q has '{' without '}'", glob)
	}
	b.WriteString(`)$`)
	return regexp.Compile(b.String())
}

// globClass translates the class starting at glob[start] ('['), returning
// the index of its closing ']'.
func globClass(glob string, start int) (int, string, error) {
	i := start + 1
	var b strings.Builder
	b.WriteByte('[')
	if i < len(glob) && (glob[i] == '!' || glob[i] == '^') {
		b.WriteByte('^')
		i++
	}
	first := true
	for ; i < len(glob); i++ {
		c := glob[i]
		if c == ']' && !first {
			b.WriteByte(']')
			return i, b.String(), nil
		}
		first = false
		switch c {
		case '\\', '[', ']', '^':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return 0, "", fmt.Errorf("glob %q has '[' without a closing ']'", glob)
}
