package all_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/contract"
	_ "github.com/vfsd/vfsd/contract/all"
	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/policy"
)

// TestCallTurnsPanicIntoResult: a call that panics inside a contract (here:
// on a Session and tools that were never opened) returns the contract's own
// internal-error result, with a body, instead of panicking.
func TestCallTurnsPanicIntoResult(t *testing.T) {
	pol, err := policy.Preset(policy.PresetDefault)
	require.NoError(t, err)
	for _, c := range []struct{ contract, tool, params, status string }{
		{"x07", "read_all_v1", `{"path":"a.txt"}`, "FS_ERR_IO"},
		{"weakincentives", "read_file", `{"path":{"segments":["a.txt"]}}`, "ToolValidationError"},
		{"pos_filesystem", "pos_filesystem", `{"action":"read","path":"a.txt"}`, "OSError"},
		{"aos", "host.fs.read_file", `{"path":"a.txt"}`, "error"},
	} {
		t.Run(c.contract, func(t *testing.T) {
			ct, err := contract.Lookup(c.contract)
			require.NoError(t, err)
			env := &contract.Env{SessionID: "s", Session: &vfs.Session{}, Tools: &tools.Toolset{}, Policy: pol}
			var res contract.Result
			require.NotPanics(t, func() { res = ct.Call(context.Background(), env, c.tool, json.RawMessage(c.params)) })
			require.True(t, res.IsError, "%+v", res)
			require.Equal(t, c.status, res.Status, "%+v", res)
			require.NotEmpty(t, res.Body)
			require.Contains(t, res.Text, "nternal error", "%+v", res)
		})
	}
}
