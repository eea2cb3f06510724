package textdiff

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestShowText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"api/ …", "api/ …"},
		{"[DIR] api/ \u2026", "[DIR] api/ …"},
		{"café/日本.txt", "café/日本.txt"},
		{"plain.txt", "plain.txt"},
		{"a\nb", `"a\nb"`},
		{"esc\x1b[31mred", `"esc\033[31mred"`},
		{`quote"d`, `"quote\"d"`},
		{"bad\xffutf8", `"bad\377utf8"`},
		{"é and \x07", `"é and \a"`},
		{"rtl\u202egnp.exe", `"rtl\342\200\256gnp.exe"`},
		{"zero\u200bwidth", `"zero\342\200\213width"`},
		{"c1\u0085", `"c1\302\205"`},
	} {
		require.Equal(t, tc.want, ShowText(tc.in), "%q", tc.in)
	}
}
