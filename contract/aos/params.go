package aos

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Parameters are decoded as the AOS effect types decode them (serde,
// without deny_unknown_fields): the document's fields by name, unknown
// fields ignored (and named in the call's text, so a model sees a typo),
// a wrong type or a missing required field is status error with
// error_code invalid_params. Both documents' names are accepted on every
// effect: 000's offset_bytes/max_bytes/patch/output_mode and 001's
// offset/limit/patch_text and text/bytes content, plus the SDK tool
// argument names the document maps (file_path → path, a plain-string
// patch → inline_text).

// Params are every parameter the two documents name, for all effects.
type Params struct {
	SessionID       *string         `json:"session_id"`
	Path            *string         `json:"path"`
	FilePath        *string         `json:"file_path"`
	OffsetBytes     *int64          `json:"offset_bytes"`
	MaxBytes        *int64          `json:"max_bytes"`
	Offset          *int64          `json:"offset"`
	Limit           *int64          `json:"limit"`
	Encoding        *string         `json:"encoding"`
	OutputMode      *string         `json:"output_mode"`
	Content         json.RawMessage `json:"content"`
	CreateParents   *bool           `json:"create_parents"`
	Mode            *string         `json:"mode"`
	OldString       *string         `json:"old_string"`
	NewString       *string         `json:"new_string"`
	ReplaceAll      *bool           `json:"replace_all"`
	Patch           json.RawMessage `json:"patch"`
	PatchText       *string         `json:"patch_text"`
	PatchFormat     *string         `json:"patch_format"`
	DryRun          *bool           `json:"dry_run"`
	Pattern         *string         `json:"pattern"`
	GlobFilter      *string         `json:"glob_filter"`
	CaseInsensitive *bool           `json:"case_insensitive"`
	MaxResults      *int64          `json:"max_results"`

	// Unknown lists the fields the call gave that no document names.
	Unknown []string `json:"-"`
}

// knownFields are the JSON names of Params.
var knownFields = []string{"session_id", "path", "file_path", "offset_bytes", "max_bytes", "offset", "limit",
	"encoding", "output_mode", "content", "create_parents", "mode", "old_string", "new_string", "replace_all",
	"patch", "patch_text", "patch_format", "dry_run", "pattern", "glob_filter", "case_insensitive", "max_results"}

// ParamError is a parameter the call got wrong: error_code invalid_params
// (or the code it names).
type ParamError struct {
	Code string
	Msg  string
}

func (e *ParamError) Error() string { return e.Code + ": " + e.Msg }

func paramErr(format string, args ...any) *ParamError {
	return &ParamError{Code: "invalid_params", Msg: fmt.Sprintf(format, args...)}
}

// DecodeParams decodes an effect's parameters (a JSON object; empty is
// {}). It never panics.
func DecodeParams(raw json.RawMessage) (*Params, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, paramErr("parameters must be a JSON object: %v", err)
	}
	var p Params
	if err := json.Unmarshal(raw, &p); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, paramErr("parameter %q must be %s, not %s", te.Field, kind(te.Type.Kind().String()), te.Value)
		}
		return nil, paramErr("parameters do not decode: %v", err)
	}
	for k := range fields {
		if !slices.Contains(knownFields, k) {
			p.Unknown = append(p.Unknown, k)
		}
	}
	slices.Sort(p.Unknown)
	if p.Path != nil && p.FilePath != nil && *p.Path != *p.FilePath {
		return nil, paramErr("path and file_path name the same parameter (file_path is the SDK's name for path); give one")
	}
	if p.Path == nil {
		p.Path = p.FilePath
	}
	for name, v := range map[string]*int64{"offset_bytes": p.OffsetBytes, "max_bytes": p.MaxBytes, "offset": p.Offset, "limit": p.Limit, "max_results": p.MaxResults} {
		if v != nil && *v < 0 {
			return nil, paramErr("%s must not be negative", name)
		}
	}
	if p.Offset != nil {
		if p.OffsetBytes != nil && *p.OffsetBytes != *p.Offset {
			return nil, paramErr("offset (process.fs) and offset_bytes (host.fs) are the same byte offset; give one")
		}
		p.OffsetBytes = p.Offset
	}
	if p.Limit != nil {
		if p.MaxBytes != nil && *p.MaxBytes != *p.Limit {
			return nil, paramErr("limit (process.fs) and max_bytes (host.fs) are the same byte count; give one")
		}
		p.MaxBytes = p.Limit
	}
	return &p, nil
}

func kind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "slice":
		return "an array"
	case "struct", "map", "ptr":
		return "an object"
	}
	return "a number"
}

// ContentInput is write_file's content, one of its variants.
type ContentInput struct {
	Text    *string
	Bytes   []byte
	BlobRef string
}

