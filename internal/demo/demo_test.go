package demo

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDemo runs the whole tour (without FUSE: the mount has its own tests)
// and checks each step reported what it should.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, Run(context.Background(), Options{Dir: t.TempDir(), NoMount: true}, &out))
	for _, want := range []string{
		"imported 5 files",
		"Updated greet.go (1 replacement)",
		"old_string was not found in greet.go",
		"Applied patch: 2 files changed",
		"Renamed main.go to cmd/greeter/main.go",
		"0 added, 1 modified, 0 deleted",
		"+Notes: keep the greeting short and kind.",
		`greet.go after restore:  "func greeting(name string) string {"`,
	} {
		require.Contains(t, out.String(), want)
	}
	require.NotContains(t, out.String(), "node_modules/left")
}
