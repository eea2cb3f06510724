package tools_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/tools/toolstest"
)

// FuzzCall sends arbitrary parameters to every tool: no call may panic or
// return a receipt without a status, and a failed call must leave the
// session exactly as it was.
func FuzzCall(f *testing.F) {
	seeds := []struct{ tool, params string }{
		{"read_file", `{"path":"docs/a.txt","start_line":2,"line_count":1}`},
		{"write_file", `{"path":"x/y.txt","inline_text":"hi","mode":"append"}`},
		{"edit_file", `{"path":"docs/a.txt","old_string":"two","new_string":"2"}`},
		{"apply_patch", `{"patch":"*** Begin Patch\n*** Add File: a\n+a\n*** End Patch"}`},
		{"list_directory", `{"path":".","depth":3,"ignore":["**/*.go"]}`},
		{"grep", `{"pattern":"o+","context":1}`},
		{"glob", `{"pattern":"**/*.{go,md}","sort":"path"}`},
		{"rename", `{"from":"src","to":"lib/src"}`},
		{"delete_file", `{"path":"src","recursive":true}`},
		{"mkdir", `{"path":"a/b/../c"}`},
		{"stat", `{"path":"/"}`},
		{"filesystem", `{"action":"exists","path":"README.md"}`},
	}
	for _, s := range seeds {
		f.Add(s.tool, s.params)
	}
	e := toolstest.New(f, nil, baseFiles)
	f.Fuzz(func(t *testing.T, tool, params string) {
		e := e.With(t)
		before := e.State()
		done := make(chan *tools.Response, 1)
		go func() { done <- e.Call(tool, params) }()
		var r *tools.Response
		select {
		case r = <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s %q hangs", tool, params)
		}
		require.NotEmpty(t, r.Status())
		if !r.OK() {
			require.Equal(t, before, e.State(), "%s %s failed but changed the session: %s", tool, params, r.JSON())
		}
	})
}
