package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"github.com/vfsd/vfsd/internal/strictjson"
)

// CustomName is the name of a policy decoded from a policy object that
// gives itself none.
const CustomName = "custom"

// Decode reads a policy given as data: a preset's name as a JSON string
// ("x07"), or a policy object, the JSON of a Policy with one more field,
// "base", the preset it starts from (default: "default"). The object's
// fields override the base's, and caps field by field: what it leaves out
// stays as the base has it, so {"read_roots":["src"]} is the default
// preset confined to src, with the default caps; a cap of 0 lifts it.
//
// Decoding is strict: an unknown field, at any depth, is an error that
// names it with its path ("caps.max_scan_files"), so that a field meant to
// restrict the session (another system's name for a root, say) is never
// silently dropped. A wrong type, trailing data and an invalid policy
// (Validate) are errors too. The result is named after the object's
// "name" (which must not be a preset's) or CustomName, and records its
// base in Base.
//
// Allowed operations are checked for being non-empty names only; whether
// they name tools is the caller's business (contract.DecodePolicy checks
// them against vfsd's tools).
func Decode(raw []byte) (*Policy, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, errors.New("the policy is empty; give a preset name (\"x07\") or a policy object ({\"base\":\"default\",\"read_roots\":[\"src\"]})")
	}
	if raw[0] == '"' {
		var name string
		if err := json.Unmarshal(raw, &name); err != nil {
			return nil, fmt.Errorf("the policy is not valid JSON: %w", err)
		}
		return Preset(name)
	}
	var head struct {
		Base string `json:"base"`
		Name string `json:"name"`
	}
	if err := json.NewDecoder(bytes.NewReader(raw)).Decode(&head); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("the policy is not valid JSON: %w", err)
		}
		if raw[0] != '{' {
			return nil, errors.New("the policy must be a JSON object (or a preset's name as a string)")
		}
		// A wrong type in base or name: the strict decoding below names it.
	}
	if raw[0] != '{' {
		return nil, errors.New("the policy must be a JSON object (or a preset's name as a string)")
	}
	base := head.Base
	if base == "" {
		base = PresetDefault
	}
	p, err := Preset(base)
	if err != nil {
		return nil, fmt.Errorf("policy base: %w", err)
	}
	if head.Name != "" && slices.Contains(Presets(), head.Name) {
		return nil, fmt.Errorf("policy name %q is a preset's name; give your policy another name, and %q as its base to start from that preset", head.Name, head.Name)
	}
	if err := decodeStrict(raw, p, "policy"); err != nil {
		return nil, err
	}
	p.Base = base
	if p.Name == "" || p.Name == base {
		p.Name = CustomName
	}
	if err := p.validateData(); err != nil {
		return nil, err
	}
	return p, nil
}

// FromJSON reads a policy in its complete form, the JSON of a Policy as
// json.Marshal writes it (how the daemon persists a session's policy): no
// base is applied, so a field left out is zero. It is as strict as Decode.
func FromJSON(raw []byte) (*Policy, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, errors.New("the policy must be a JSON object")
	}
	p := &Policy{}
	if err := decodeStrict(raw, p, "policy"); err != nil {
		return nil, err
	}
	if err := p.validateData(); err != nil {
		return nil, err
	}
	return p, nil
}

// validateData is Validate plus the checks of policy data.
func (p *Policy) validateData() error {
	for _, op := range p.AllowedOps {
		if strings.TrimSpace(op) == "" {
			return fmt.Errorf("policy %q: allowed_ops has an empty name; list tool names, like read_file", p.Name)
		}
	}
	return p.Validate()
}

// decodeStrict decodes the JSON object raw into v (a pointer to a struct),
// refusing unknown fields with their path and trailing data.
func decodeStrict(raw []byte, v any, what string) error {
	if err := checkFields(raw, reflect.TypeOf(v).Elem(), ""); err != nil {
		return err
	}
	err := strictjson.Decode(raw, v)
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te):
		return fmt.Errorf("%s field %q must be %s, not %s", what, te.Field, kindWords(te.Type), te.Value)
	case errors.Is(err, strictjson.ErrTrailingData):
		return fmt.Errorf("the %s has data after the policy object", what)
	}
	return fmt.Errorf("the %s is not valid JSON: %w", what, err)
}

// checkFields reports the first field of the JSON object raw that struct
// type t has no field for, by its path below prefix, listing the fields t
// has. Objects nested in struct fields are checked likewise; what is not
// an object is left for the decoder to judge.
func checkFields(raw []byte, t reflect.Type, prefix string) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil
	}
	fields := jsonFields(t)
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		ft, ok := fields[k]
		if !ok {
			known := make([]string, 0, len(fields))
			for n := range fields {
				known = append(known, n)
			}
			slices.Sort(known)
			msg := fmt.Sprintf("unknown field %q in the policy", prefix+k)
			if hint, ok := seedFields[k]; ok {
				msg += "; " + hint
			}
			return fmt.Errorf("%s (fields here: %s)", msg, strings.Join(known, ", "))
		}
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			if err := checkFields(obj[k], ft, prefix+k+"."); err != nil {
				return err
			}
		}
	}
	return nil
}

// seedFields points the policy fields of the seed systems' documents at
// vfsd's: they are accepted as such only where a session selects that
// system's contract (contract.DecodePolicy).
var seedFields = map[string]string{
	"fs_roots":              "vfsd calls it read_roots (and write_roots)",
	"allowed_fs_ops":        "vfsd calls it allowed_ops and lists tool names (read_file, grep, ...)",
	"max_scan_files":        "vfsd calls it max_scanned_files",
	"max_scan_bytes":        "vfsd calls it max_scanned_bytes",
	"follow_symlinks":       "vfsd calls it symlinks (deny, within_root_only or allow)",
	"allowed_patch_formats": "vfsd has no such field: apply_patch takes V4A",
}

// jsonFields maps the JSON names of struct type t's fields to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// kindWords names a JSON type for people.
func kindWords(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map, reflect.Pointer:
		return "an object"
	}
	return "a number"
}
