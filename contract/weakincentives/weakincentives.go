// Package weakincentives is the weakincentives contract: the virtual
// filesystem tool suite of weakincentives (weakincentives.tools.vfs) and
// its HostMount, word for word as ../shared/seeds/002_244bc3d0e26fe1a0.txt
// specifies them: the tools list_directory, read_file, write_file and
// delete_file with their dataclass parameters (paths are VfsPath segments)
// and results (FileReadResult{file, content}, the WriteFile and DeleteFile
// echoes, the listing dict), ToolValidationError on every failure, the
// 48,000-character write limit (on decoded bytes for binary writes), the
// 16-segment and 80-character path guards, the seven prompt instructions,
// and host mounts made when the session is created (Mount).
//
// The contract is an adapter over vfsd's engine and tools: it normalises
// and validates the document's parameters, runs the operation through the
// session's tools (bound to its policy: symlink resolution, read and write
// roots, allowed operations), and renders the result in the document's
// shape.
package weakincentives

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/vfsd/vfsd/contract"
	"github.com/vfsd/vfsd/internal/strictjson"
	"github.com/vfsd/vfsd/vfs/policy"
)

// Name is the contract's name.
const Name = "weakincentives"

// ErrorName is the only failure the document names: every tool "raises
// ToolValidationError on failure". It is the Status of every failed call
// and the "error" field of its body.
const ErrorName = "ToolValidationError"

// ToolValidationError is a failed call: the document's exception, carried
// as a result ({"error": "ToolValidationError", "message": ...}).
type ToolValidationError struct {
	Message string
}

func (e *ToolValidationError) Error() string { return e.Message }

// invalid makes a ToolValidationError.
func invalid(format string, args ...any) error {
	return &ToolValidationError{Message: fmt.Sprintf(format, args...)}
}

// ErrorBody is the body of a failed call.
type ErrorBody struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

// Contract is the weakincentives contract.
type Contract struct{}

func init() { contract.Register(Contract{}) }

var (
	_ contract.Contract           = Contract{}
	_ contract.PolicyDecoder      = Contract{}
	_ contract.PolicyDefaulter    = Contract{}
	_ contract.SessionInitializer = Contract{}
	_ contract.SnapshotLifetime   = Contract{}
)

// Name returns "weakincentives".
func (Contract) Name() string { return Name }

// DefaultPolicy is the weakincentives preset: ASCII-only paths of at most
// 16 segments of at most 80 characters, 48,000-character writes, symlinks
// followed within the session.
func (Contract) DefaultPolicy() *policy.Policy {
	p, _ := policy.Preset(policy.PresetWeakIncentives)
	return p
}

// PurgeSnapshotsOnClose is true: the document's snapshots "disappear when
// the session ends". Closing a weakincentives session deletes the
// snapshots taken of it unless the orchestrator closes it with
// ?purge=false, keeping its own snapshot copies ("no state persists across
// conversations beyond the orchestrator's snapshot copies").
func (Contract) PurgeSnapshotsOnClose() bool { return true }

// Call runs one of the four tools.
func (c Contract) Call(ctx context.Context, env *contract.Env, tool string, params json.RawMessage) contract.Result {
	return contract.Guard(func() contract.Result { return c.dispatch(ctx, env, tool, params) },
		func(r any) contract.Result {
			return failure(invalid("Internal error in %s: %v; the virtual filesystem is unchanged.", tool, r))
		})
}

// dispatch is Call's body, run under contract.Guard.
func (c Contract) dispatch(ctx context.Context, env *contract.Env, tool string, params json.RawMessage) contract.Result {
	if err := checkEnv(env); err != nil {
		return failure(err)
	}
	switch tool {
	case "list_directory":
		return run(ctx, env, params, listDirectory)
	case "read_file":
		return run(ctx, env, params, readFile)
	case "write_file":
		return run(ctx, env, params, writeFile)
	case "delete_file":
		return run(ctx, env, params, deleteFile)
	}
	return failure(invalid("Unknown tool %q; the virtual filesystem tools are list_directory, read_file, write_file and delete_file.", tool))
}

// checkEnv is the document's "Tool handlers verify that the
// ToolContext.session supplied at invocation time matches the configured
// session and raise ToolValidationError when adapters attempt to reuse the
// tools with a different session".
func checkEnv(env *contract.Env) error {
	if env == nil || env.Session == nil || env.Tools == nil {
		return invalid("No session is configured for the virtual filesystem tools; create a session first.")
	}
	if env.SessionID != env.Session.ID() || env.Tools.Session() != env.Session {
		return invalid("These tools are bound to session %q, not %q; call the tools of that session.", env.Tools.Session().ID(), env.SessionID)
	}
	return nil
}

