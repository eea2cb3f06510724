package weborigin

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNormalize(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://Example.COM", "http://example.com"},
		{" https://a.b:8080/ ", "https://a.b:8080"},
		{"http://[::1]:7", "http://[::1]:7"},
		{"ftp://a", ""},
		{"http://", ""},
		{"http://u@a", ""},
		{"http://a/path", ""},
		{"http://a?q", ""},
		{"http://a#f", ""},
		{"a.b", ""},
	} {
		got, err := Normalize(tc.in)
		if tc.want == "" {
			require.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got)
	}
}
