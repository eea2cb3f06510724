package contract_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/contract"
	"github.com/vfsd/vfsd/vfs/policy"
)

// seedPolicyContract is a contract whose document has policy fields of its
// own ({"roots": [...]}).
type seedPolicyContract struct{ contract.Contract }

func (seedPolicyContract) Name() string { return "test-seed-policy" }

func (seedPolicyContract) DecodePolicy(raw json.RawMessage) (*policy.Policy, error) {
	var in struct {
		Roots []string `json:"roots"`
		Ops   []string `json:"ops"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, err
	}
	if in.Roots == nil {
		return nil, errors.New("roots is required")
	}
	p := policy.Default()
	p.Name, p.ReadRoots, p.WriteRoots, p.AllowedOps = "seed", in.Roots, in.Roots, in.Ops
	return p, nil
}

// ownOpsContract runs its operations itself and allows them by its own
// names (as X07 does).
type ownOpsContract struct{ seedPolicyContract }

func (ownOpsContract) Name() string { return "test-own-ops" }

func (ownOpsContract) PolicyOperations() []string { return []string{"read", "write"} }

func TestDecodePolicy(t *testing.T) {
	contract.Register(seedPolicyContract{})
	contract.Register(ownOpsContract{})
	for _, c := range []struct {
		name, contract, raw string
		roots               []string
		err                 string
	}{
		{name: "vfsd fields by default", raw: `{"read_roots":["src"]}`, roots: []string{"src"}},
		{name: "vfsd contract by name", contract: contract.Default, raw: `{"read_roots":["src"]}`, roots: []string{"src"}},
		{name: "unknown field names it", raw: `{"fs_roots":["src"]}`, err: `unknown field "fs_roots"`},
		{name: "a preset's name", raw: `"x07"`},
		{name: "the contract's own fields", contract: "test-seed-policy", raw: `{"roots":["lib"]}`, roots: []string{"lib"}},
		{name: "the contract's decoder's error", contract: "test-seed-policy", raw: `{}`, err: "roots is required"},
		{name: "allowed ops must be tools", raw: `{"allowed_ops":["read_file","reed_file"]}`, err: `"reed_file", which is no operation of the vfsd contract`},
		{name: "a decoder's ops are checked too", contract: "test-seed-policy", raw: `{"roots":["x"],"ops":["read"]}`, err: `"read", which is no operation of the test-seed-policy contract`},
		{name: "a contract's policy speaks its own operation names", contract: "test-own-ops", raw: `{"roots":["x"],"ops":["read","write"]}`, roots: []string{"x"}},
		{name: "and only those", contract: "test-own-ops", raw: `{"roots":["x"],"ops":["read_file"]}`, err: `"read_file", which is no operation of the test-own-ops contract; use its names: read, write`},
		{name: "unknown contract", contract: "nope", raw: `{}`, err: `unknown contract "nope"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := contract.DecodePolicy(c.contract, json.RawMessage(c.raw))
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.roots, p.ReadRoots)
		})
	}
}
