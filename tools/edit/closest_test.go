package edit

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSimilarity(t *testing.T) {
	sim := func(a, b string) float64 {
		x, y := newSignature(a), newSignature(b)
		return x.similarity(&y)
	}
	require.Equal(t, 1.0, sim("  return x  ", "return x"))
	require.Equal(t, 1.0, sim("s := “a”", `s := "a"`))
	require.Equal(t, 1.0, sim("", "   "))
	require.Equal(t, 0.0, sim("", "x"))
	require.Less(t, sim("ab ab", "ab"), sim("ab ab", "ab ab"))
	// Repeated bytes count: 5000 is closer to 5000x than 500 is.
	require.Greater(t, sim("handler5000(w)", "handler5000x(w)"), sim("handler500(w)", "handler5000x(w)"))
	for _, pair := range [][2]string{{"abc", "abd"}, {"x", "y"}, {strings.Repeat("long line ", 100), strings.Repeat("long lime ", 100)}} {
		s := sim(pair[0], pair[1])
		require.True(t, s >= 0 && s < 1, "%q %q: %v", pair[0], pair[1], s)
		require.Equal(t, s, sim(pair[1], pair[0]), "symmetric")
	}
}

// TestClosestSampled exercises the comparison budget: 5,000 lines against
// a 1,000-line old_string rank windows on a sample of its lines, and still
// find the place, with the similarity computed on every line.
func TestClosestSampled(t *testing.T) {
	content := goFile(5_000)
	lines := strings.SplitAfter(content, "\n")
	old := strings.Join(lines[2000:3000], "")
	old = strings.Replace(old, "handler2500", "handler2500x", 1)
	require.Greater(t, (5_000+1_000-1)*1_000, maxComparisons)
	_, err := Apply(content, one(old, "x"))
	var nf *NotFoundError
	require.ErrorAs(t, err, &nf)
	require.Equal(t, 2001, nf.Closest.StartLine)
	require.Equal(t, 3000, nf.Closest.EndLine)
	require.Greater(t, nf.Closest.Similarity, 0.99)
	require.Less(t, nf.Closest.Similarity, 1.0)
}

func TestClosestNoLines(t *testing.T) {
	require.Nil(t, closest(nil, []string{"x"}))
	require.Nil(t, closest([]string{"x"}, nil))
}
