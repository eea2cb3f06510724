package all_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/contract"
)

// TestContractPoliciesPassTheCheck: a policy object written in a
// contract's own words decodes through contract.DecodePolicy — the entry
// point the daemon and the CLI use — including the operation names the
// contract's decoder puts in AllowedOps. (Every X07 run-os-policy object
// was once refused here: "allowed_ops names "read_all_v1", which is no
// tool".)
func TestContractPoliciesPassTheCheck(t *testing.T) {
	for _, c := range []struct{ contract, raw string }{
		{"x07", `{"schema_version":"x07.run-os-policy@0.1.0","policy_id":"p","fs":{"enabled":true,"read_roots":["."],"write_roots":["out"],"deny_hidden":true,"allow_mkdir":true,"allow_remove":true,"allow_rename":true,"allow_walk":true,"allow_glob":true}}`},
		{"x07", `{"fs":{"enabled":false,"read_roots":["."],"write_roots":["."],"deny_hidden":false}}`},
		{"x07", `{"fs":{"enabled":true,"read_roots":[],"write_roots":[],"deny_hidden":true}}`},
		{"aos", `{"allowed_fs_ops":["read","list","stat"],"fs_roots":["src"]}`},
		{"aos", `{"allowed_fs_ops":["patch"],"allowed_patch_formats":["unified"]}`},
		{"pos_filesystem", `{"read_only":true}`},
		{"weakincentives", `{"max_write_length":10}`},
		{"vfsd", `{"allowed_ops":["read_file"]}`},
	} {
		t.Run(c.contract+" "+c.raw, func(t *testing.T) {
			p, err := contract.DecodePolicy(c.contract, json.RawMessage(c.raw))
			require.NoError(t, err)
			k, err := contract.Lookup(c.contract)
			require.NoError(t, err)
			for _, op := range p.AllowedOps {
				require.Contains(t, contract.Operations(k), op)
			}
		})
	}
	// A contract's names are its own: vfsd's tool names are no X07
	// operation, and X07's are no vfsd tool.
	_, err := contract.DecodePolicy("vfsd", json.RawMessage(`{"allowed_ops":["read_all_v1"]}`))
	require.ErrorContains(t, err, `"read_all_v1", which is no operation of the vfsd contract`)
}
