package edit

import (
	"strings"

	"github.com/vfsd/vfsd/internal/textmatch"
)

// matchLines locates old (LF, non-empty) by whole lines of t.norm under
// textmatch's passes and returns the spans to replace. found is false when
// no pass matches (or old's lines are all blank); err is an AmbiguousError
// when several places match and replaceAll is false.
func matchLines(t *text, ix lineIndex, old, repl string, e Edit, index int) (spans []span, applied Applied, found bool, err error) {
	pattern := patternLines(old)
	anchor := -1
	for j, l := range pattern {
		if !isBlank(l) {
			anchor = j
			break
		}
	}
	if anchor < 0 {
		return nil, Applied{}, false, nil
	}
	at, pass := textmatch.All(ix.lines, pattern)
	if len(at) == 0 {
		return nil, Applied{}, false, nil
	}
	if len(at) > 1 && !e.ReplaceAll {
		lines := make([]int, min(len(at), maxCandidates))
		for i := range lines {
			lines[i] = at[i] + 1
		}
		return nil, Applied{}, true, &AmbiguousError{Index: index, Lines: lines, Pass: pass.String(), More: len(at) - len(lines)}
	}
	k := len(pattern)
	picked := nonOverlapping(at, k)
	// One trailing newline of old marks that it ends at a line end; the
	// matched lines keep their own line break, so one trailing newline of
	// new goes with it.
	if strings.HasSuffix(old, "\n") {
		repl = strings.TrimSuffix(repl, "\n")
	}
	reindents := pass == textmatch.Trim || pass == textmatch.Punct
	from := leading(pattern[anchor])
	deleting := e.New == ""
	applied = Applied{Pass: pass.String(), Lines: make([]int, len(picked)), Count: len(picked)}
	spans = make([]span, len(picked))
	for n, i := range picked {
		last := i + k - 1
		s := span{start: ix.starts[i], end: ix.starts[last] + len(ix.lines[last])}
		if !deleting {
			s.text = repl
			if reindents {
				s.text = reindent(repl, from, leading(ix.lines[i+anchor]))
			}
		}
		spans[n] = s
		applied.Lines[n] = i + 1
	}
	if deleting {
		deleteWholeLines(t.norm, spans)
	}
	return spans, applied, true, nil
}
