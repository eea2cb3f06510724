package search

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCompileMatcher(t *testing.T) {
	tests := []struct {
		pattern      string
		fixed, icase bool
		goRE, rust   string
		literal      string
		exact, never bool
	}{
		{pattern: "foo", goRE: "foo", rust: "foo", literal: "foo", exact: true},
		{pattern: "a.b(c)", fixed: true, goRE: `a\x{2E}b\x{28}c\x{29}`, rust: `a\x{2E}b\x{28}c\x{29}`, literal: "a.b(c)", exact: true},
		{pattern: `func \w+Handler`, goRE: `func\x{20}(?:[0-9A-Z_a-z])+Handler`, rust: `func\x{20}(?:[0-9A-Z_a-z])+Handler`, literal: "Handler"},
		{pattern: `\bx\B`, goRE: `\bx\B`, rust: `(?-u:\b)x(?-u:\B)`, literal: "x"},
		{pattern: `^a$`, goRE: `(?m:^)a(?:\x{D}?(?m:$))`, rust: `(?m:^)a(?:\x{D}?(?m:$))`, literal: "a"},
		{pattern: `\Aa\z`, goRE: `(?m:^)a(?:\x{D}?(?m:$))`, rust: `(?m:^)a(?:\x{D}?(?m:$))`, literal: "a"},
		{pattern: "k", icase: true, goRE: `[Kk\x{212A}]`, rust: `[Kk\x{212A}]`},
		{pattern: `(?s).`, goRE: `(?-s:.)`, rust: `(?-s:.)`},
		{pattern: `[^a]`, goRE: `[\x{0}-\x{9}\x{B}-\x{60}b-\x{D7FF}\x{E000}-\x{10FFFF}]`, rust: `[\x{0}-\x{9}\x{B}-\x{60}b-\x{D7FF}\x{E000}-\x{10FFFF}]`},
		{pattern: `\s`, goRE: `[\x{9}\x{C}-\x{D}\x{20}]`, rust: `[\x{9}\x{C}-\x{D}\x{20}]`},
		{pattern: `a{2,3}?|b*`, goRE: `(?:(?:a){2,3}?|(?:b)*)`, rust: `(?:(?:a){2,3}?|(?:b)*)`},
		{pattern: `[^\x00-\x{10FFFF}]x`, never: true},
		{pattern: `([^\x00-\x{10FFFF}])*x`, goRE: `(?:)x`, rust: `(?:)x`, literal: "x"},
	}
	for _, tt := range tests {
		m, err := compileMatcher(tt.pattern, tt.fixed, tt.icase)
		require.NoError(t, err, tt.pattern)
		require.Equal(t, tt.never, m.never, tt.pattern)
		if tt.never {
			continue
		}
		require.Equal(t, tt.goRE, m.re.String(), tt.pattern)
		require.Equal(t, tt.rust, m.rg, tt.pattern)
		require.Equal(t, tt.literal, string(m.literal), tt.pattern)
		require.Equal(t, tt.exact, m.exact, tt.pattern)
	}
}

func TestFoldOrbit(t *testing.T) {
	require.Equal(t, []rune{'K', 'K', 'k', 'k', 0x212A, 0x212A}, foldOrbit('k'))
	require.Equal(t, []rune{'S', 'S', 's', 's', 0x17F, 0x17F}, foldOrbit('s'))
	require.Equal(t, []rune{0x3A3, 0x3A3, 0x3C2, 0x3C3}, foldOrbit('σ'))
	require.Nil(t, foldOrbit('1'))
}

func TestCleanLine(t *testing.T) {
	require.Equal(t, "abc", cleanLine([]byte("abc\r"), 10))
	require.Equal(t, "abc\r", cleanLine([]byte("abc\r\r"), 10))
	require.Equal(t, "ab", cleanLine([]byte("abcdef"), 2))
	require.Equal(t, "a", cleanLine([]byte("aéb"), 2))
	require.Equal(t, "aé", cleanLine([]byte("aéb"), 3))
	require.Equal(t, "\xff\xff", cleanLine([]byte("\xff\xff\xff"), 2))
	require.Equal(t, "", cleanLine([]byte("🙂"), 3))
}
