package daemon

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/contract"
	"github.com/vfsd/vfsd/vfs/policy"
)

// sessionPolicy is the policy a new session gets: the preset req names,
// the policy object req gives (decoded for the session's contract,
// contractName, by contract.DecodePolicy), a fork's origin's when it names
// neither, or the default preset. custom is the policy in its complete
// form when it is no preset as the preset stands, for the metadata: a
// custom policy persists as data, a preset by name.
func sessionPolicy(contractName string, req api.CreateSessionRequest, src *entry) (pol *policy.Policy, custom json.RawMessage, err error) {
	switch {
	case req.Policy != "" && len(req.PolicyObject) > 0:
		return nil, nil, apiErr(api.CodeInvalidInput, "give policy as a preset's name or as a policy object, not both; an object names the preset it starts from as \"base\"")
	case len(req.PolicyObject) > 0:
		if pol, err = contract.DecodePolicy(contractName, req.PolicyObject); err != nil {
			return nil, nil, apiErr(api.CodeInvalidInput, "policy: %v; see docs/api.md, Policies", err)
		}
	case req.Policy != "":
		if pol, err = policy.Preset(req.Policy); err != nil {
			return nil, nil, apiErr(api.CodeInvalidInput, "%v", err)
		}
	case src != nil:
		src.mu.Lock()
		custom = src.meta.PolicyObject
		src.mu.Unlock()
		pol = clonePolicy(src.pol)
		return pol, custom, nil
	default:
		pol = policy.Default()
		if k, err := contract.Lookup(contractName); err == nil {
			if d, ok := k.(contract.PolicyDefaulter); ok {
				pol = d.DefaultPolicy()
			}
		}
	}
	return pol, completePolicy(pol), nil
}

// completePolicy returns pol's complete form when it differs from the
// preset of its name (or has no preset's name), nil when it is that preset.
func completePolicy(pol *policy.Policy) json.RawMessage {
	if p, err := policy.Preset(pol.Name); err == nil && reflect.DeepEqual(p, pol) {
		return nil
	}
	b, err := json.Marshal(pol)
	if err != nil {
		panic(fmt.Sprintf("daemon: marshal a policy: %v", err)) // plain data: cannot fail
	}
	return b
}

// loadPolicy is the policy of a session's metadata: its complete form when
// it has one, else the preset it names.
func loadPolicy(m *sessionMeta) (*policy.Policy, error) {
	if len(m.PolicyObject) > 0 {
		pol, err := policy.FromJSON(m.PolicyObject)
		if err != nil {
			return nil, fmt.Errorf("policy_object: %w", err)
		}
		return pol, nil
	}
	return policy.Preset(m.Policy)
}

// clonePolicy copies a policy (plain data) so that sessions never share one.
func clonePolicy(p *policy.Policy) *policy.Policy {
	b, err := json.Marshal(p)
	if err != nil {
		panic(fmt.Sprintf("daemon: marshal a policy: %v", err))
	}
	q := &policy.Policy{}
	if err := json.Unmarshal(b, q); err != nil {
		panic(fmt.Sprintf("daemon: unmarshal a policy: %v", err))
	}
	return q
}

// samePolicy reports whether two policies enforce the same rules.
func samePolicy(a, b *policy.Policy) bool { return reflect.DeepEqual(a, b) }

// policyJSON is a policy's complete form, for api.Session.
func policyJSON(p *policy.Policy) json.RawMessage {
	b, err := json.Marshal(p)
	if err != nil {
		return nil
	}
	return b
}