// DecodeContent decodes write_file's content: 000's variants
// {"inline_text":{"text"}}, {"inline_bytes":{"bytes"}},
// {"blob_ref":{"blob_ref"}}; 001's {"text"}, {"bytes"}, {"blob_ref"}; or a
// plain string (the SDK's text argument). Bytes are base64 text or an
// array of numbers 0-255.
func DecodeContent(raw json.RawMessage) (ContentInput, error) {
	var c ContentInput
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return c, paramErr("content is required: {\"inline_text\":{\"text\":\"...\"}}, {\"inline_bytes\":{\"bytes\":\"<base64>\"}} or {\"blob_ref\":{\"blob_ref\":\"blake3:...\"}}")
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return c, paramErr("content: %v", err)
		}
		c.Text = &s
		return c, nil
	}
	var v map[string]json.RawMessage
	if err := json.Unmarshal(raw, &v); err != nil {
		return c, paramErr("content must be an object with one of inline_text, inline_bytes, blob_ref (or text, bytes): %v", err)
	}
	given := 0
	for _, k := range []string{"inline_text", "inline_bytes", "blob_ref", "text", "bytes"} {
		r, ok := v[k]
		if !ok {
			continue
		}
		given++
		var err error
		switch k {
		case "inline_text":
			c.Text, err = wrappedString(r, "text")
		case "text":
			var s string
			err = json.Unmarshal(r, &s)
			c.Text = &s
		case "inline_bytes":
			var inner map[string]json.RawMessage
			if err = json.Unmarshal(r, &inner); err == nil {
				c.Bytes, err = decodeBytes(inner["bytes"])
			}
		case "bytes":
			c.Bytes, err = decodeBytes(r)
		case "blob_ref":
			c.BlobRef, err = blobRefOf(r)
		}
		if err != nil {
			return c, paramErr("content.%s: %v", k, err)
		}
	}
	if given != 1 {
		return c, paramErr("content must have exactly one of inline_text, inline_bytes, blob_ref (or text, bytes); it has %d", given)
	}
	return c, nil
}

// wrappedString decodes {"<field>": "..."}.
func wrappedString(raw json.RawMessage, field string) (*string, error) {
	var inner map[string]*string
	if err := json.Unmarshal(raw, &inner); err != nil {
		return nil, fmt.Errorf("must be {%q: \"...\"}: %v", field, err)
	}
	s, ok := inner[field]
	if !ok || s == nil {
		return nil, fmt.Errorf("must be {%q: \"...\"}", field)
	}
	return s, nil
}

// blobRefOf decodes a blob reference given as "ref" or {"blob_ref":"ref"}.
func blobRefOf(raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return normBlobRef(s), nil
	}
	p, err := wrappedString(raw, "blob_ref")
	if err != nil {
		return "", err
	}
	return normBlobRef(*p), nil
}

// normBlobRef accepts a bare 64-digit hash as vfsd's "blake3:<hash>".
func normBlobRef(s string) string {
	if len(s) == 64 && !strings.Contains(s, ":") {
		return "blake3:" + s
	}
	return s
}

// decodeBytes decodes bytes given as base64 text or as an array of numbers.
func decodeBytes(raw json.RawMessage) ([]byte, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, errors.New(`bytes are required: base64 text, or an array of numbers 0-255`)
	}
	if raw[0] == '[' {
		var nums []int
		if err := json.Unmarshal(raw, &nums); err != nil {
			return nil, fmt.Errorf("bytes must be base64 text or an array of numbers 0-255: %v", err)
		}
		out := make([]byte, len(nums))
		for i, n := range nums {
			if n < 0 || n > 255 {
				return nil, fmt.Errorf("bytes[%d] is %d, not a byte (0-255)", i, n)
			}
			out[i] = byte(n)
		}
		return out, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("bytes must be base64 text or an array of numbers 0-255: %v", err)
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("bytes are not valid base64")
}

// PatchInput is apply_patch's patch: text, or a blob reference.
type PatchInput struct {
	Text    *string
	BlobRef string
}

// DecodePatch decodes apply_patch's patch: 000's variants
// {"inline_text":{"text"}} and {"blob_ref":{"blob_ref"}}, a plain string
// (the SDK's patch argument), or 001's patch_text.
func DecodePatch(p *Params) (PatchInput, error) {
	var in PatchInput
	raw := bytes.TrimSpace(p.Patch)
	has := len(raw) > 0 && string(raw) != "null"
	switch {
	case has && p.PatchText != nil:
		return in, paramErr("give the patch once: patch (host.fs) or patch_text (process.fs)")
	case p.PatchText != nil:
		in.Text = p.PatchText
		return in, nil
	case !has:
		return in, paramErr("patch is required (non-empty): {\"inline_text\":{\"text\":\"*** Begin Patch ...\"}} or {\"blob_ref\":{\"blob_ref\":\"blake3:...\"}}")
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return in, paramErr("patch: %v", err)
		}
		in.Text = &s
		return in, nil
	}
	var v map[string]json.RawMessage
	if err := json.Unmarshal(raw, &v); err != nil {
		return in, paramErr("patch must be {\"inline_text\":{\"text\":...}} or {\"blob_ref\":{\"blob_ref\":...}}: %v", err)
	}
	given := 0
	for _, k := range []string{"inline_text", "blob_ref", "text"} {
		r, ok := v[k]
		if !ok {
			continue
		}
		given++
		var err error
		switch k {
		case "inline_text":
			in.Text, err = wrappedString(r, "text")
		case "text":
			var s string
			err = json.Unmarshal(r, &s)
			in.Text = &s
		case "blob_ref":
			in.BlobRef, err = blobRefOf(r)
		}
		if err != nil {
			return in, paramErr("patch.%s: %v", k, err)
		}
	}
	if given != 1 {
		return in, paramErr("patch must have exactly one of inline_text or blob_ref; it has %d", given)
	}
	return in, nil
}
