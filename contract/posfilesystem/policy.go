package posfilesystem

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/vfsd/vfsd/vfs/policy"
)

// PolicyName is the name of the contract's default policy.
const PolicyName = "pos_filesystem"

// DefaultPolicy is the policy of a pos_filesystem session that names none:
// vfsd's default (symlinks followed while they stay in the workspace, the
// default caps) with hidden files denied, as the document's validate_path
// says: "Prevents: ... Hidden file access (configurable)".
func DefaultPolicy() *policy.Policy {
	p := policy.Default()
	p.Name = PolicyName
	p.DenyHidden = true
	return p
}

// Policy fields of the pos_filesystem contract, named after the document.
const (
	// FieldHiddenFileAccess is "deny" (the default) or "allow": "Hidden
	// file access (configurable)".
	FieldHiddenFileAccess = "hidden_file_access"
	// FieldReadOnly allows only read, list and exists: "Consider read-only
	// mode for sensitive sub-agents".
	FieldReadOnly = "read_only"
	// FieldMaxSizeMB caps read's max_size_mb (and so the default's 10 when
	// lower): "Default max_size_mb limit (10MB)".
	FieldMaxSizeMB = "max_size_mb"
)

// readOnlyOps are the vfsd operations of the read-only actions.
var readOnlyOps = []string{"read_file", "list_directory", "exists"}

// DecodePolicy turns a pos_filesystem policy into vfsd's policy. A preset's
// name (a JSON string) is that preset ("pos_filesystem" is DefaultPolicy).
// An object takes the contract's fields (hidden_file_access, read_only,
// max_size_mb) and vfsd's own (policy.Decode: "base", roots, caps, ...);
// without a "base" it starts from DefaultPolicy. Decoding is strict: any
// other field is an error that names it.
func DecodePolicy(raw json.RawMessage) (*policy.Policy, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return DefaultPolicy(), nil
	}
	if raw[0] == '"' {
		var name string
		if err := json.Unmarshal(raw, &name); err != nil {
			return nil, fmt.Errorf("pos_filesystem policy: %w", err)
		}
		if name == PolicyName {
			return DefaultPolicy(), nil
		}
		return policy.Preset(name)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, errors.New("pos_filesystem policy: not a JSON object (or a preset's name as a string)")
	}
	var hidden string
	var readOnly bool
	var maxMB int64
	fields := []struct {
		name string
		dst  any
	}{{FieldHiddenFileAccess, &hidden}, {FieldReadOnly, &readOnly}, {FieldMaxSizeMB, &maxMB}}
	given := map[string]bool{}
	for _, f := range fields {
		v, ok := m[f.name]
		if !ok {
			continue
		}
		delete(m, f.name)
		given[f.name] = true
		if err := json.Unmarshal(v, f.dst); err != nil {
			return nil, fmt.Errorf("pos_filesystem policy: field %q: %w", f.name, err)
		}
	}
	_, denyHiddenGiven := m["deny_hidden"]
	if denyHiddenGiven && given[FieldHiddenFileAccess] {
		return nil, errors.New(`pos_filesystem policy: give hidden_file_access or deny_hidden, not both`)
	}
	rest, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("pos_filesystem policy: %w", err)
	}
	pol, err := policy.Decode(rest)
	if err != nil {
		msg := err.Error()
		if strings.Contains(msg, "unknown field") {
			msg += fmt.Sprintf("; pos_filesystem also takes %s, %s and %s", FieldHiddenFileAccess, FieldReadOnly, FieldMaxSizeMB)
		}
		return nil, errors.New("pos_filesystem policy: " + msg)
	}
	if _, based := m["base"]; !based && !denyHiddenGiven {
		pol.DenyHidden = true // the contract's default: "Prevents ... Hidden file access"
	}
	switch hidden {
	case "":
	case "deny":
		pol.DenyHidden = true
	case "allow":
		pol.DenyHidden = false
	default:
		return nil, fmt.Errorf("pos_filesystem policy: %s must be \"deny\" or \"allow\", not %q", FieldHiddenFileAccess, hidden)
	}
	if given[FieldMaxSizeMB] {
		if maxMB < 1 {
			return nil, fmt.Errorf("pos_filesystem policy: %s must be at least 1, not %d", FieldMaxSizeMB, maxMB)
		}
		pol.Caps.MaxReadBytes = maxMB << 20
	}
	if readOnly {
		ops := readOnlyOps
		if len(pol.AllowedOps) > 0 {
			ops = slices.DeleteFunc(slices.Clone(readOnlyOps), func(op string) bool { return !slices.Contains(pol.AllowedOps, op) })
		}
		if len(ops) == 0 {
			return nil, errors.New("pos_filesystem policy: read_only with allowed_ops that allow no read action leaves the tool nothing to do")
		}
		pol.AllowedOps = ops
	}
	if err := pol.Validate(); err != nil {
		return nil, fmt.Errorf("pos_filesystem policy: %w", err)
	}
	return pol, nil
}
