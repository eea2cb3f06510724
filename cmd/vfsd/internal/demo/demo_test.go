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
		"session demo-history created from",
		"│ call 1  edit_file  ok  README.md",
		"│ call 2  edit_file  ok  greet.go",
		"│ call 3  write_file ok  docs/todo.md",
		"rewind to before call 2 (@3 → @1): greet.go had `return \"Hi, \" + name`, has `return \"Hello, \" + name`; docs/todo.md exists: no",
		"rewind the rewind (to @3): greet.go has `return \"Hi, \" + name` again; docs/todo.md exists: yes",
		"│ merged  greet.go",
		"│ 2 session changes kept, 0 host changes taken, 1 merged, 0 conflicts",
		"│ // greeting returns a friendly greeting for name.",
		"│ \treturn \"Hi, \" + name",
	} {
		require.Contains(t, out.String(), want)
	}
	require.NotContains(t, out.String(), "node_modules/left")
}
