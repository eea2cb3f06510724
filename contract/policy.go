package contract

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/vfs/policy"
)

// DecodePolicy decodes a policy given as data (a preset's name as a JSON
// string, or a policy object) for a session of the named contract ("" is
// the default): by the contract's PolicyDecoder when it implements one,
// so that the policy object takes the field names of the contract's
// document; by policy.Decode (vfsd's field names, a base preset and
// overrides) otherwise. Either way decoding is strict (an unknown field is
// an error naming it), and every allowed operation must be one the
// contract knows (CheckPolicy). This is the one function the daemon and
// the CLI call.
func DecodePolicy(contractName string, raw json.RawMessage) (*policy.Policy, error) {
	k, err := policyContract(contractName)
	if err != nil {
		return nil, err
	}
	dec, _ := k.(PolicyDecoder)
	var p *policy.Policy
	if dec != nil {
		p, err = dec.DecodePolicy(raw)
	} else {
		p, err = policy.Decode(raw)
	}
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, fmt.Errorf("contract %s decoded no policy", contractName)
	}
	if err := CheckPolicy(k, p); err != nil {
		return nil, err
	}
	return p, nil
}

// policyContract returns the named contract; nil for the default contract
// in a binary that did not register it (it takes vfsd's own fields and
// tool names).
func policyContract(name string) (Contract, error) {
	if name == "" || name == Default {
		mu.RLock()
		c := contracts[Default]
		mu.RUnlock()
		return c, nil
	}
	return Lookup(name)
}

// Operations returns the names a policy of a session of contract k may
// list in AllowedOps: the contract's own (PolicyOperations) when it has
// them, vfsd's tool names otherwise (k may be nil: vfsd's contract).
func Operations(k Contract) []string {
	if po, ok := k.(PolicyOperations); ok {
		return po.PolicyOperations()
	}
	return tools.Names()
}

// CheckPolicy checks a decoded policy for a session of contract k (nil:
// vfsd's own): Validate, and every allowed operation is one of the
// contract's (Operations: its own names, or vfsd's tools for a contract
// that runs through them).
func CheckPolicy(k Contract, p *policy.Policy) error {
	if err := p.Validate(); err != nil {
		return err
	}
	known := Operations(k)
	for _, op := range p.AllowedOps {
		if !slices.Contains(known, op) {
			name := Default
			if k != nil {
				name = k.Name()
			}
			return fmt.Errorf("policy %q: allowed_ops names %q, which is no operation of the %s contract; use its names: %s", p.Name, op, name, strings.Join(known, ", "))
		}
	}
	return nil
}
