package aos

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/vfsd/vfsd/internal/strictjson"
	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/policy"
)

// CapParams are the document's fs capability fields (000 §"Capability and
// Policy", 14 fields; 001 names the first six). Omitted limits are
// unbounded ("When a limit is omitted, that dimension is unbounded by
// capability policy").
type CapParams struct {
	AllowedFsOps        []string `json:"allowed_fs_ops"`
	FsRoots             []string `json:"fs_roots"`
	MaxReadBytes        *int64   `json:"max_read_bytes"`
	MaxWriteBytes       *int64   `json:"max_write_bytes"`
	MaxPatchBytes       *int64   `json:"max_patch_bytes"`
	MaxInlineBytes      *int64   `json:"max_inline_bytes"`
	MaxGrepResults      *int64   `json:"max_grep_results"`
	MaxGlobResults      *int64   `json:"max_glob_results"`
	MaxScanFiles        *int64   `json:"max_scan_files"`
	MaxScanBytes        *int64   `json:"max_scan_bytes"`
	AllowedPatchFormats []string `json:"allowed_patch_formats"`
	MaxChangedFiles     *int64   `json:"max_changed_files"`
	MaxEditReplacements *int64   `json:"max_edit_replacements"`
	FollowSymlinks      *string  `json:"follow_symlinks"`
}

// opClasses maps the document's allowed_fs_ops values to the vfsd
// operations (tool names) the policy allows; the effects map onto the
// same classes (read_file → read, grep → search, glob and list_dir →
// list, stat and exists → stat).
var opClasses = map[string][]string{
	"read":   {"read_file"},
	"write":  {"write_file"},
	"edit":   {"edit_file"},
	"patch":  {"apply_patch"},
	"search": {"grep"},
	"list":   {"glob", "list_directory"},
	"stat":   {"stat", "exists"},
}

// DefaultPolicyName is the name of DefaultPolicy.
const DefaultPolicyName = "aos-default"

// DefaultPolicy is the policy of an aos session created without one, and
// the policy every aos capability object starts from: the document's
// capability with every field omitted — every operation allowed, symlinks
// followed within the session's tree ("allow"), and no limit ("When a limit
// is omitted, that dimension is unbounded by capability policy"). What
// still bounds a call is the adapter's and the daemon's runtime safety
// behaviour, which the document leaves in place ("subject only to
// adapter/runtime safety behavior"): MaxResultsPerCall results per search
// or listing, payloads over 64 KiB returned as blobs, an edit's 64 MiB and
// 2^20 replacements, a read's 1 GiB window, the session's quotas (bytes,
// files, snapshots), and the fork budget of session tokens (16 open forks,
// a vfsd resource no AOS document names). The aos preset, named
// explicitly, has no fork budget.
func DefaultPolicy() *policy.Policy {
	p, _ := policy.Preset(policy.PresetAOS)
	p.Name = DefaultPolicyName
	p.Caps.MaxForks = policy.DefaultMaxForks
	return p
}

// DefaultPolicy implements contract.PolicyDefaulter.
func (c *Contract) DefaultPolicy() *policy.Policy { return DefaultPolicy() }

// NoOperation is the one entry of the AllowedOps of a policy that allows
// no operation at all (allowed_fs_ops ["patch"] with allowed_patch_formats
// that leave out v4a): an empty list would allow every operation.
const NoOperation = "none"

// PolicyOperations implements contract.PolicyOperations: an aos policy
// allows vfsd's tools (the effects run through them, opClasses) and
// NoOperation.
func (c *Contract) PolicyOperations() []string {
	return append(tools.Names(), NoOperation)
}

// DecodePolicy implements contract.PolicyDecoder: the document's fs
// capability object, strictly (an unknown field is an error naming it),
// as a vfsd policy. It starts from the aos preset (no limits, symlinks
// followed anywhere in the session) and applies each field given.
func (c *Contract) DecodePolicy(raw json.RawMessage) (*policy.Policy, error) {
	return DecodePolicy(raw)
}

