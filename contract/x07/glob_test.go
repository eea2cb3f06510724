package x07

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestGlob(t *testing.T) {
	cases := []struct {
		glob string
		in   []string
		out  []string
	}{
		{"*.txt", []string{"a.txt", "d/a.txt", "d/e/a.txt"}, []string{"a.md", "a.txt.bak"}},
		{"**/*.txt", []string{"a.txt", "d/a.txt", "d/e/a.txt"}, []string{"a.md"}},
		{"d/**", []string{"d/a", "d/e/f"}, []string{"d", "x/d/a"}},
		{"?.go", []string{"a.go"}, []string{"ab.go"}},
		{"[ab].go", []string{"a.go", "b.go"}, []string{"c.go"}},
		{"[!ab].go", []string{"c.go"}, []string{"a.go"}},
		{"*.{go,md}", []string{"x.go", "y.md"}, []string{"z.txt"}},
		{`a\*b`, []string{"a*b"}, []string{"axb"}},
		{"a+b(c)", []string{"a+b(c)"}, []string{"aab(c)"}},
		{"", []string{""}, []string{"a"}},
	}
	for _, c := range cases {
		re, err := compileGlob(c.glob)
		require.NoError(t, err, c.glob)
		for _, p := range c.in {
			require.True(t, re.MatchString(p), "%q should match %q", c.glob, p)
		}
		for _, p := range c.out {
			require.False(t, re.MatchString(p), "%q should not match %q", c.glob, p)
		}
	}
	for _, bad := range []string{"[ab", "{a,b", "a}", `a\`, "{a,{b}}"} {
		_, err := compileGlob(bad)
		require.Error(t, err, bad)
	}
}

func FuzzGlob(f *testing.F) {
	for _, s := range []string{"*.txt", "**/x", "[!a]{b,c}", `\[`} {
		f.Add(s, "a/b.txt")
	}
	f.Fuzz(func(t *testing.T, glob, p string) {
		re, err := compileGlob(glob)
		if err == nil {
			re.MatchString(p) // never panics
		}
	})
}
