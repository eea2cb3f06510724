package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
)

// TestLogShowsUTF8: a log's summaries and paths keep their UTF-8 (git's
// octal escapes are for patches); control characters are still escaped.
func TestLogShowsUTF8(t *testing.T) {
	l := &api.Log{Entries: []api.LogEntry{{Kind: api.LogCall, Call: 1, Tool: "list_directory", Source: "http",
		Status: "ok", Summary: "[DIR] api/ …", Paths: []string{"café/日本.txt", "evil\x1b[2Jname"}, Time: time.Now()}}}
	var b strings.Builder
	printLog(&b, l)
	out := b.String()
	require.Contains(t, out, "[DIR] api/ …")
	require.Contains(t, out, "café/日本.txt")
	require.NotContains(t, out, `\342`)
	require.Contains(t, out, `"evil\033[2Jname"`)
	require.NotContains(t, out, "\x1b")
}

func TestUntilText(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second:                  "expired",
		30 * time.Second:              "in under a minute",
		35 * time.Minute:              "in 35 min",
		23*time.Hour + 59*time.Minute: "in 24 h",
		72 * time.Hour:                "in 3 days",
	} {
		require.Equal(t, want, untilText(d), "%v", d)
	}
}