// DecodePolicy is Contract.DecodePolicy.
func DecodePolicy(raw json.RawMessage) (*policy.Policy, error) {
	var cp CapParams
	if err := strictjson.Decode(raw, &cp); err != nil {
		var uf *strictjson.UnknownFieldError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &uf):
			return nil, fmt.Errorf("aos policy: unknown field %q; the fields are %s", uf.Field, strings.Join(capFields(), ", "))
		case errors.As(err, &te) && te.Field != "":
			return nil, fmt.Errorf("aos policy: field %q must be %s, not %s", te.Field, kind(te.Type.Kind().String()), te.Value)
		case errors.Is(err, strictjson.ErrTrailingData):
			return nil, errors.New("aos policy: data after the JSON object")
		}
		return nil, fmt.Errorf("aos policy: not a JSON object: %w", err)
	}
	p := DefaultPolicy()
	p.Name = "aos-custom"
	if cp.AllowedFsOps != nil {
		// An empty list allows every operation, as the enforcer's
		// allow-lists do.
		for _, op := range cp.AllowedFsOps {
			ops, ok := opClasses[strings.ToLower(op)]
			if !ok {
				return nil, fmt.Errorf("aos policy: allowed_fs_ops: unknown operation %q; use read, write, edit, patch, search, list or stat", op)
			}
			for _, o := range ops {
				if !slices.Contains(p.AllowedOps, o) {
					p.AllowedOps = append(p.AllowedOps, o)
				}
			}
		}
	}
	if len(cp.FsRoots) > 0 {
		roots := make([]string, 0, len(cp.FsRoots))
		for _, r := range cp.FsRoots {
			root, err := sessionRoot(r)
			if err != nil {
				return nil, err
			}
			roots = append(roots, root)
		}
		p.ReadRoots, p.WriteRoots = roots, slices.Clone(roots)
	}
	limits := []struct {
		name string
		v    *int64
		to   *int64
	}{
		{"max_read_bytes", cp.MaxReadBytes, &p.Caps.MaxReadBytes},
		{"max_write_bytes", cp.MaxWriteBytes, &p.Caps.MaxWriteBytes},
		{"max_patch_bytes", cp.MaxPatchBytes, &p.Caps.MaxPatchBytes},
		{"max_inline_bytes", cp.MaxInlineBytes, &p.Caps.MaxInlineBytes},
		{"max_grep_results", cp.MaxGrepResults, &p.Caps.MaxGrepResults},
		{"max_glob_results", cp.MaxGlobResults, &p.Caps.MaxGlobResults},
		{"max_scan_files", cp.MaxScanFiles, &p.Caps.MaxScannedFiles},
		{"max_scan_bytes", cp.MaxScanBytes, &p.Caps.MaxScannedBytes},
		{"max_changed_files", cp.MaxChangedFiles, &p.Caps.MaxChangedFiles},
		{"max_edit_replacements", cp.MaxEditReplacements, &p.Caps.MaxEditReplacements},
	}
	for _, l := range limits {
		if l.v == nil {
			continue
		}
		if *l.v < 1 {
			// vfsd's zero cap means "unbounded", the opposite of a
			// configured zero: refuse rather than invert it.
			return nil, fmt.Errorf("aos policy: %s is %d; a limit must be at least 1 (leave it out for no limit, or leave the operation out of allowed_fs_ops to forbid it)", l.name, *l.v)
		}
		*l.to = *l.v
	}
	if cp.AllowedPatchFormats != nil && len(cp.AllowedPatchFormats) > 0 {
		v4a := false
		for _, f := range cp.AllowedPatchFormats {
			if strings.EqualFold(f, "v4a") {
				v4a = true
			}
		}
		if !v4a {
			// The only format vfsd applies is v4a: no patch can pass.
			if p.AllowedOps == nil {
				for _, ops := range opClasses {
					p.AllowedOps = append(p.AllowedOps, ops...)
				}
			}
			p.AllowedOps = slices.DeleteFunc(p.AllowedOps, func(o string) bool { return o == "apply_patch" })
			if len(p.AllowedOps) == 0 {
				p.AllowedOps = []string{NoOperation} // empty would allow everything
			}
		}
	}
	slices.Sort(p.AllowedOps)
	if cp.FollowSymlinks != nil {
		switch s := policy.SymlinkPolicy(*cp.FollowSymlinks); s {
		case policy.SymlinksDeny, policy.SymlinksWithinRoot, policy.SymlinksAllow:
			p.Symlinks = s
		default:
			return nil, fmt.Errorf("aos policy: follow_symlinks is %q; use deny, within_root_only or allow", *cp.FollowSymlinks)
		}
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("aos policy: %w", err)
	}
	return p, nil
}

// sessionRoot maps an fs_roots prefix to a session directory: the session
// is the workdir, so "/", "" and "." are all of it, and "/src", "src" and
// "./src/" are its src directory.
func sessionRoot(r string) (string, error) {
	t := strings.Trim(strings.TrimPrefix(r, "./"), "/")
	if t == "" || t == "." {
		return "/", nil
	}
	p, err := vfs.ParsePath(t)
	if err != nil {
		return "", fmt.Errorf("aos policy: fs_roots entry %q is not a path in the session: %w", r, err)
	}
	return string(p), nil
}

func capFields() []string {
	var out []string
	for _, f := range []string{"allowed_fs_ops", "fs_roots", "max_read_bytes", "max_write_bytes", "max_patch_bytes",
		"max_inline_bytes", "max_grep_results", "max_glob_results", "max_scan_files", "max_scan_bytes",
		"allowed_patch_formats", "max_changed_files", "max_edit_replacements", "follow_symlinks"} {
		out = append(out, f)
	}
	return out
}
