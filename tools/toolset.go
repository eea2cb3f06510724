package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/vfsd/vfsd/internal/strictjson"
	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/policy"
)

// Options configure a Toolset.
type Options struct {
	// Policy bounds what the tools may do; nil means policy.Default().
	Policy *policy.Policy
	// Blobs is the store large outputs go to and blob_ref inputs come
	// from; usually the session's (snapshot.Repo.Blobs). Without it,
	// outputs are inline only and blob_ref inputs fail.
	Blobs vfs.BlobStore
	// InlineBytes is the payload size above which output_mode auto returns
	// a blob; zero means the policy's MaxInlineBytes, or 64 KiB.
	InlineBytes int64
	// GrepEngine chooses grep's engine: "rg", "native", or "" (auto:
	// ripgrep when it is on PATH, the native engine otherwise).
	GrepEngine string
	// Checkpoints keeps and restores the session's checkpoints for the
	// checkpoint tools, when the policy allows them (Policy.Checkpoints);
	// nil: they are not available.
	Checkpoints Checkpointer
}

// Toolset is the tools bound to one session.
type Toolset struct {
	s    *vfs.Session
	pol  *policy.Policy
	opts Options
}

// New binds the tools to session s.
func New(s *vfs.Session, opts Options) (*Toolset, error) {
	if s == nil {
		return nil, errors.New("tools: nil session")
	}
	pol := opts.Policy
	if pol == nil {
		pol = policy.Default()
	}
	if err := pol.Validate(); err != nil {
		return nil, fmt.Errorf("tools: %w", err)
	}
	if opts.InlineBytes <= 0 {
		opts.InlineBytes = pol.Caps.MaxInlineBytes
	}
	if opts.InlineBytes <= 0 {
		opts.InlineBytes = policy.DefaultInlineBytes
	}
	return &Toolset{s: s, pol: pol, opts: opts}, nil
}

// Session returns the session the tools are bound to.
func (t *Toolset) Session() *vfs.Session { return t.s }

// Policy returns the policy the tools enforce.
func (t *Toolset) Policy() *policy.Policy { return t.pol }

// Call runs tool name with JSON params on the session sessionID, which must
// be the Toolset's own. It never panics and never returns nil: every
// failure is a receipt.
func (t *Toolset) Call(ctx context.Context, sessionID, name string, params json.RawMessage) (resp *Response) {
	defer func() {
		if r := recover(); r != nil {
			resp = t.failed(name, fail(CodeInternal, "internal error in %s: %v; the session is unchanged", name, r))
		}
	}()
	if sessionID != t.s.ID() {
		return t.failed(name, fail(CodeSessionMismatch,
			"these tools are bound to session %q, not %q; call the tools of that session", t.s.ID(), sessionID))
	}
	if name == ConsolidatedTool {
		action, rest, err := splitConsolidated(params)
		if err != nil {
			return t.failed(name, failureOf(err))
		}
		name, params = action, rest
	}
	tool, ok := lookup(name)
	if !ok {
		return t.failed(name, fail(CodeUnknownTool, "no tool named %q; available: %s", name, strings.Join(Names(), ", ")))
	}
	if !t.pol.Allows(tool.Name) {
		return t.failed(name, fail(CodeForbidden, "%s is not allowed by the %s policy", tool.Name, t.pol.Name))
	}
	r, err := tool.run(ctx, t, params)
	if err != nil {
		return t.failed(name, failureOf(err))
	}
	b := r.base()
	b.Status = StatusOK
	return &Response{Tool: name, Receipt: r, Text: r.text()}
}

// failed turns a failure into a response.
func (t *Toolset) failed(name string, f *Failure) *Response {
	r := &FailureReceipt{Receipt: Receipt{Status: f.Code.Status(), ErrorCode: f.Code, SummaryText: f.Msg}}
	if f.Code.Status() == "" {
		r.Status = StatusError
	}
	if t.pol.NumericCodes {
		r.ErrorNumber = f.Code.Number()
	}
	if d, ok := f.Details.(*Details); ok && d != nil {
		r.Details = *d
	}
	return &Response{Tool: name, Receipt: r, Text: r.SummaryText}
}

// decodeParams decodes a tool's JSON parameters strictly: unknown fields
// and trailing data are invalid_input, naming the problem.
func decodeParams(raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	if err := strictjson.Decode(raw, v); err != nil {
		var te *json.UnmarshalTypeError
		var uf *strictjson.UnknownFieldError
		switch {
		case errors.As(err, &te):
			return fail(CodeInvalidInput, "parameter %q must be %s, not %s", te.Field, jsonKind(te.Type.Kind().String()), te.Value)
		case errors.As(err, &uf):
			return fail(CodeInvalidInput, "unknown field %q; see the tool's schema for its parameters", uf.Field)
		case errors.Is(err, strictjson.ErrTrailingData):
			return fail(CodeInvalidInput, "parameters have data after the JSON object")
		}
		return fail(CodeInvalidInput, "parameters are not a valid JSON object: %v", err)
	}
	return nil
}

func jsonKind(goKind string) string {
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
