package x07

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/vfsd/vfsd/internal/strictjson"
	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/policy"
)

// SchemaVersion is the policy document's schema id.
const SchemaVersion = "x07.run-os-policy@0.1.0"

// DisabledOp is the one entry of Policy.AllowedOps of a policy whose
// fs.enabled is false: it names no operation, so every FS operation fails
// with FS_ERR_DISABLED (vfsd's own tools, which check AllowedOps too, are
// refused as well).
const DisabledOp = "fs.disabled"

// policyDoc is a run-os-policy document (x07.run-os-policy@0.1.0). Only
// its fs section governs a filesystem session; the other sections of the
// schema are accepted (a policy file written for the X07 runner decodes
// unchanged) and have nothing to govern here.
type policyDoc struct {
	SchemaVersion *string   `json:"schema_version"`
	PolicyID      string    `json:"policy_id"`
	Notes         string    `json:"notes"`
	FS            *fsPolicy `json:"fs"`
}

// otherSections are the schema's sections that are not about the
// filesystem: process, network, database, environment, clock, language and
// thread limits of an X07 program. A vfsd session has none of them.
var otherSections = []string{"limits", "net", "db", "env", "time", "language", "threads", "process"}

// fsPolicy is the document's "FS policy fields".
type fsPolicy struct {
	Enabled       *bool     `json:"enabled"`
	ReadRoots     *[]string `json:"read_roots"`
	WriteRoots    *[]string `json:"write_roots"`
	DenyHidden    *bool     `json:"deny_hidden"`
	AllowSymlinks *bool     `json:"allow_symlinks"`
	AllowMkdir    *bool     `json:"allow_mkdir"`
	AllowRemove   *bool     `json:"allow_remove"`
	AllowRename   *bool     `json:"allow_rename"`
	AllowWalk     *bool     `json:"allow_walk"`
	AllowGlob     *bool     `json:"allow_glob"`
	MaxReadBytes  *uint32   `json:"max_read_bytes"`
	MaxWriteBytes *uint32   `json:"max_write_bytes"`
	MaxEntries    *uint32   `json:"max_entries"`
	MaxDepth      *uint32   `json:"max_depth"`
}

var fsFields = []string{"enabled", "read_roots", "write_roots", "deny_hidden", "allow_symlinks", "allow_mkdir",
	"allow_remove", "allow_rename", "allow_walk", "allow_glob", "max_read_bytes", "max_write_bytes", "max_entries", "max_depth"}

// DecodePolicy turns a run-os-policy document into vfsd's policy,
// strictly: an unknown field, a missing required fs field or a value of
// the wrong type is an error that names it. The mapping:
//
//   - fs.read_roots / fs.write_roots → ReadRoots / WriteRoots: session
//     paths ("." and "./" are the whole session, "./src" and "/src" are
//     src); an empty list allows no read (no write) operation at all, as
//     in the X07 runner.
//   - fs.enabled=false → AllowedOps [DisabledOp]: every call is
//     FS_ERR_DISABLED.
//   - fs.allow_mkdir, allow_remove, allow_rename, allow_walk, allow_glob →
//     the operations listed in AllowedOps (omitted means false, the
//     runner's sandboxed default).
//   - fs.deny_hidden → DenyHidden; fs.allow_symlinks → Symlinks
//     within_root_only (true) or deny (false or omitted).
//   - fs.max_* → Caps.MaxReadBytes, MaxWriteBytes, MaxEntries and
//     MaxWalkDepth; 0 or omitted is the runner's default (16 MiB, 16 MiB,
//     10,000, 64).
//
// ".." is always rejected (RejectDotDot) and error codes are also numbered
// for vfsd's own tools (NumericCodes).
func (*X07) DecodePolicy(raw json.RawMessage) (*policy.Policy, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || top == nil {
		return nil, fmt.Errorf("x07 policy: not a JSON object (%v); give an %s document with an \"fs\" section", err, SchemaVersion)
	}
	known := append([]string{"schema_version", "policy_id", "notes", "fs"}, otherSections...)
	if err := unknownField("", top, known); err != nil {
		return nil, err
	}
	for _, s := range otherSections {
		if v, ok := top[s]; ok && !isObject(v) {
			return nil, fmt.Errorf("x07 policy: %q must be an object", s)
		}
	}
	fsRaw, ok := top["fs"]
	if !ok {
		return nil, errors.New(`x07 policy: field "fs" is required: {"enabled", "read_roots", "write_roots", "deny_hidden", ...}`)
	}
	var fsMap map[string]json.RawMessage
	if err := json.Unmarshal(fsRaw, &fsMap); err != nil || fsMap == nil {
		return nil, errors.New(`x07 policy: field "fs" must be an object`)
	}
	if err := unknownField("fs.", fsMap, fsFields); err != nil {
		return nil, err
	}
	for _, req := range []string{"enabled", "read_roots", "write_roots", "deny_hidden"} {
		if _, ok := fsMap[req]; !ok {
			return nil, fmt.Errorf("x07 policy: field \"fs.%s\" is required", req)
		}
	}
	var doc policyDoc
	for name := range top {
		if slices.Contains(otherSections, name) {
			delete(top, name)
		}
	}
	trimmed, _ := json.Marshal(top)
	if err := strictjson.Decode(trimmed, &doc); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("x07 policy: field %q must be %s, not %s", te.Field, typeWord(te.Type.String()), te.Value)
		}
		return nil, fmt.Errorf("x07 policy: %w", err)
	}
	if doc.SchemaVersion != nil && *doc.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("x07 policy: field \"schema_version\" is %q; this contract reads %q", *doc.SchemaVersion, SchemaVersion)
	}
	f := doc.FS
	for _, b := range []struct {
		name string
		v    *bool
	}{{"enabled", f.Enabled}, {"deny_hidden", f.DenyHidden}} {
		if b.v == nil {
			return nil, fmt.Errorf("x07 policy: field \"fs.%s\" must be true or false, not null", b.name)
		}
	}
	if f.ReadRoots == nil || f.WriteRoots == nil {
		return nil, errors.New(`x07 policy: fields "fs.read_roots" and "fs.write_roots" must be arrays of paths, not null`)
	}
	name := doc.PolicyID
	if name == "" {
		name = policy.PresetX07
	}
	p := &policy.Policy{Name: name, DenyHidden: *f.DenyHidden, RejectDotDot: true, NumericCodes: true,
		Symlinks: policy.SymlinksDeny}
	if on(f.AllowSymlinks) {
		p.Symlinks = policy.SymlinksWithinRoot
	}
	var err error
	if p.ReadRoots, err = roots("fs.read_roots", *f.ReadRoots); err != nil {
		return nil, err
	}
	if p.WriteRoots, err = roots("fs.write_roots", *f.WriteRoots); err != nil {
		return nil, err
	}
	p.AllowedOps = allowedOps(len(*f.ReadRoots) > 0, len(*f.WriteRoots) > 0, f)
	if !*f.Enabled {
		p.AllowedOps = []string{DisabledOp}
	}
	p.Caps = policy.Caps{
		MaxReadBytes:   orDefault(f.MaxReadBytes, defaultMaxRead),
		MaxWriteBytes:  orDefault(f.MaxWriteBytes, defaultMaxWrite),
		MaxEntries:     orDefault(f.MaxEntries, defaultMaxEntries),
		MaxWalkDepth:   orDefault(f.MaxDepth, defaultMaxWalkDeep),
		MaxInlineBytes: policy.DefaultInlineBytes,
		MaxForks:       policy.DefaultMaxForks,
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("x07 policy: %w", err)
	}
	return p, nil
}

