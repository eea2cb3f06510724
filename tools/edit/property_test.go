package edit

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// occurrences counts where pat occurs in s, overlapping ones included, the
// slow obvious way.
func occurrences(s, pat string) int {
	n := 0
	for i := 0; i+len(pat) <= len(s); i++ {
		if s[i:i+len(pat)] == pat {
			n++
		}
	}
	return n
}

// TestRoundTrip: for random content in one line-ending style and a random
// substring occurring exactly once (whole line breaks only: a "\r\n" is
// never split), replacing it by a fresh X and then X by it gives the
// content back byte for byte, and the first edit equals a plain splice.
func TestRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nl := "\n"
		if rapid.Bool().Draw(t, "crlf") {
			nl = "\r\n"
		}
		alphabet := []string{"a", "b", "c", "d", " ", "\t", "é", "日", "$", "\\", ".", "*", "“", nl, nl}
		tokens := rapid.SliceOfN(rapid.SampledFrom(alphabet), 1, 80).Draw(t, "tokens")
		content := strings.Join(tokens, "")
		a := rapid.IntRange(0, len(tokens)-1).Draw(t, "start")
		// The shortest substring from a that occurs once, then longer.
		b := -1
		for e := a + 1; e <= len(tokens); e++ {
			if occurrences(toLF(content), toLF(strings.Join(tokens[a:e], ""))) == 1 {
				b = e
				break
			}
		}
		if b < 0 {
			t.Skip("no unique substring starts here")
		}
		b = rapid.IntRange(b, len(tokens)).Draw(t, "end")
		old := strings.Join(tokens[a:b], "")
		x := "◆" + rapid.StringMatching(`[a-z\n]{0,8}`).Draw(t, "x")

		r, err := Apply(content, one(old, x))
		require.NoError(t, err)
		require.Equal(t, []Applied{{Pass: "exact", Lines: []int{1 + strings.Count(strings.Join(tokens[:a], ""), "\n")}, Count: 1}}, r.Edits)
		crlf := nl == "\r\n" && strings.Contains(content, nl) // a file without breaks is LF
		styledX := x
		if crlf {
			styledX = strings.ReplaceAll(x, "\n", "\r\n")
		}
		mid := strings.Join(tokens[:a], "") + styledX + strings.Join(tokens[b:], "")
		require.Equal(t, mid, r.Content)
		if crlf && !strings.Contains(mid, "\r\n") {
			// No line break left to tell the style by: the way back writes
			// LF, as documented.
			t.Skip("the style is lost with the last line break")
		}

		back, err := Apply(r.Content, one(x, old))
		require.NoError(t, err)
		require.Equal(t, content, back.Content)
		require.Equal(t, "exact", back.Edits[0].Pass)
	})
}
