package all_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/contract"
	_ "github.com/vfsd/vfsd/contract/all"
	"github.com/vfsd/vfsd/tools/toolstest"
)

// TestUnreadableLazyDirectory: every contract answers a call that needs a
// lazily loaded directory whose manifest cannot be read with its io error
// (x07 FS_ERR_IO, pos_filesystem OSError, weakincentives its one
// ToolValidationError, aos status error), never with "missing", "does
// not exist" or an empty listing, and leaves the session unchanged.
func TestUnreadableLazyDirectory(t *testing.T) {
	cases := []struct {
		contract, tool, params string
		status                 string // the result's Status
	}{
		{"x07", "read_all_v1", `{"path":"bad/g.txt"}`, "FS_ERR_IO"},
		{"x07", "list_dir_sorted_text_v1", `{"path":"bad"}`, "FS_ERR_IO"},
		{"x07", "walk_glob_sorted_text_v1", `{"root":".","glob":"**"}`, "FS_ERR_IO"},
		{"x07", "stat_v1", `{"path":"bad/g.txt"}`, "FS_ERR_IO"},
		{"x07", "write_all_v1", `{"path":"bad/new.txt","data":"eA=="}`, "FS_ERR_IO"},
		{"x07", "mkdirs_v1", `{"path":"bad/sub"}`, "FS_ERR_IO"},
		{"x07", "remove_file_v1", `{"path":"bad/g.txt"}`, "FS_ERR_IO"},
		{"x07", "remove_dir_all_v1", `{"path":"bad/sub"}`, "FS_ERR_IO"},
		{"x07", "rename_v1", `{"src":"bad/g.txt","dst":"x.txt"}`, "FS_ERR_IO"},
		{"weakincentives", "read_file", `{"path":{"segments":["bad","g.txt"]}}`, "ToolValidationError"},
		{"weakincentives", "list_directory", `{"path":{"segments":["bad"]}}`, "ToolValidationError"},
		{"weakincentives", "write_file", `{"path":{"segments":["bad","new.txt"]},"content":"x"}`, "ToolValidationError"},
		{"weakincentives", "delete_file", `{"path":{"segments":["bad"]}}`, "ToolValidationError"},
		{"weakincentives", "delete_file", `{"path":{"segments":["bad","g.txt"]},"allow_missing":true}`, "ToolValidationError"},
		{"pos_filesystem", "pos_filesystem", `{"action":"read","path":"bad/g.txt"}`, "OSError"},
		{"pos_filesystem", "pos_filesystem", `{"action":"exists","path":"bad/g.txt"}`, "OSError"},
		{"pos_filesystem", "pos_filesystem", `{"action":"list","path":"bad"}`, "OSError"},
		{"pos_filesystem", "pos_filesystem", `{"action":"write","path":"bad/g.txt","content":"x"}`, "OSError"},
		{"pos_filesystem", "pos_filesystem", `{"action":"write","path":"bad/sub/new.txt","content":"x","create_dirs":false}`, "OSError"},
		{"pos_filesystem", "pos_filesystem", `{"action":"mkdir","path":"bad/g.txt"}`, "OSError"},
		{"pos_filesystem", "pos_filesystem", `{"action":"delete","path":"bad/g.txt"}`, "OSError"},
		{"aos", "host.fs.exists", `{"path":"bad/g.txt"}`, "error"},
		{"aos", "host.fs.stat", `{"path":"bad/g.txt"}`, "error"},
		{"aos", "host.fs.list_dir", `{"path":"bad"}`, "error"},
		{"aos", "host.fs.read_file", `{"path":"bad/g.txt"}`, "error"},
		{"aos", "host.fs.glob", `{"pattern":"**/*.txt"}`, "error"},
	}
	for _, c := range cases {
		t.Run(c.contract+"/"+c.tool+c.params, func(t *testing.T) {
			b := toolstest.NewBroken(t, nil)
			k, err := contract.Lookup(c.contract)
			require.NoError(t, err)
			env := &contract.Env{SessionID: b.S.ID(), Session: b.S, Tools: b.Tools, Policy: b.Tools.Policy(), Blobs: b.Repo.Blobs()}
			before := b.Fingerprint()
			r := k.Call(context.Background(), env, c.tool, json.RawMessage(c.params))
			require.True(t, r.IsError, "an unreadable directory fails the call: %s", r.Body)
			require.Equal(t, c.status, r.Status, "%s", r.Body)
			require.NotContains(t, string(r.Body)+r.Text, "ot found", "never reported missing")
			require.NotContains(t, string(r.Body)+r.Text, "does not exist")
			require.Equal(t, before, b.Fingerprint(), "the session is unchanged")
		})
	}
}
