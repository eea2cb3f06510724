package contract

import (
	"encoding/json"
	"fmt"
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
// an error naming it), and every allowed operation must name one of
// vfsd's tools. This is the one function the daemon and the CLI call.
func DecodePolicy(contractName string, raw json.RawMessage) (*policy.Policy, error) {
	var (
		p   *policy.Policy
		err error
	)
	dec, err := policyDecoder(contractName)
	if err != nil {
		return nil, err
	}
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
	if err := CheckPolicy(p); err != nil {
		return nil, err
	}
	return p, nil
}

// policyDecoder returns the named contract's PolicyDecoder, nil when it
// has none (or is the default contract, which takes vfsd's own fields).
func policyDecoder(name string) (PolicyDecoder, error) {
	if name == "" || name == Default {
		// vfsd's own contract takes vfsd's own fields; it may not be
		// registered in a binary that does not import contract/all.
		mu.RLock()
		c := contracts[Default]
		mu.RUnlock()
		dec, _ := c.(PolicyDecoder)
		return dec, nil
	}
	c, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	dec, _ := c.(PolicyDecoder)
	return dec, nil
}

// CheckPolicy checks a decoded policy: Validate, and every allowed
// operation names one of vfsd's tools (the consolidated tool's actions
// are checked by their own names).
func CheckPolicy(p *policy.Policy) error {
	if err := p.Validate(); err != nil {
		return err
	}
	known := map[string]bool{}
	for _, n := range tools.Names() {
		known[n] = true
	}
	for _, op := range p.AllowedOps {
		if !known[op] {
			return fmt.Errorf("policy %q: allowed_ops names %q, which is no tool; use tool names: %s", p.Name, op, strings.Join(tools.Names(), ", "))
		}
	}
	return nil
}