// handler runs a tool on decoded parameters and returns its message and
// result value.
type handler[P any] func(ctx context.Context, env *contract.Env, p *P) (string, any, error)

func run[P any](ctx context.Context, env *contract.Env, raw json.RawMessage, h handler[P]) contract.Result {
	var p P
	if err := decodeStrict(raw, &p); err != nil {
		return failure(err)
	}
	msg, value, err := h(ctx, env, &p)
	if err != nil {
		return failure(err)
	}
	body, err := marshal(value)
	if err != nil {
		return failure(invalid("The result did not encode: %v.", err))
	}
	return contract.Result{Body: body, Text: msg + "\n" + string(body), Status: "ok"}
}

// failure renders an error as the document's ToolValidationError.
func failure(err error) contract.Result {
	var tv *ToolValidationError
	if !errors.As(err, &tv) {
		tv = &ToolValidationError{Message: err.Error()}
	}
	body, _ := marshal(ErrorBody{Error: ErrorName, Message: tv.Message})
	return contract.Result{Body: body, Text: ErrorName + ": " + tv.Message, Status: ErrorName, IsError: true}
}

// marshal encodes v without HTML escaping.
func marshal(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// decodeStrict decodes a tool's parameters: unknown fields and trailing
// data are errors that name the problem.
func decodeStrict(raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	err := strictjson.Decode(raw, v)
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te):
		return invalid("Parameter %q must be %s, not %s; see the tool's schema.", te.Field, te.Type.Kind(), te.Value)
	case errors.Is(err, strictjson.ErrTrailingData):
		return invalid("Invalid parameters: data after the JSON object.")
	}
	return invalid("Invalid parameters: %s; see the tool's schema.", strings.TrimPrefix(err.Error(), "json: "))
}

// limitsOf is the guards in force under pol: its caps where it sets them,
// the document's otherwise.
func limitsOf(pol *policy.Policy) limits {
	l := limits{depth: MaxPathDepth, segment: MaxSegmentLength, write: MaxWriteLength}
	if pol == nil {
		return l
	}
	if pol.Caps.MaxDepth > 0 {
		l.depth = pol.Caps.MaxDepth
	}
	if pol.Caps.MaxSegmentLen > 0 {
		l.segment = pol.Caps.MaxSegmentLen
	}
	if pol.Caps.MaxWriteChars > 0 {
		l.write = pol.Caps.MaxWriteChars
	}
	return l
}

// PolicyFields are the policy fields a weakincentives policy object may
// set: the document's guards, under its own words. An unset field keeps
// the document's value.
type PolicyFields struct {
	// MaxWriteLength is the "maximum content length per write":
	// characters of UTF-8 text, decoded bytes of binary content (48,000).
	MaxWriteLength *int64 `json:"max_write_length,omitempty"`
	// MaxPathDepth is the "maximum path depth" in segments (16).
	MaxPathDepth *int64 `json:"max_path_depth,omitempty"`
	// MaxSegmentLength is the "maximum segment length" in characters (80).
	MaxSegmentLength *int64 `json:"max_segment_length,omitempty"`
}

// DecodePolicy turns a weakincentives policy object (PolicyFields) into
// vfsd's policy: the weakincentives preset with the given guards. It is
// strict: an unknown field, a value that is not a positive integer, or
// trailing data is an error naming it.
func (Contract) DecodePolicy(raw json.RawMessage) (*policy.Policy, error) {
	var f PolicyFields
	if err := strictjson.Decode(raw, &f); errors.Is(err, strictjson.ErrTrailingData) {
		return nil, errors.New("weakincentives policy: data after the JSON object")
	} else if err != nil {
		return nil, fmt.Errorf("weakincentives policy: %w; the fields are max_write_length, max_path_depth and max_segment_length", err)
	}
	p, err := policy.Preset(policy.PresetWeakIncentives)
	if err != nil {
		return nil, err
	}
	for _, v := range []struct {
		name string
		val  *int64
		cap  *int64
	}{{"max_write_length", f.MaxWriteLength, &p.Caps.MaxWriteChars},
		{"max_path_depth", f.MaxPathDepth, &p.Caps.MaxDepth},
		{"max_segment_length", f.MaxSegmentLength, &p.Caps.MaxSegmentLen}} {
		if v.val == nil {
			continue
		}
		if *v.val < 1 {
			return nil, fmt.Errorf("weakincentives policy: %s must be a positive integer, not %d", v.name, *v.val)
		}
		*v.cap = *v.val
		p.Name = "custom"
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("weakincentives policy: %w", err)
	}
	return p, nil
}
