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