// DefaultPolicy is the policy of an x07 session that gives none: the x07
// preset (hidden paths denied, symlinks denied, ".." rejected), every
// operation allowed on the whole session. Its caps leave the document's
// limits at zero, so that every call applies the runner's defaults (16 MiB
// reads and writes, 10,000 entries, depth 64), as it does under any policy
// that does not set them.
func (*X07) DefaultPolicy() *policy.Policy {
	p, _ := policy.Preset(policy.PresetX07)
	return p
}

// PolicyOperations implements contract.PolicyOperations: an x07 policy
// allows the document's operations by their own names (read_all_v1, ...,
// caps_pack_v1), which is what DecodePolicy puts in AllowedOps and what
// Call checks; DisabledOp is the one further name, the mark of
// fs.enabled=false. vfsd's tool names are not among them: an x07 session
// runs no vfsd tool.
func (*X07) PolicyOperations() []string {
	return append(toolNames(), DisabledOp)
}

func allowedOps(read, write bool, f *fsPolicy) []string {
	var ops []string
	if read {
		ops = append(ops, opReadAll, opStat)
		if on(f.AllowWalk) {
			ops = append(ops, opListDir)
			if on(f.AllowGlob) {
				ops = append(ops, opWalkGlob)
			}
		}
	}
	if write {
		ops = append(ops, opWriteAll)
		if on(f.AllowMkdir) {
			ops = append(ops, opMkdirs)
		}
		if on(f.AllowRemove) {
			ops = append(ops, opRemoveFile, opRemoveDirAll)
		}
		if on(f.AllowRename) {
			ops = append(ops, opRename)
		}
	}
	// The spec helpers touch nothing; they are always allowed, and keep
	// the list non-empty (an empty list would allow everything).
	return append(ops, opCapsDefault, opCapsPack)
}

// roots maps the runner's allowlist (paths relative to the program's
// working directory) onto session paths: the session root plays the
// working directory.
func roots(field string, in []string) ([]string, error) {
	var out []string
	for i, r := range in {
		s := strings.TrimPrefix(r, "./")
		s = strings.TrimSuffix(s, "/")
		if s == "" || s == "." || r == "/" {
			out = append(out, "/")
			continue
		}
		if hasDotDotSegment(s) {
			return nil, fmt.Errorf("x07 policy: %s[%d] %q climbs with \"..\"; give a path inside the session", field, i, r)
		}
		p, err := vfs.ParsePath(s)
		if err != nil {
			return nil, fmt.Errorf("x07 policy: %s[%d] %q is not a session path: %w", field, i, r, err)
		}
		out = append(out, string(p))
	}
	return out, nil
}

func hasDotDotSegment(s string) bool { return slices.Contains(strings.Split(s, "/"), "..") }

func unknownField(prefix string, m map[string]json.RawMessage, known []string) error {
	var unknown []string
	for k := range m {
		if !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	return fmt.Errorf("x07 policy: unknown field %q; the %s fields are %s", prefix+unknown[0], strings.TrimSuffix(or(prefix, "top-level."), "."),
		strings.Join(known, ", "))
}

func or(a, b string) string {
	if a == "" {
		return b
	}
	return a
}

func isObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}

func typeWord(goType string) string {
	switch {
	case goType == "bool":
		return "true or false"
	case strings.HasPrefix(goType, "uint32"):
		return "an integer from 0 to 4294967295"
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	case goType == "string":
		return "a string"
	}
	return "an object"
}

func on(b *bool) bool { return b != nil && *b }

func orDefault(v *uint32, def uint32) int64 {
	if v == nil || *v == 0 {
		return int64(def)
	}
	return int64(*v)
}
