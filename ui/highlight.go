package ui

import (
	"path"
	"strings"
	"unicode"
	"unicode/utf8"
)

// lang says how a family of languages writes comments, strings and
// keywords: enough to colour a line of a diff without parsing the file.
type lang struct {
	line       []string // line comment starts
	blockStart string   // block comment start ("" none)
	blockEnd   string
	quotes     string // string delimiters
	keywords   map[string]bool
}

func words(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

var (
	langGo = &lang{line: []string{"//"}, blockStart: "/*", blockEnd: "*/", quotes: "\"'`",
		keywords: words("break case chan const continue default defer else fallthrough for func go goto if import interface map package range return select struct switch type var nil true false iota")}
	langC = &lang{line: []string{"//"}, blockStart: "/*", blockEnd: "*/", quotes: "\"'`",
		keywords: words("auto break case char class const continue default delete do double else enum export extends extern false final float fn for function if impl implements import in int interface let long match mod mut namespace new null private protected pub public return self short signed sizeof static struct super switch this throw true try typedef typeof union unsigned use var void volatile while async await yield const readonly package boolean string number undefined")}
	langHash = &lang{line: []string{"#"}, quotes: "\"'",
		keywords: words("and as assert break case class def del do done elif else esac except export fi finally for from function global if import in is lambda local not or pass raise return then try while with yield True False None true false null nil end module require begin rescue unless until")}
	langDash = &lang{line: []string{"--"}, blockStart: "/*", blockEnd: "*/", quotes: "'\"",
		keywords: words("select from where insert into update delete create table drop alter join left right inner outer on group by order having limit and or not null as values set primary key index local function end then if else elseif return for while do in")}
	langMarkup = &lang{blockStart: "<!--", blockEnd: "-->", quotes: "\"'"}
	langPlain  = &lang{}
)

// langFor picks the language family of a file by its name.
func langFor(name string) *lang {
	base := path.Base(name)
	switch base {
	case "Makefile", "makefile", "GNUmakefile", "Dockerfile", "Containerfile", ".gitignore", ".bashrc", ".profile":
		return langHash
	}
	switch strings.ToLower(path.Ext(base)) {
	case ".go":
		return langGo
	case ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".java", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx",
		".rs", ".cs", ".kt", ".kts", ".swift", ".scala", ".php", ".dart", ".zig", ".css", ".scss", ".proto", ".json", ".jsonc":
		return langC
	case ".py", ".sh", ".bash", ".zsh", ".rb", ".pl", ".r", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf", ".mk", ".nix", ".ex", ".exs":
		return langHash
	case ".sql", ".lua", ".hs", ".elm", ".ada":
		return langDash
	case ".html", ".htm", ".xml", ".svg", ".md", ".markdown", ".vue":
		return langMarkup
	}
	return langPlain
}

type side int

const (
	sideLeft side = iota
	sideRight
)

// highlighter colours the lines of one file's diff, each side in order,
// carrying an open block comment from one line to the next.
type highlighter struct {
	l       *lang
	inBlock [2]bool
}

func newHighlighter(name string) *highlighter { return &highlighter{l: langFor(name)} }

// line splits one line into tokens with their classes. A nil highlighter
// (a diff line before any hunk) gives plain tokens.
func (h *highlighter) line(s string, sd side) []Seg {
	l := langPlain
	var inBlock *bool
	if h != nil {
		l = h.l
		inBlock = &h.inBlock[sd]
	} else {
		inBlock = new(bool)
	}
	var segs []Seg
	emit := func(class, text string) {
		if text != "" {
			segs = append(segs, Seg{Class: class, Text: text})
		}
	}
	i := 0
	for i < len(s) {
		if *inBlock {
			j := strings.Index(s[i:], l.blockEnd)
			if j < 0 {
				emit("c", s[i:])
				return segs
			}
			emit("c", s[i:i+j+len(l.blockEnd)])
			i += j + len(l.blockEnd)
			*inBlock = false
			continue
		}
		rest := s[i:]
		if l.blockStart != "" && strings.HasPrefix(rest, l.blockStart) {
			*inBlock = true
			emit("c", l.blockStart)
			i += len(l.blockStart)
			continue
		}
		if lineComment(l, rest) {
			emit("c", rest)
			return segs
		}
		c, size := utf8.DecodeRuneInString(rest)
		switch {
		case strings.ContainsRune(l.quotes, c) && c < utf8.RuneSelf:
			j := 1
			for j < len(rest) && rest[j] != byte(c) {
				if rest[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			j = min(j+1, len(rest))
			emit("s", rest[:j])
			i += j
		case unicode.IsSpace(c):
			j := size
			for j < len(rest) {
				r, n := utf8.DecodeRuneInString(rest[j:])
				if !unicode.IsSpace(r) {
					break
				}
				j += n
			}
			emit("", rest[:j])
			i += j
		case isWord(c):
			j := size
			for j < len(rest) {
				r, n := utf8.DecodeRuneInString(rest[j:])
				if !isWord(r) && r != '.' || (r == '.' && !unicode.IsDigit(c)) {
					break
				}
				j += n
			}
			w := rest[:j]
			switch {
			case unicode.IsDigit(c):
				emit("n", w)
			case l.keywords[w]:
				emit("k", w)
			default:
				emit("", w)
			}
			i += j
		default:
			emit("", rest[:size])
			i += size
		}
	}
	return segs
}

func lineComment(l *lang, s string) bool {
	for _, p := range l.line {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func isWord(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }
