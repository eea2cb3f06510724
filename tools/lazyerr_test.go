package tools_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/tools/toolstest"
)

// TestUnreadableLazyDirectory: a tool call that needs a lazily loaded
// directory whose manifest cannot be read fails with the io answer (status
// and code "error", the message naming the snapshot's unreadable
// directory), never not_found, "does not exist" or an empty listing, and
// leaves the session unchanged.
func TestUnreadableLazyDirectory(t *testing.T) {
	cases := []struct{ tool, params string }{
		{"read_file", `{"path":"bad/g.txt"}`},
		{"read_file", `{"path":"bad/sub/f.txt"}`},
		{"list_directory", `{"path":"bad"}`},
		{"list_directory", `{"path":".","depth":3}`},
		{"glob", `{"pattern":"**/*.txt"}`},
		{"glob", `{"pattern":"*.txt","path":"bad"}`},
		{"grep", `{"pattern":"bad"}`},
		{"stat", `{"path":"bad/g.txt"}`},
		{"exists", `{"path":"bad/g.txt"}`},
		{"exists", `{"path":"bad/none.txt"}`},
		{"write_file", `{"path":"bad/new.txt","mode":"create","inline_text":"x"}`},
		{"write_file", `{"path":"bad/g.txt","inline_text":"overwrites what it cannot see"}`},
		{"mkdir", `{"path":"bad/sub/deeper"}`},
		{"delete_file", `{"path":"bad/g.txt","allow_missing":true}`},
		{"delete_file", `{"path":"bad","recursive":true}`},
		{"rename", `{"from":"good/a.txt","to":"bad/g.txt"}`},
		{"rename", `{"from":"bad/g.txt","to":"x.txt"}`},
		{"edit_file", `{"path":"bad/g.txt","old_string":"bad","new_string":"good"}`},
	}
	for _, c := range cases {
		t.Run(c.tool+c.params, func(t *testing.T) {
			b := toolstest.NewBroken(t, nil)
			before := b.Fingerprint()
			r := b.Call(c.tool, c.params)
			require.False(t, r.OK(), "an unreadable directory fails the call: %s", r.JSON())
			m := toolstest.Receipt(t, r)
			require.Equal(t, string(tools.StatusError), m["status"], "%s", r.JSON())
			require.Equal(t, string(tools.CodeInternal), m["error_code"], "%s", r.JSON())
			require.Contains(t, m["summary_text"], "reading a directory of the snapshot failed", "%s", r.JSON())
			require.NotContains(t, string(r.JSON()), "does not exist")
			require.Equal(t, before, b.Fingerprint(), "the session is unchanged")
		})
	}
	// A healthy read beside it works.
	b := toolstest.NewBroken(t, nil)
	r := b.Call("read_file", `{"path":"good/a.txt"}`)
	require.True(t, r.OK(), "%s", r.JSON())
}
